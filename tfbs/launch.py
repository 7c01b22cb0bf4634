"""The launch profile: what a Spark application of the pipeline starts with, decided from where it runs.

The one module that writes Spark's settings, whoever starts the JVM:
:func:`launch_profile` for a session (:func:`tfbs.session.build_session`,
in-process or under ``spark-submit``; the class archive's run), and
:func:`submission_profile` for a ``spark-submit`` command line
(``scripts/submit_yarn.sh``, the Airflow DAG through ``python -m
tfbs.launch``). A stage states what it needs of Spark in its own words
(:class:`StageNeeds`: executors, retries, GPUs); :func:`stage_conf`
writes them as settings. The profile holds:

- the network policy per master (:func:`network_conf`): loopback and a
  per-session secret on one machine, authentication and encryption on YARN;
- on YARN also the executor plugin that keeps the containers' Hadoop
  tokens current for their Python processes (:func:`yarn_conf`);
- the JVM options of the configuration's ``spark.quick_jvm`` roles
  (:data:`QUICK_JVM_OPTIONS`, :func:`java_options`);
- the driver's class archive (:func:`with_archive`, built by
  :mod:`tfbs.class_archive`);
- for a ``spark-submit``, which interpreters the driver and the executors
  run, the packed environment's on YARN (:func:`python_packaging`), and
  the archive of Spark's jars YARN ships;
- the stage's needs (:func:`stage_conf`) and the configuration's own
  ``spark.conf``, checked against the master's policy
  (:func:`check_security`) before anything starts.

``python -m tfbs.launch --config conf/demo.yaml --deploy yarn`` prints the
``--conf key=value`` arguments a ``spark-submit`` of that configuration
needs, one argument per line (``--json``: the settings and environment as
JSON, for programs); ``--master URL`` instead of ``--deploy`` lets the
master decide (:func:`tfbs.spark_master.spark_master`; nothing for a
standalone or other cluster). Under ``spark-submit`` the driver JVM is up before the
job reads its configuration: JVM options and the network policy can only
come from the submitter.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import secrets
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from tfbs.config import SparkConfig, load_config
from tfbs.current_tokens import plugin_conf
from tfbs.errors import ConfigError
from tfbs.private_dirs import is_own_file
from tfbs.spark_master import Deploy, SparkMaster, spark_master
from tfbs.web_ui import UI_FILTER, UI_KEY, ui_key_and_token

log = logging.getLogger("tfbs.launch")

#: The one address every Spark service of a one-machine run binds to.
LOOPBACK = "127.0.0.1"

#: Spark's shared secret, drawn per session on one machine (:func:`tfbs.session.build_session`).
AUTH_SECRET = "spark.authenticate.secret"

#: The settings a session draws per session on one machine, kept off every command line.
SESSION_SECRETS = (AUTH_SECRET, UI_KEY)

#: RPC encryption's cipher: AES/GCM authenticates what it decrypts; Spark's
#: default AES/CTR does not, so a man in the middle could alter a task's
#: closure unseen.
GCM_CIPHER = "AES/GCM/NoPadding"

#: Spark's protection of a run across machines: authentication,
#: encryption of its connections (which carry the task closures, and in them
#: the TF cluster's secrets) with an authenticated cipher, and of what it
#: spills and shuffles to local disks.
CLUSTER_SECURITY = {
    "spark.authenticate": "true",
    "spark.network.crypto.enabled": "true",
    "spark.network.crypto.cipher": GCM_CIPHER,
    "spark.io.encryption.enabled": "true",
    # View and modify (kill) the application: the submitting user, and the
    # cluster's spark.admin.acls (a deployment's spark.conf may name them);
    # on YARN these become the application's ACLs (yarn.acl.enable).
    "spark.acls.enable": "true",
}

#: Spark's ACL settings that a wildcard opens to every user of the cluster (:func:`insecure_settings`).
ACL_KEYS = (
    "spark.admin.acls",
    "spark.admin.acls.groups",
    "spark.ui.view.acls",
    "spark.ui.view.acls.groups",
    "spark.modify.acls",
    "spark.modify.acls.groups",
)

#: On YARN Spark draws the secret per application and hands it to the
#: containers in YARN's credentials. The UI's kill action off: a run is
#: stopped by its own command (or ``yarn application -kill`` by its owner).
YARN_SECURITY = {**CLUSTER_SECURITY, "spark.ui.killEnabled": "false"}

#: The environment variable naming the file that holds a standalone
#: cluster's shared secret (the one its master and workers were started
#: with; ``hadoop/hosts.py`` exports it for the gateway). Read by
#: :func:`tfbs.session.build_session`, handed to Spark through py4j, never
#: on a command line.
SECRET_FILE_ENV = "TFBS_SPARK_SECRET_FILE"

#: Bind addresses of every interface: a driver bound there off YARN listens
#: on every network its host reaches (:func:`insecure_settings`).
ALL_INTERFACES = ("0.0.0.0", "::", "[::]")

#: Environment of a ``spark-submit`` on a one-machine master: the JVM reads
#: ``SPARK_LOCAL_IP`` at start-up, before any setting of the job's session,
#: and binds the driver, its UI and block manager and any local-cluster
#: executors there.
LOCAL_ENV = {"SPARK_LOCAL_IP": LOOPBACK}

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


def yarn_conf() -> dict[str, str]:
    """What every YARN application of the pipeline starts with.

    :data:`YARN_SECURITY`, and the executor plugin that copies each
    container's current Hadoop tokens where its Python processes read them
    (:mod:`tfbs.current_tokens`): without it a TF node on a keytab
    submission fails once its launch-time token is a renewal interval old.
    """
    return {**YARN_SECURITY, **plugin_conf()}


def network_conf(master: str) -> dict[str, str]:
    """Spark settings that keep the run off the network, decided from the master.

    One machine (``local``, ``local-cluster``): the driver's RPC and block
    manager bind and advertise ``127.0.0.1``. The rest (the UI, a
    ``local-cluster``'s master, workers and executor JVMs) follows
    ``SPARK_LOCAL_IP`` (:data:`LOCAL_ENV`), which
    :func:`tfbs.session.build_session` sets before the JVM starts: Spark
    binds its web UIs to ``SPARK_LOCAL_IP`` or else every interface, and
    executors inherit the driver JVM's environment. ``spark.authenticate``
    too, with a secret the session draws: another user of the machine
    reaches loopback, and a ``local-cluster``'s master would otherwise take
    any worker's registration (and hand it tasks, whose closures carry the
    TF cluster's secrets). The web UIs, which no secret of Spark's guards,
    go behind a key the session draws too (:mod:`tfbs.web_ui`).

    YARN: :data:`YARN_SECURITY` (Spark's ACLs on, the UI's kill action
    off). ``spark.authenticate`` with no secret
    given, so Spark draws one per application and hands it to the
    containers through YARN's credentials (no secret in the configuration,
    a log or a command line); ``spark.network.crypto.enabled`` with
    AES/GCM, so RPC and block transfers, which carry the task closures and
    with them the TF cluster's secrets, are encrypted and cannot be altered;
    ``spark.io.encryption.enabled``, so spills and shuffle files on the
    nodes' disks are encrypted too.

    Any other master (a standalone ``spark://``): :data:`CLUSTER_SECURITY`
    with the secret the cluster's master and workers were started with,
    which the session reads from the file :data:`SECRET_FILE_ENV` names
    (a standalone master knows one secret, so it serves one tenant); the
    UI kill action off, the web UI behind the session's key as on one
    machine.

    Parameters
    ----------
    master : str
        The Spark master the session starts with.

    Returns
    -------
    dict of str to str
        Settings the configuration's own ``spark.conf`` may override.
    """
    where = spark_master(master)
    if where.one_machine:
        return {
            "spark.driver.bindAddress": LOOPBACK,
            "spark.driver.host": LOOPBACK,
            "spark.authenticate": "true",
            # Only the run's token opens the web UIs (tfbs.web_ui); even then they stop nothing.
            "spark.ui.killEnabled": "false",
        }
    if where.yarn:
        return dict(YARN_SECURITY)
    return {**CLUSTER_SECURITY, "spark.ui.killEnabled": "false"}


def insecure_settings(conf: Mapping[str, str]) -> list[str]:
    """The settings of ``conf`` that leave its master's network policy weaker, each named with why.

    YARN and any cluster master (standalone): each setting of
    :data:`CLUSTER_SECURITY` not at its value (unset counts as off), and
    on a standalone master a missing ``spark.authenticate.secret``. On every
    master but YARN (whose proxy guards the UI and whose daemons bind as
    the cluster says) also what a configuration sets explicitly to open the
    run: ``spark.authenticate`` false, ``spark.driver.bindAddress`` on every
    interface, ``spark.ui.filters`` empty. One machine is checked only for
    those explicit settings: its policy (:func:`network_conf`) comes from
    the session or the submitter.

    Parameters
    ----------
    conf : mapping of str to str
        The settings a session is about to start with, ``spark.master`` among them.

    Returns
    -------
    list of str
        ``key`` (``key=value`` for a value that opens it), sorted; empty when nothing weakens the policy.

    Examples
    --------
    >>> insecure_settings({"spark.master": "local[2]", "spark.authenticate": "false"})
    ['spark.authenticate=false']
    >>> insecure_settings({"spark.master": "local[2]"})
    []
    """
    master = spark_master(conf.get("spark.master") or "")
    weak: set[str] = set()
    if not master.one_machine:
        for key, value in CLUSTER_SECURITY.items():
            given = conf.get(key) or "false"
            if given.lower() != value.lower():
                weak.add(key if value == "true" else f"{key}={given}")
        weak.update(f"{key}={conf[key]}" for key in ACL_KEYS if "*" in (conf.get(key) or "").split(","))
        if not master.yarn and not conf.get(AUTH_SECRET):
            weak.add(AUTH_SECRET)
    if not master.yarn:
        if (conf.get("spark.authenticate") or "").lower() == "false":
            weak.add("spark.authenticate=false")
        if (conf.get("spark.driver.bindAddress") or "") in ALL_INTERFACES:
            weak.add(f"spark.driver.bindAddress={conf['spark.driver.bindAddress']}")
        if conf.get("spark.ui.filters") == "" and (conf.get("spark.ui.enabled") or "true").lower() != "false":
            weak.add('spark.ui.filters=""')
    # One name per setting: "spark.authenticate" (unset) and "spark.authenticate=false" say the same.
    return sorted(key for key in weak if not (key.endswith("=false") and key.removesuffix("=false") in weak))


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

    java = _java_binary()
    key = hashlib.sha256()
    stat = java.stat()
    key.update(f"{java}:{stat.st_size}:{stat.st_mtime_ns}:{pyspark.__version__}".encode())
    for jar in sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar")):
        jar_stat = jar.stat()
        key.update(f"{jar}:{jar_stat.st_size}:{jar_stat.st_mtime_ns}".encode())
    return Path(directory) / f"spark-driver-{key.hexdigest()[:16]}.jsa"


def _java_binary() -> Path:
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


def cluster_secret(env: Mapping[str, str]) -> str | None:
    """The shared secret of a standalone cluster, from the file ``env[TFBS_SPARK_SECRET_FILE]`` names.

    The file must be this user's and readable by no one else: a secret
    others can read (or replace) lets them join the cluster's applications.

    Parameters
    ----------
    env
        The environment (:data:`SECRET_FILE_ENV`).

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


def check_security(conf: Mapping[str, str], allow_insecure: bool) -> None:
    """Refuse a session whose network protection is weaker than its master's policy, unless the configuration allows it.

    Checked on the settings the session is about to start with, whoever set
    them: the job itself, ``spark-submit``'s options, a DAG's
    ``tfbs_spark_conf`` Variable (:func:`insecure_settings`).
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
        The bearer token that opens the web UIs (:mod:`tfbs.web_ui`); "" when no key was drawn.
    """

    master: SparkMaster
    conf: dict[str, str]
    env: dict[str, str] = field(default_factory=dict)
    secret_keys: frozenset[str] = frozenset()
    ui_token: str = ""

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
    environment: str | None = None,
    spark_archive: str | None = None,
    local_ip: str | None = None,
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

    Parameters
    ----------
    python, environment
        The driver's interpreter and the packed environment's alias: the
        interpreters (:func:`python_packaging`).
    spark_archive
        The zip of Spark's jars YARN ships (``spark.yarn.archive``).
    local_ip
        The address the containers' Spark binds (``SPARK_LOCAL_IP``), on hosts of several addresses.

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
    if python:
        conf = python_packaging(python, environment) | conf
    if spark_archive:
        conf["spark.yarn.archive"] = spark_archive
    if local_ip:
        conf |= {f"{env_key}.SPARK_LOCAL_IP": local_ip for env_key in ("spark.executorEnv", "spark.yarn.appMasterEnv")}
    return LaunchProfile(master, conf, dict(LOCAL_ENV) if deploy == "local" else {})


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


def submit_arguments(settings: Mapping[str, str]) -> list[str]:
    """``spark-submit``'s ``--conf key=value`` arguments of ``settings``.

    Examples
    --------
    >>> submit_arguments({"spark.authenticate": "true"})
    ['--conf', 'spark.authenticate=true']
    """
    return [argument for key, value in settings.items() for argument in ("--conf", f"{key}={value}")]


def main(argv: list[str] | None = None) -> int:
    """Print the ``spark-submit`` arguments (or, with ``--json``, settings and environment) of a configuration."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--config", help="the pipeline YAML (none: the network policy alone)")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--deploy", choices=["local", "yarn"], help="where spark-submit runs it")
    where.add_argument("--master", help="the master spark-submit is given (a standalone or other cluster: nothing)")
    parser.add_argument("--python", help="the driver's interpreter: add the packaging settings (python_packaging)")
    parser.add_argument("--environment", help="the alias of the packed environment shipped with --archives")
    parser.add_argument("--spark-archive", help="the zip of Spark's jars YARN ships (spark.yarn.archive)")
    parser.add_argument("--local-ip", help="SPARK_LOCAL_IP of the YARN containers")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a configuration override")
    parser.add_argument("--json", action="store_true", help='print {"conf": {...}, "env": {...}} instead')
    args = parser.parse_args(argv)
    spark = load_config(args.config, args.set).spark if args.config else SparkConfig()
    master = spark_master(args.master or args.deploy)
    profile = submission_profile(
        spark,
        master,
        python=args.python,
        environment=args.environment,
        spark_archive=args.spark_archive,
        local_ip=args.local_ip,
    )
    if args.json:
        print(json.dumps({"conf": profile.conf, "env": profile.env}))
    else:
        print("\n".join(submit_arguments(profile.conf)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
