"""A stage's needs and the whole launch profile: what a session or a ``spark-submit`` starts with."""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field

from tfbs.config import DEFAULT_GPU_DISCOVERY_SCRIPT, SparkConfig
from tfbs.launch.jvm import java_options, with_archive
from tfbs.launch.policy import (
    AUTH_SECRET,
    LOCAL_ENV,
    SESSION_SECRETS,
    check_security,
    cluster_secret,
    network_conf,
    yarn_conf,
)
from tfbs.launch.web_ui import UI_FILTER, UI_KEY, ui_key_and_token
from tfbs.spark_master import Deploy, SparkMaster, spark_master

#: Spark's name of the GPUs it schedules (``spark.executor.resource.gpu.*``); YARN's is ``yarn.io/gpu``.
GPU_RESOURCE = "gpu"


@dataclass(frozen=True)
class StageNeeds:
    """What a stage asks of Spark, in its own words; :func:`stage_conf` writes the settings.

    Attributes
    ----------
    executors : int or None
        Executors of the application, each one task at a time (a TF node);
        None: the cluster manager's own sizing.
    cores_per_executor : int
        Cores of each of those executors, all for its one task.
    fixed_executors : bool
        No dynamic allocation: the executors the stage starts with are its own to the end.
    task_attempts : int or None
        Attempts of a task before its stage fails (None: Spark's default, 4).
    gpus_per_executor : int
        GPUs of each executor, all for its one task.
    gpu_discovery_script : str
        The script that finds an executor's GPUs (with ``gpus_per_executor``).
    web_ui : bool
        False: no web UI (a run no one looks at, such as the class archive's).
    driver_java_options : str
        More options of the driver's JVM (after the configuration's).
    conf : mapping of str to str
        The stage's own settings from the configuration (``train.placement.spark_conf``),
        under the settings above.
    """

    executors: int | None = None
    cores_per_executor: int = 1
    fixed_executors: bool = False
    task_attempts: int | None = None
    gpus_per_executor: int = 0
    gpu_discovery_script: str = ""
    web_ui: bool = True
    driver_java_options: str = ""
    conf: Mapping[str, str] = field(default_factory=dict)


def stage_conf(needs: StageNeeds) -> dict[str, str]:
    """The Spark settings of a stage's needs.

    Executors: every cluster manager reads its own, YARN
    ``spark.executor.instances``, a standalone master (and ``local-cluster``)
    ``spark.cores.max``, which its workers fill with ``spark.executor.cores``
    each (left unsized, a standalone master gives one executor per worker
    with all its cores). GPUs: the task takes all of its executor's; Spark
    requests ``gpu`` from YARN as ``yarn.io/gpu`` by itself.

    Examples
    --------
    >>> stage_conf(StageNeeds(executors=3, cores_per_executor=2))["spark.cores.max"]
    '6'
    >>> stage_conf(StageNeeds(task_attempts=1, conf={"spark.executor.memory": "2g"}))
    {'spark.executor.memory': '2g', 'spark.task.maxFailures': '1'}
    """
    settings = dict(needs.conf)
    if needs.executors is not None:
        cores = needs.cores_per_executor
        settings |= {
            "spark.executor.instances": str(needs.executors),
            "spark.executor.cores": str(cores),
            "spark.cores.max": str(needs.executors * cores),
            "spark.task.cpus": str(cores),
        }
    if needs.gpus_per_executor:
        amount = str(needs.gpus_per_executor)
        settings |= {
            f"spark.executor.resource.{GPU_RESOURCE}.amount": amount,
            f"spark.executor.resource.{GPU_RESOURCE}.discoveryScript": needs.gpu_discovery_script,
            f"spark.task.resource.{GPU_RESOURCE}.amount": amount,
        }
    if needs.task_attempts is not None:
        settings["spark.task.maxFailures"] = str(needs.task_attempts)
    if needs.fixed_executors:
        settings["spark.dynamicAllocation.enabled"] = "false"
    if not needs.web_ui:
        settings["spark.ui.enabled"] = "false"
    return settings


@dataclass(frozen=True)
class LaunchProfile:
    """Everything a Spark application of the pipeline starts with.

    Attributes
    ----------
    master : SparkMaster
        Where it runs.
    conf : dict of str to str
        Every setting (``spark.master`` among them when the profile chose it).
    env : dict of str to str
        What the environment of the process that starts the driver's JVM must hold, set before it starts.
    secret_keys : frozenset of str
        The keys of ``conf`` no command line may carry: the JVM gets them through py4j.
    ui_token : str
        The bearer token that opens the web UIs (:mod:`tfbs.launch.web_ui`); "" when no key was drawn.
    archives : str or None
        A ``spark-submit``'s ``--archives``: the packed environment as ``<tar.gz>#<alias>`` (YARN).
    files : tuple of str
        A ``spark-submit``'s ``--files``, comma-joined on its command line.
    """

    master: SparkMaster
    conf: dict[str, str]
    env: dict[str, str] = field(default_factory=dict)
    secret_keys: frozenset[str] = frozenset()
    ui_token: str = ""
    archives: str | None = None
    files: tuple[str, ...] = ()

    def public_conf(self) -> dict[str, str]:
        """``conf`` without its secrets: what a JVM's command line may show."""
        return {key: value for key, value in self.conf.items() if key not in self.secret_keys}


