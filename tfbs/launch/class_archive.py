"""A class-data sharing archive of the Spark driver's classes: each driver JVM starts seconds sooner.

A Spark driver loads and verifies some 5,000 Spark and Scala classes from
its jars before the first task can run: about 2 of its 4-5 s of start-up on
2 cores, paid by every job, every test that starts a session and every
Airflow task. Java 17 can dump the classes a run loaded into an archive
(``-XX:ArchiveClassesAtExit``) that later JVMs map instead
(``-XX:SharedArchiveFile``); a driver then starts in about 2 s.

The archive is built once, by a small Spark run (``python -m
tfbs.launch.class_archive --config conf/demo.yaml``, which ``make`` runs), into the
configuration's ``spark.class_archive_dir``, under a name keyed by the Java
binary and the PySpark jars (:func:`tfbs.launch.archive_path`), so an
upgrade of either builds a new one instead of using the old. A JVM that cannot use an archive (another
classpath, say) warns once and starts without it: the archive is only ever
a speed-up. The launch profile maps it (:func:`tfbs.launch.with_archive`):
drivers that PySpark starts (``tfbs <stage>``, the tests) get it from the
configuration, and so do their ``local-cluster``'s executors (the same Java
and jars, on this machine, as this user); under ``spark-submit`` the driver JVM is up before the job's
configuration is read, so the submitter passes the ``--conf`` arguments
``python -m tfbs.launch --deploy local`` prints (the DAG does).
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

from tfbs.launch import DUMP_OPTION, StageNeeds, archive_path, java_options
from tfbs.storage.private_dirs import is_own_file

log = logging.getLogger("tfbs.launch.class_archive")


def build_archive(directory: str | os.PathLike[str], java_options: str = "") -> Path:
    """Build the archive in ``directory`` by one small Spark run, unless it is there already.

    The run reads and writes a little Parquet and runs a Python task, so
    the classes of the SQL, Parquet and Python paths are in it too. The JVM
    writes the archive as it exits; it is written under a temporary name
    and renamed once the JVM has gone, so no driver maps a half-written one.

    Parameters
    ----------
    directory
        ``spark.class_archive_dir``.
    java_options
        The driver's other JVM options, as the jobs start it.

    Returns
    -------
    Path
        The archive.
    """
    archive = archive_path(directory)
    if archive.is_file():
        if not is_own_file(archive):
            # with_archive would not map it (it could hold another user's classes): say so now.
            raise PermissionError(f"{archive}: not this user's own file, or writable by others: remove it")
        log.info("class archive %s is there already", archive)
        return archive
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = archive.with_name(f".{archive.name}.{uuid.uuid4().hex[:8]}")
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "tfbs.launch.class_archive", "--dump-to", str(partial), "--java-options", java_options],
        check=True,
    )
    if not partial.is_file():
        raise RuntimeError(f"the JVM wrote no class archive to {partial}")
    partial.replace(archive)
    log.info("class archive %s built in %.1f s", archive, time.monotonic() - started)
    for stale in archive.parent.glob("spark-driver-*.jsa"):
        if stale != archive:  # another Java's or PySpark's, 180 MB each
            stale.unlink()
            log.info("removed the class archive of a previous Java or PySpark: %s", stale)
    return archive


def _dump(partial: Path, java_options: str) -> None:
    """The archiving run itself: a session whose JVM dumps its classes at exit, then that exit."""
    import tempfile

    from pyspark import SparkContext

    from tfbs.config import SparkConfig
    from tfbs.launch.session import build_session

    # -Xlog: without it the JVM lists every class it cannot archive (signed jars, old class files).
    options = f"{java_options} {DUMP_OPTION}{partial} -Xlog:cds=off -Xlog:cds+dynamic=off".strip()
    # The options given are the whole driver's: no quick_jvm on top, no archive to map.
    plain = SparkConfig(master="local[1]", app_name="tfbs-class-archive", class_archive_dir=None, quick_jvm=[])
    spark = build_session(plain, needs=StageNeeds(web_ui=False, driver_java_options=options))
    with tempfile.TemporaryDirectory(prefix="tfbs-class-archive-") as scratch:
        spark.range(100).selectExpr("id", "id % 7 AS k").write.parquet(f"{scratch}/t")
        spark.read.parquet(f"{scratch}/t").groupBy("k").count().collect()
        spark.sparkContext.parallelize(range(100), 2).map(lambda x: x * 2).sum()
    gateway = SparkContext._gateway
    spark.stop()
    # The JVM exits when its standard input closes; the archive is complete once it has.
    process = gateway.proc  # type: ignore[union-attr]
    process.stdin.close()
    process.wait(timeout=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--config", help="a pipeline configuration: builds into its spark.class_archive_dir")
    parser.add_argument("--dump-to", help=argparse.SUPPRESS)
    parser.add_argument("--java-options", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.dump_to:
        _dump(Path(args.dump_to), args.java_options)
        return 0
    from tfbs.config import load_config

    spark = load_config(args.config).spark
    if spark.class_archive_dir is None:
        log.info("%s sets no spark.class_archive_dir: nothing to build", args.config)
        return 0
    build_archive(spark.class_archive_dir, java_options(spark).get("spark.driver.extraJavaOptions", ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
