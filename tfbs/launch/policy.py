"""The network policy of a Spark application, per master: who may join it, read it or alter it.

On one machine: loopback and a per-session secret; on YARN and a
standalone cluster: Spark's authentication, encryption with an
authenticated cipher, and ACLs (:data:`CLUSTER_SECURITY`). A session whose
settings weaken its master's policy is refused (:func:`check_security`)
unless the configuration says ``spark.allow_insecure``. Part of the launch
profile (:mod:`tfbs.launch`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

from tfbs.errors import ConfigError
from tfbs.launch.current_tokens import plugin_conf
from tfbs.launch.web_ui import UI_KEY
from tfbs.spark_master import spark_master

#: The one address every Spark service of a one-machine run binds to.
LOOPBACK = "127.0.0.1"

#: Spark's shared secret, drawn per session on one machine (:func:`tfbs.launch.session.build_session`).
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
#: :func:`tfbs.launch.session.build_session`, handed to Spark through py4j, never
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


def yarn_conf() -> dict[str, str]:
    """What every YARN application of the pipeline starts with.

    :data:`YARN_SECURITY`, and the executor plugin that copies each
    container's current Hadoop tokens where its Python processes read them
    (:mod:`tfbs.launch.current_tokens`): without it a TF node on a keytab
    submission fails once its launch-time token is a renewal interval old.
    """
    return {**YARN_SECURITY, **plugin_conf()}


def network_conf(master: str) -> dict[str, str]:
    """Spark settings that keep the run off the network, decided from the master.

    One machine (``local``, ``local-cluster``): the driver's RPC and block
    manager bind and advertise ``127.0.0.1``. The rest (the UI, a
    ``local-cluster``'s master, workers and executor JVMs) follows
    ``SPARK_LOCAL_IP`` (:data:`LOCAL_ENV`), which
    :func:`tfbs.launch.session.build_session` sets before the JVM starts: Spark
    binds its web UIs to ``SPARK_LOCAL_IP`` or else every interface, and
    executors inherit the driver JVM's environment. ``spark.authenticate``
    too, with a secret the session draws: another user of the machine
    reaches loopback, and a ``local-cluster``'s master would otherwise take
    any worker's registration (and hand it tasks, whose closures carry the
    TF cluster's secrets). The web UIs, which no secret of Spark's guards,
    go behind a key the session draws too (:mod:`tfbs.launch.web_ui`).

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
            # Only the run's token opens the web UIs (tfbs.launch.web_ui); even then they stop nothing.
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
