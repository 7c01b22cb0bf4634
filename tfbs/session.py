"""Building the Spark session every job runs in."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pyspark.sql import SparkSession

from tfbs.config import SparkConfig


def _local_cluster_home(scratch_dir: str) -> str:
    """A SPARK_HOME of links into the pip pyspark package, under ``scratch_dir``.

    ``local-cluster`` executors work and log in ``$SPARK_HOME/work`` (it
    ignores SPARK_WORKER_DIR); with pip's pyspark that is inside the
    virtualenv. Pointing SPARK_HOME at this folder puts the executors' logs
    with the run instead.
    """
    import pyspark

    package = Path(pyspark.__file__).parent
    home = Path(scratch_dir) / "spark-home"
    home.mkdir(parents=True, exist_ok=True)
    for name in ("bin", "sbin", "jars", "python", "conf"):
        link = home / name
        if (package / name).exists() and not link.exists():
            link.symlink_to(package / name)
    return str(home)


def build_session(
    spark: SparkConfig,
    master: str | None = None,
    app_suffix: str = "",
    extra_conf: dict[str, str] | None = None,
    scratch_dir: str | None = None,
) -> SparkSession:
    """Create (or reuse) the Spark session described by ``spark``.

    Parameters
    ----------
    spark
        The configuration's ``spark`` section.
    master
        Overrides ``spark.master`` (training asks for a ``local-cluster``
        in the demo so ps and workers get executors of their own). Under
        ``spark-submit`` the master given on its command line wins.
    app_suffix
        Appended to the application name, e.g. the stage.
    extra_conf
        Settings the stage needs on top of the configuration's.
    scratch_dir
        Local folder for a ``local-cluster``'s executor work and log folders.
    """
    builder = SparkSession.builder.appName(f"{spark.app_name}{app_suffix}")
    # Under spark-submit the JVM is already up (PYSPARK_GATEWAY_PORT is set)
    # and its --master must win over the configuration file.
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        chosen = master or spark.master
        builder = builder.master(chosen)
        if chosen.startswith("local-cluster") and scratch_dir:
            os.environ["SPARK_HOME"] = _local_cluster_home(scratch_dir)
    # Executors must run the same interpreter (the project's virtualenv) as
    # the driver, or they import a different, incomplete set of packages.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = builder.config("spark.ui.showConsoleProgress", "true")
    for key, value in {**spark.conf, **(extra_conf or {})}.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
