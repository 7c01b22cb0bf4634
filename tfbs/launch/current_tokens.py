"""The executor plugin that keeps a YARN container's Hadoop tokens current for its Python processes.

On a secure cluster a container starts with the application's delegation
tokens in the file ``HADOOP_TOKEN_FILE_LOCATION`` names, written once by
YARN. When the driver logs in from a keytab (``--principal/--keytab``, the
DAG's way), Spark obtains fresh tokens before the old ones expire (at 75%
of the renewal interval) and sends them to the executor JVMs and the
application master, which launches later executors with them; nobody
renews those. A Python process of such a container (a TF node streaming
its shards with hdfs-native) kept the token of its launch and failed with
``InvalidToken: Token has expired`` one renewal interval after that token
was issued (24 h by default on a real cluster).

``tfbs/launch/java/CurrentTokensPlugin.java``, a Spark executor plugin, copies the
executor JVM's current tokens to a file beside YARN's whenever they change;
:func:`tfbs.storage.hadoop_conf.use_current_tokens` points the container's Python
HDFS clients at that copy, which hdfs-native reads for each new connection.
:func:`plugin_conf` gives the settings that load it (the YARN launch
profile, :mod:`tfbs.launch`); the jar is compiled against this PySpark's
jars on first use and kept under the user's cache folder.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from tfbs.storage.private_dirs import is_own_file

#: The plugin's class, for ``spark.plugins``.
PLUGIN_CLASS = "tfbs.jvm.CurrentTokensPlugin"
#: Its source, shipped with the package.
SOURCE = Path(__file__).resolve().parent / "java" / "CurrentTokensPlugin.java"


def cache_dir() -> Path:
    """Where compiled jars are kept: ``$XDG_CACHE_HOME/tfbs/jvm`` (default ``~/.cache/tfbs/jvm``)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tfbs" / "jvm"


def _javac() -> str:
    """The JDK's compiler: ``$JAVA_HOME/bin/javac``, else the one on the PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "javac") if home else shutil.which("javac")
    if not found or not Path(found).exists():
        raise FileNotFoundError(
            "javac not found: the YARN launch profile compiles its executor plugin (tfbs/launch/java/); "
            "install a JDK 17 (make does: scripts/system_deps.sh) or set JAVA_HOME to one"
        )
    return found


def plugin_jar(directory: Path | None = None) -> Path:
    """The plugin's jar, compiled against this PySpark's jars unless it is there already.

    Its name is keyed by the source and PySpark's version, so an upgrade of
    either compiles a new one. Written under a temporary name and renamed,
    so a concurrent launch never ships half a jar.

    Raises
    ------
    FileNotFoundError
        When no ``javac`` is found.
    subprocess.CalledProcessError
        When the compiler fails (its output in the exception).
    """
    import pyspark

    directory = directory or cache_dir()
    source = SOURCE.read_bytes()
    key = hashlib.sha256(source + pyspark.__version__.encode()).hexdigest()[:16]
    jar = directory / f"tfbs-current-tokens-{key}.jar"
    # Every executor of the run loads this jar: one another user could have
    # put there, or could replace, would run their code with this user's tokens.
    if jar.is_file() or jar.is_symlink():
        if not is_own_file(jar):
            raise PermissionError(
                f"{jar}: not this user's own file, or writable by others (its folder too): "
                "remove it (it is compiled again)"
            )
        return jar
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not directory.is_dir() or directory.is_symlink() or directory.stat().st_uid != os.geteuid():
        raise PermissionError(f"{directory}: not a folder of this user's: remove it, or set XDG_CACHE_HOME")
    spark_jars = Path(pyspark.__file__).parent / "jars"
    with tempfile.TemporaryDirectory(dir=directory) as build:
        classes = Path(build) / "classes"
        command = [_javac(), "--release", "17", "-cp", f"{spark_jars}/*", "-d", str(classes), str(SOURCE)]
        subprocess.run(command, check=True, capture_output=True, text=True)
        partial = Path(build) / jar.name
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(classes.rglob("*.class")):
                archive.write(path, path.relative_to(classes).as_posix())
        os.replace(partial, jar)
    return jar


def plugin_conf() -> dict[str, str]:
    """The Spark settings that load the plugin: its jar for the driver and executors, and the class.

    A ``spark-submit`` given ``--jars`` as well drops ``spark.jars``: put the
    plugin's jar in that list too.
    """
    return {"spark.jars": str(plugin_jar()), "spark.plugins": PLUGIN_CLASS}
