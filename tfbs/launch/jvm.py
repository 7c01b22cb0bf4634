"""The JVM options of a launch: the quick compiler where the configuration asks for it, the driver's class archive.

Part of the launch profile (:mod:`tfbs.launch`); the archive itself is
built by :mod:`tfbs.launch.class_archive`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from tfbs.config import SparkConfig
from tfbs.storage.private_dirs import is_own_file

log = logging.getLogger("tfbs.launch")

#: The JVM's quick compiler alone and the serial collector: a JVM whose work
#: is small or in Python processes starts about 1 s sooner on 2 cores
#: (the demo's preprocess 9.8 s to 8.6 s; four training executors ~4 s).
QUICK_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

#: The JVMs ``spark.quick_jvm`` may name; each reads ``spark.<role>.extraJavaOptions``.
JvmRole = Literal["driver", "executor", "yarn.am"]

#: The JVM option that maps a class archive at start-up.
USE_OPTION = "-XX:SharedArchiveFile="
#: The JVM option that dumps the classes loaded, when the JVM exits.
DUMP_OPTION = "-XX:ArchiveClassesAtExit="


def java_options(spark: SparkConfig, extra_conf: Mapping[str, str] | None = None) -> dict[str, str]:
    """The ``spark.<role>.extraJavaOptions`` settings of the configuration, quick options added.

    Each JVM role of ``spark.quick_jvm`` gets :data:`QUICK_JVM_OPTIONS`
    before the options ``spark.conf`` or ``extra_conf`` give it (once:
    options that hold them already are left as they are).

    Parameters
    ----------
    spark
        The configuration's ``spark`` section.
    extra_conf
        A stage's settings on top of the configuration's (``train.placement.spark_conf``).

    Returns
    -------
    dict of str to str
        Only the ``extraJavaOptions`` keys that have a value.

    Examples
    --------
    >>> java_options(SparkConfig(quick_jvm=["driver"]))
    {'spark.driver.extraJavaOptions': '-XX:TieredStopAtLevel=1 -XX:+UseSerialGC'}
    """
    given = {**spark.conf, **(extra_conf or {})}
    options = {key: value for key, value in given.items() if key.endswith(".extraJavaOptions")}
    for role in spark.quick_jvm:
        key = f"spark.{role}.extraJavaOptions"
        own = options.get(key, "")
        if QUICK_JVM_OPTIONS not in own:
            options[key] = f"{QUICK_JVM_OPTIONS} {own}".strip()
    return options


def archive_path(directory: str | os.PathLike[str]) -> Path:
    """Where the class archive for this machine's Java and PySpark lies in ``directory``.

    The name is keyed by the Java binary (its resolved path and
    modification time) and by the path, size and modification time of each
    of PySpark's jars: what a JVM checks before it maps an archive, so a
    reinstalled PySpark or a moved virtualenv gets an archive of its own.
    """
    import pyspark

    java = java_binary()
    key = hashlib.sha256()
    stat = java.stat()
    key.update(f"{java}:{stat.st_size}:{stat.st_mtime_ns}:{pyspark.__version__}".encode())
    for jar in sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar")):
        jar_stat = jar.stat()
        key.update(f"{jar}:{jar_stat.st_size}:{jar_stat.st_mtime_ns}".encode())
    return Path(directory) / f"spark-driver-{key.hexdigest()[:16]}.jsa"


def java_binary() -> Path:
    """The ``java`` PySpark launches: ``$JAVA_HOME/bin/java``, else the one on the PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not found or not Path(found).exists():
        raise FileNotFoundError("no java found (set JAVA_HOME or put java on the PATH)")
    return Path(found).resolve()


def with_archive(java_options: str, directory: str | os.PathLike[str] | None) -> str:
    """``java_options`` plus the archive's option when ``directory`` holds an archive for this machine.

    Parameters
    ----------
    java_options
        The driver's ``spark.driver.extraJavaOptions`` (may be empty).
    directory
        ``spark.class_archive_dir``; None leaves the options as they are.

    Examples
    --------
    >>> with_archive("-XX:+UseSerialGC", None)
    '-XX:+UseSerialGC'
    """
    if directory is None or USE_OPTION in java_options or DUMP_OPTION in java_options:
        return java_options
    try:
        archive = archive_path(directory)
    except FileNotFoundError:
        return java_options
    if not archive.is_file():
        log.info("no class archive at %s (make builds it): the driver JVM starts without one", archive)
        return java_options
    if not is_own_file(archive):
        # The JVM maps the archive's classes into the driver: another user's file would run their code.
        log.warning("class archive %s is not this user's own, or others may write it: the driver starts without it",
                    archive)  # fmt: skip
        return java_options
    return f"{java_options} {USE_OPTION}{archive}".strip()
