"""Building the Spark session every job runs in."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

from tfbs.config import SparkConfig


def build_session(spark: SparkConfig, master: str | None = None, app_suffix: str = "") -> SparkSession:
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
    """
    builder = SparkSession.builder.appName(f"{spark.app_name}{app_suffix}")
    # Under spark-submit the JVM is already up (PYSPARK_GATEWAY_PORT is set)
    # and its --master must win over the configuration file.
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        builder = builder.master(master or spark.master)
    # Executors must run the same interpreter (the project's virtualenv) as
    # the driver, or they import a different, incomplete set of packages.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = builder.config("spark.ui.showConsoleProgress", "true")
    for key, value in spark.conf.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
