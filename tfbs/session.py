"""Building the Spark session every job runs in."""

from __future__ import annotations

import logging
import os
import secrets
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

from tfbs.config import SparkConfig
from tfbs.errors import ConfigError
from tfbs.interrupts import note_interrupts, raise_if_interrupted
from tfbs.launch import (
    AUTH_SECRET,
    LOCAL_ENV,
    SECRET_FILE_ENV,
    SESSION_SECRETS,
    insecure_settings,
    java_options,
    network_conf,
    with_archive,
    yarn_conf,
)
from tfbs.spark_master import spark_master
from tfbs.web_ui import UI_FILTER, private_ui_conf, save_token, token_path


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

    Notes
    -----
    The master decides the network policy (:func:`tfbs.launch.network_conf`): on one
    machine every Spark service listens on ``127.0.0.1`` only
    (``SPARK_LOCAL_IP`` is set in this process's environment for that); on
    YARN Spark authenticates and encrypts its connections.
    """
    app_name = f"{spark.app_name}{app_suffix}"
    builder = SparkSession.builder.appName(app_name)
    network: dict[str, str] = {}
    ui_token = ""
    # The JVM options of the launch profile (spark.quick_jvm); the driver's also maps the class archive below.
    jvm_options = java_options(spark, extra_conf)
    driver_options = jvm_options.get("spark.driver.extraJavaOptions", "")
    # Under spark-submit the JVM is already up (PYSPARK_GATEWAY_PORT is set)
    # and its --master must win over the configuration file; the submitter
    # sets its network policy (scripts/submit_yarn.sh), but no command line
    # may carry a secret: on one machine (the DAG's local deployment) the
    # session adds the policy's secrets itself, and what the submitter left
    # unset of the rest.
    # The master this process chooses: none under spark-submit, whose own wins.
    chosen: dict[str, str] = {}
    submitted = _submitted_conf()
    chosen_master = submitted.get("spark.master", "") if submitted else master or spark.master
    where = spark_master(chosen_master)
    if not submitted or where.one_machine:
        network = yarn_conf() if where.yarn else network_conf(chosen_master)
        if not where.yarn:
            # One machine: a secret of this session's own. A standalone cluster: the one its
            # master and workers know, or none (then refused below, naming the setting).
            secret = secrets.token_hex(32) if where.one_machine else cluster_secret(os.environ)
            if secret:
                network[AUTH_SECRET] = secret
            ui_conf, ui_token = private_ui_conf(app_name)
            network.update(ui_conf)
        network = {key: value for key, value in network.items() if key not in submitted}
    if not submitted:
        chosen = {"spark.master": chosen_master}
        builder = builder.master(chosen_master)
        if where.one_machine:
            # Read by the JVM at start-up, and inherited by executor JVMs,
            # PySpark workers and TF nodes (tf_models.tfos.tfos_patches).
            os.environ.update(LOCAL_ENV)
        if where.kind == "local-cluster" and scratch_dir:
            os.environ["SPARK_HOME"] = _local_cluster_home(scratch_dir)
        # Only a driver started from here can map the class archive.
        driver_options = with_archive(driver_options, spark.class_archive_dir)
    # Executors must run the same interpreter (the project's virtualenv) as
    # the driver, or they import a different, incomplete set of packages.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = builder.config("spark.ui.showConsoleProgress", "true")
    settings = {**network, **spark.conf, **(extra_conf or {}), **jvm_options}
    if driver_options:
        settings["spark.driver.extraJavaOptions"] = driver_options
    for key, value in settings.items():
        builder = builder.config(key, value)
    _check_security({**submitted, **settings, **chosen}, spark.allow_insecure)
    if AUTH_SECRET in settings and SparkContext._gateway is None:
        # pyspark starts the JVM with every setting given so far on its command
        # line, which any user may read: start it without the secrets, which then
        # go through py4j. A local-cluster's executors get Spark's from their
        # worker in their environment, never on a command line either.
        launch = {key: value for key, value in {**settings, **chosen}.items() if key not in SESSION_SECRETS}
        SparkContext._ensure_initialized(conf=SparkConf(loadDefaults=False).setAll(list(launch.items())))
    session = builder.getOrCreate()
    sc = session.sparkContext
    if ui_token and sc.uiWebUrl and sc.getConf().get("spark.ui.filters") == UI_FILTER:
        logging.getLogger("tfbs").info(
            "Spark web UI at %s, private to this run: send 'Authorization: Bearer <token>', the token in %s",
            sc.uiWebUrl,
            save_token(ui_token, sc.applicationId),
        )
    return session


def _submitted_conf() -> dict[str, str]:
    """What ``spark-submit`` set for this driver (its ``--master``, ``--conf``...), or nothing outside it."""
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return {}
    SparkContext._ensure_initialized()  # connects to spark-submit's JVM, whose properties SparkConf reads
    return dict(SparkConf().getAll())


def cluster_secret(env: Mapping[str, str]) -> str | None:
    """The shared secret of a standalone cluster, from the file ``env[TFBS_SPARK_SECRET_FILE]`` names.

    The file must be this user's and readable by no one else: a secret
    others can read (or replace) lets them join the cluster's applications.

    Parameters
    ----------
    env
        The environment (:data:`tfbs.launch.SECRET_FILE_ENV`).

    Returns
    -------
    str or None
        The secret, stripped of surrounding white space; None when the variable is unset.

    Raises
    ------
    ConfigError
        The file is missing, empty, not this user's or open to others.
    """
    named = env.get(SECRET_FILE_ENV)
    if not named:
        return None
    path = Path(named)
    try:
        status = path.stat()
        secret = path.read_text().strip()
    except OSError as err:
        raise ConfigError(f"{SECRET_FILE_ENV}: {path}: cannot read the cluster's secret ({err.strerror})") from None
    if status.st_uid != os.getuid() or status.st_mode & 0o077:
        raise ConfigError(
            f"{SECRET_FILE_ENV}: {path}: the cluster's secret must be yours and private "
            f"(owner uid {status.st_uid}, mode {status.st_mode & 0o777:o}): chmod 600 it"
        )
    if not secret:
        raise ConfigError(f"{SECRET_FILE_ENV}: {path}: empty, no secret in it")
    return secret


def _check_security(conf: Mapping[str, str], allow_insecure: bool) -> None:
    """Refuse a session whose network protection is weaker than its master's policy, unless the configuration allows it.

    Checked on the settings the session is about to start with, whoever set
    them: the job itself, ``spark-submit``'s options, a DAG's
    ``tfbs_spark_conf`` Variable (:func:`tfbs.launch.insecure_settings`).
    Before it starts, as Spark refuses some combinations (encryption
    without authentication) with an error of its own. With
    ``spark.allow_insecure`` every session (so every stage) logs a warning
    naming the settings instead.

    Raises
    ------
    ConfigError
        If a setting weakens the policy and ``spark.allow_insecure`` is not set.
    """
    master = conf.get("spark.master") or ""
    weak = insecure_settings(conf)
    if not weak:
        return
    named = ", ".join(weak)
    if allow_insecure:
        logging.getLogger("tfbs").warning(
            "Spark on %s with %s (spark.allow_insecure): others on the network may join, read or alter this run",
            master or "this master",
            named,
        )
        return
    if spark_master(master).yarn:
        raise ConfigError(
            f"spark.conf: {named} off on YARN: other tenants could join or read this application; "
            "set it true, or set spark.allow_insecure: true to run anyway"
        )
    if AUTH_SECRET in weak:
        raise ConfigError(
            f"{named}: {master} needs the secret its master and workers were started with: set "
            f"{SECRET_FILE_ENV} to the file holding it (make cluster-up prints it), "
            "or set spark.allow_insecure: true to run anyway"
        )
    raise ConfigError(
        f"{named}: opens this run on {master} to anyone on the network (they could join, read or alter it); "
        "remove the setting, or set spark.allow_insecure: true to run anyway"
    )


@contextmanager
def spark_session(
    spark: SparkConfig,
    master: str | None = None,
    app_suffix: str = "",
    extra_conf: dict[str, str] | None = None,
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
    session = build_session(spark, master, app_suffix, extra_conf, scratch_dir)
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