def launch_profile(
    spark: SparkConfig,
    master: str | None = None,
    needs: StageNeeds | None = None,
    *,
    app_name: str = "",
    submitted: Mapping[str, str] | None = None,
) -> LaunchProfile:
    """The profile of a session about to start: the master's network policy, the stage's needs, ``spark.conf``.

    Parameters
    ----------
    spark
        The configuration's ``spark`` section.
    master
        Overrides ``spark.master`` (training's own ``local-cluster``).
    needs
        What the stage asks of Spark.
    app_name
        Who the web UIs' token names.
    submitted
        What ``spark-submit`` set for a driver it started (its ``--master``
        wins): the submitter gave its network policy (scripts/submit_yarn.sh),
        but no command line may carry a secret, so on one machine (the DAG's
        local deployment) the profile adds the policy's secrets, and what
        the submitter left unset of the rest. None: this process starts the
        JVM, which then also maps the class archive.

    Raises
    ------
    ConfigError
        If a setting weakens the master's policy (:func:`check_security`),
        or a standalone cluster's secret file cannot be used (:func:`cluster_secret`).
    """
    needs = needs or StageNeeds()
    given = dict(submitted or {})
    where = spark_master(given.get("spark.master") or master or spark.master)
    network: dict[str, str] = {}
    ui_token = ""
    if not given or where.one_machine:
        network = yarn_conf() if where.yarn else network_conf(where.url)
        if not where.yarn:
            # One machine: a secret of this session's own. A standalone cluster: the one its
            # master and workers know, or none (then refused below, naming the setting).
            secret = secrets.token_hex(32) if where.one_machine else cluster_secret(os.environ)
            if secret:
                network[AUTH_SECRET] = secret
            if needs.web_ui:
                ui_key, ui_token = ui_key_and_token(app_name)
                network |= {"spark.ui.filters": UI_FILTER, UI_KEY: ui_key}
        network = {key: value for key, value in network.items() if key not in given}
    jvm = java_options(spark, needs.conf)
    driver = f"{jvm.get('spark.driver.extraJavaOptions', '')} {needs.driver_java_options}".strip()
    if not given:
        driver = with_archive(driver, spark.class_archive_dir)  # only a driver started from here can map it
        if where.kind == "local-cluster":
            # Its executor JVMs run the driver's Java and jars as the driver's user, on this machine: the
            # archive maps in them too (bench/results/cluster_start.json). Other executors may not.
            executor = with_archive(jvm.get("spark.executor.extraJavaOptions", ""), spark.class_archive_dir)
            if executor:
                jvm["spark.executor.extraJavaOptions"] = executor
    conf = {"spark.ui.showConsoleProgress": "true", **network, **spark.conf, **stage_conf(needs), **jvm}
    if driver:
        conf["spark.driver.extraJavaOptions"] = driver
    if not given:
        conf["spark.master"] = where.url
    check_security({**given, **conf}, spark.allow_insecure)
    # Read by the JVM at start-up, and inherited by executor JVMs, PySpark workers and TF nodes.
    env = dict(LOCAL_ENV) if where.one_machine and not given else {}
    return LaunchProfile(where, conf, env, frozenset(SESSION_SECRETS) & conf.keys(), ui_token)


