"""Building the Spark session every job runs in."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

from tfbs.config import SparkConfig
from tfbs.interrupts import note_interrupts, raise_if_interrupted
from tfbs.launch import StageNeeds, launch_profile
from tfbs.launch.web_ui import UI_FILTER, save_token, token_path


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
    needs: StageNeeds | None = None,
    scratch_dir: str | None = None,
) -> SparkSession:
    """Create (or reuse) the Spark session described by ``spark``, with its launch profile.

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
    needs
        What the stage asks of Spark (:class:`tfbs.launch.StageNeeds`).
    scratch_dir
        Local folder for a ``local-cluster``'s executor work and log folders.

    Notes
    -----
    Every setting comes from :func:`tfbs.launch.launch_profile`: on one
    machine every Spark service listens on ``127.0.0.1`` only
    (``SPARK_LOCAL_IP`` is set in this process's environment for that); on
    YARN Spark authenticates and encrypts its connections.
    """
    app_name = f"{spark.app_name}{app_suffix}"
    submitted = _submitted_conf()
    profile = launch_profile(spark, master, needs, app_name=app_name, submitted=submitted or None)
    os.environ.update(profile.env)
    if not submitted and profile.master.kind == "local-cluster" and scratch_dir:
        os.environ["SPARK_HOME"] = _local_cluster_home(scratch_dir)
    # Executors must run the same interpreter (the project's virtualenv) as
    # the driver, or they import a different, incomplete set of packages.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    for key, value in profile.conf.items():
        builder = builder.config(key, value)
    if profile.secret_keys and SparkContext._gateway is None:
        # pyspark starts the JVM with every setting given so far on its command
        # line, which any user may read: start it without the secrets, which then
        # go through py4j. A local-cluster's executors get Spark's from their
        # worker in their environment, never on a command line either.
        SparkContext._ensure_initialized(conf=SparkConf(loadDefaults=False).setAll(list(profile.public_conf().items())))
    session = builder.getOrCreate()
    sc = session.sparkContext
    if profile.ui_token and sc.uiWebUrl and sc.getConf().get("spark.ui.filters") == UI_FILTER:
        logging.getLogger("tfbs").info(
            "Spark web UI at %s, private to this run: send 'Authorization: Bearer <token>', the token in %s",
            sc.uiWebUrl,
            save_token(profile.ui_token, sc.applicationId),
        )
    return session


def _submitted_conf() -> dict[str, str]:
    """What ``spark-submit`` set for this driver (its ``--master``, ``--conf``...), or nothing outside it."""
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return {}
    SparkContext._ensure_initialized()  # connects to spark-submit's JVM, whose properties SparkConf reads
    return dict(SparkConf().getAll())


@contextmanager
def spark_session(
    spark: SparkConfig,
    master: str | None = None,
    app_suffix: str = "",
    needs: StageNeeds | None = None,
    scratch_dir: str | None = None,
) -> Iterator[SparkSession]:
    """:func:`build_session` for one stage: the session stops when the block ends.

    Stopping in every case (an error, Ctrl-C) ends the executors and their
    TensorFlow nodes with the stage instead of leaving them to the JVM's exit.
    A SIGINT is remembered (:mod:`tfbs.interrupts`): whatever swallowed its
    ``KeyboardInterrupt``, no output is published after it and the block
    ends by raising one.

    Used as ``with spark_session(config.spark, app_suffix="-evaluate") as spark:``.
    """
    fresh = SparkContext._active_spark_context is None  # else getOrCreate lends a running one, and its token
    session = build_session(spark, master, app_suffix, needs, scratch_dir)
    # After the session: PySpark's own SIGINT handler is installed by then.
    note_interrupts()
    try:
        yield session
        # A Ctrl-C that a finalizer swallowed still fails the stage.
        raise_if_interrupted(f"the output of {spark.app_name}{app_suffix}")
    finally:
        app_id = session.sparkContext.applicationId
        session.stop()
        if fresh:
            token_path(app_id).unlink(missing_ok=True)


@contextmanager
def stage_progress(
    spark: SparkSession, what: str, parts: int, units_per_part: int, unit: str, every_s: float = 10.0
) -> Iterator[None]:
    """Log the progress of the Spark jobs the block runs, every ``every_s`` seconds, with rates.

    Counts the finished tasks of the block's stage of ``parts`` tasks (one
    task per part), as Spark's status tracker reports them, e.g.
    ``predict: 12/40 parts, ~2,400,000 bins, 3,120 bins/s``.

    Parameters
    ----------
    spark
        The session whose jobs the block runs.
    what
        What the log lines name.
    parts, units_per_part, unit
        The stage's task count and what one task handles (at most).
    every_s
        Seconds between log lines.
    """
    log = logging.getLogger(f"tfbs.{what}")
    sc = spark.sparkContext
    group = f"tfbs-{what}-{uuid.uuid4().hex[:8]}"
    sc.setJobGroup(group, what)
    stopped = threading.Event()
    started = time.monotonic()

    def done_parts() -> int:
        tracker = sc.statusTracker()
        done = 0
        for job_id in tracker.getJobIdsForGroup(group):
            job = tracker.getJobInfo(job_id)
            for stage_id in job.stageIds if job else ():
                stage = tracker.getStageInfo(stage_id)
                if stage is not None and stage.numTasks == parts:
                    done = max(done, stage.numCompletedTasks)
        return done

    def report() -> None:
        while not stopped.wait(every_s):
            done = done_parts()
            units = min(done * units_per_part, parts * units_per_part)
            rate = units / max(time.monotonic() - started, 1e-9)
            log.info("%s: %d/%d parts, ~%s %s, %s %s/s", what, done, parts, f"{units:,}", unit, f"{rate:,.0f}", unit)

    reporter = threading.Thread(target=report, name=f"{group}-progress", daemon=True)
    reporter.start()
    try:
        yield
    finally:
        stopped.set()
        reporter.join()
        sc._jsc.clearJobGroup()  # later jobs of a shared session belong to no group (PySpark has no wrapper)
        log.info("%s: %d parts in %.1f s", what, parts, time.monotonic() - started)
