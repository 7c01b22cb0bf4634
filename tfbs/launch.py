"""The launch profile: what a Spark application of the pipeline starts with, decided from where it runs.

One place for the settings every launcher needs, whoever starts the JVM:
:func:`tfbs.session.build_session` in-process, ``scripts/submit_yarn.sh``,
the Airflow DAG (``airflow_dags/``) and the tests' Airflow runs through
``spark-submit``:

- the network policy per master (:func:`network_conf`): loopback and a
  per-session secret on one machine, authentication and encryption on YARN;
- on YARN also the executor plugin that keeps the containers' Hadoop
  tokens current for their Python processes (:func:`yarn_conf`);
- the JVM options of the configuration's ``spark.quick_jvm`` roles
  (:data:`QUICK_JVM_OPTIONS`, :func:`java_options`);
- the driver's class archive (:func:`with_archive`, built by
  :mod:`tfbs.class_archive`);
- for a ``spark-submit``, which interpreters the driver and the executors
  run, the packed environment's on YARN (:func:`python_packaging`).

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
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from tfbs.config import SparkConfig, load_config
from tfbs.current_tokens import plugin_conf
from tfbs.private_dirs import is_own_file
from tfbs.spark_master import Deploy, spark_master
from tfbs.web_ui import UI_KEY

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


def launch_settings(spark: SparkConfig, deploy: Deploy) -> dict[str, str]:
    """The ``--conf`` settings of a ``spark-submit`` of this configuration on ``deploy``.

    Only what a submitter must give because the driver JVM is up before the
    job reads its configuration (the job's session applies the rest of
    ``spark.conf`` itself): YARN's :func:`yarn_conf`, and the JVM
    options (:func:`java_options`). On one machine the driver maps the
    class archive too; a YARN client's driver runs on another class path
    (the cluster's configuration on it), where the archive cannot serve.

    Examples
    --------
    >>> launch_settings(SparkConfig(), "yarn")["spark.io.encryption.enabled"]
    'true'
    """
    settings = yarn_conf() if deploy == "yarn" else {}
    settings |= java_options(spark)
    if deploy == "local":
        driver = with_archive(settings.get("spark.driver.extraJavaOptions", ""), spark.class_archive_dir)
        if driver:
            settings["spark.driver.extraJavaOptions"] = driver
    return settings


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


def launch_env(deploy: Deploy) -> dict[str, str]:
    """The environment a ``spark-submit`` on ``deploy`` runs in (:data:`LOCAL_ENV` on one machine)."""
    return dict(LOCAL_ENV) if deploy == "local" else {}


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
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a configuration override")
    parser.add_argument("--json", action="store_true", help='print {"conf": {...}, "env": {...}} instead')
    args = parser.parse_args(argv)
    spark = load_config(args.config, args.set).spark if args.config else SparkConfig()
    deploy = args.deploy or spark_master(args.master).deploy
    settings = launch_settings(spark, deploy) if deploy else {}
    if args.python:
        settings = python_packaging(args.python, args.environment) | settings
    if args.json:
        print(json.dumps({"conf": settings, "env": launch_env(deploy) if deploy else {}}))
    else:
        print("\n".join(submit_arguments(settings)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