def submission_profile(
    spark: SparkConfig,
    master: SparkMaster,
    *,
    python: str | None = None,
    env_archive: str | None = None,
    spark_archive: str | None = None,
    local_ip: str | None = None,
    files: tuple[str, ...] = (),
) -> LaunchProfile:
    """What a ``spark-submit`` of this configuration on ``master`` must give on its command line.

    Only what a submitter must give because the driver JVM is up before the
    job reads its configuration (the job's session applies the rest, and
    the stage's needs, itself through :func:`launch_profile`): YARN's
    :func:`yarn_conf` and the JVM options (:func:`java_options`); no secret,
    as every user of the machine may read a command line. On one machine
    the driver maps the class archive too; a YARN client's driver runs on
    another class path (the cluster's configuration on it), where the
    archive cannot serve. Nothing for a standalone or other cluster.

    On YARN the submission also ships the GPU discovery script
    (:data:`~tfbs.config.base.DEFAULT_GPU_DISCOVERY_SCRIPT`) with ``files``:
    a GPU node's executor runs it from its working directory
    (``train.placement.gpu_discovery_script: ./get_gpus_resources.sh``,
    conf/yarn_gpu.yaml), and ``spark-submit`` keeps only its last
    ``--files``.

    Parameters
    ----------
    python
        The driver's interpreter: the interpreters (:func:`python_packaging`).
    env_archive
        The packed environment the executors run, ``<tar.gz>[#<alias>]``
        (:func:`packed_environment`), shipped with ``--archives``.
    spark_archive
        The zip of Spark's jars YARN ships (``spark.yarn.archive``).
    local_ip
        The address the containers' Spark binds (``SPARK_LOCAL_IP``), on hosts of several addresses.
    files
        The submitter's own ``--files``.

    Examples
    --------
    >>> submission_profile(SparkConfig(), spark_master("yarn")).conf["spark.io.encryption.enabled"]
    'true'
    """
    deploy: Deploy | None = master.deploy
    conf = yarn_conf() if deploy == "yarn" else {}
    if deploy:
        conf |= java_options(spark)
    if deploy == "local":
        driver = with_archive(conf.get("spark.driver.extraJavaOptions", ""), spark.class_archive_dir)
        if driver:
            conf["spark.driver.extraJavaOptions"] = driver
    archives, environment = packed_environment(env_archive) if env_archive else (None, None)
    if python:
        conf = python_packaging(python, environment) | conf
    if spark_archive:
        conf["spark.yarn.archive"] = spark_archive
    if local_ip:
        conf |= {f"{env_key}.SPARK_LOCAL_IP": local_ip for env_key in ("spark.executorEnv", "spark.yarn.appMasterEnv")}
    if deploy == "yarn":
        files = (*files, DEFAULT_GPU_DISCOVERY_SCRIPT)
    env = dict(LOCAL_ENV) if deploy == "local" else {}
    return LaunchProfile(master, conf, env, archives=archives, files=tuple(files))


#: The packed environment's alias when its ``--archives`` entry names none.
ENVIRONMENT_ALIAS = "environment"


def packed_environment(env_archive: str) -> tuple[str, str]:
    """``spark-submit``'s ``--archives`` entry of a packed environment ``<tar.gz>[#<alias>]``, and its alias.

    Examples
    --------
    >>> packed_environment("build/dist/tfbs-env.tar.gz")
    ('build/dist/tfbs-env.tar.gz#environment', 'environment')
    >>> packed_environment("hdfs:///envs/tfbs.tar.gz#env")
    ('hdfs:///envs/tfbs.tar.gz#env', 'env')
    """
    archive, _, alias = env_archive.partition("#")
    alias = alias or ENVIRONMENT_ALIAS
    return f"{archive}#{alias}", alias


#: Where Spark puts the client's Hadoop configuration in a YARN container.
HADOOP_CONF_IN_CONTAINER = "./__spark_conf__/__hadoop_conf__"


def python_packaging(driver_python: str, environment: str | None = None) -> dict[str, str]:
    """Which Python the driver and the executors run, for a ``spark-submit`` from the project's environment.

    Parameters
    ----------
    driver_python : str
        The project's interpreter on the submitting host.
    environment : str or None
        The alias of the packed environment shipped with ``--archives
        <tar.gz>#<alias>`` (YARN): the executors run its interpreter and
        find the cluster in the Hadoop configuration Spark ships with them.
        None: the executors run ``driver_python`` too.

    Examples
    --------
    >>> python_packaging("/p/.venv/bin/python", "environment")["spark.pyspark.python"]
    './environment/bin/python'
    """
    settings = {
        "spark.pyspark.driver.python": driver_python,
        "spark.pyspark.python": f"./{environment}/bin/python" if environment else driver_python,
    }
    if environment:
        for env_key in ("spark.executorEnv", "spark.yarn.appMasterEnv"):
            settings[f"{env_key}.HADOOP_CONF_DIR"] = HADOOP_CONF_IN_CONTAINER
    return settings


def command_line(profile: LaunchProfile) -> list[str]:
    """A submission's ``spark-submit`` options: ``--conf`` per public setting, ``--archives`` and ``--files``.

    Examples
    --------
    >>> command_line(LaunchProfile(spark_master("yarn"), {"spark.authenticate": "true"}, files=("a.txt", "b.sh")))
    ['--conf', 'spark.authenticate=true', '--files', 'a.txt,b.sh']
    """
    options = submit_arguments(profile.public_conf())
    if profile.archives:
        options += ["--archives", profile.archives]
    if profile.files:
        options += ["--files", ",".join(profile.files)]
    return options


def submit_arguments(settings: Mapping[str, str]) -> list[str]:
    """``spark-submit``'s ``--conf key=value`` arguments of ``settings``.

    Examples
    --------
    >>> submit_arguments({"spark.authenticate": "true"})
    ['--conf', 'spark.authenticate=true']
    """
    return [argument for key, value in settings.items() for argument in ("--conf", f"{key}={value}")]
