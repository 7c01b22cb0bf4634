#!/usr/bin/env python3
"""A Hadoop cluster of separate hosts on one machine, for tests and for trying a real multi-host run.

Each host is a Linux network namespace with an address and a hostname of
its own (:mod:`netns`); each Hadoop daemon a JVM of its own, from the class
path the mini cluster uses (:mod:`host_daemons`)::

    master    NameNode, ResourceManager (and a Spark standalone master, on request)
    node1..3  a DataNode and a NodeManager each (and Spark standalone workers)
    gateway   nothing: the driver side runs here (spark-submit, Airflow);
              its hostname maps to 127.0.1.1, as Debian maps it
    outsider  nothing, and named by no other host: a tenant with no secret

HDFS keeps two replicas of every block. Needs root. Standard library only::

    python3 hadoop/hosts.py up     --workdir DIR [--spark-home PYSPARK_DIR]
    python3 hadoop/hosts.py status --workdir DIR
    python3 hadoop/hosts.py run    --workdir DIR gateway [-- COMMAND...]
    python3 hadoop/hosts.py hdfs   --workdir DIR -- -put FILE /path       # `hdfs dfs`, from the gateway
    python3 hadoop/hosts.py down   --workdir DIR

From Python (with ``hadoop/`` on ``sys.path``)::

    with HostCluster(workdir) as cluster:
        cluster.run("gateway", ["spark-submit", ...], env={**os.environ, **cluster.env()})
        cluster.kill_host("node2"); cluster.restart_host("node2")
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import host_daemons as daemons
from containers import ContainerLogs, ContainerProcess, container_logs, container_processes
from jvm import DEFAULT_CACHE_DIR, LOG4J_PROPERTIES, ClusterError, ensure_classpath, find_java_home, http_json, site_xml
from kdc import KDC_PORT, REALM, Kdc
from netns import Host, HostNetwork, free_subnet, require_namespaces
from procs import rss_mb
from secure_conf import Security, client_settings, java_options, server_settings, service_principals

log = logging.getLogger("hosts")

GATEWAY = "gateway"
OUTSIDER = "outsider"
#: Seconds to wait for every daemon to serve.
DEFAULT_STARTUP_TIMEOUT = 180.0
DEFAULT_SIZE = daemons.NodeSize()
#: Environment variables a caller's shell or test session may hold that must not reach the hosts' processes.
_CALLER_ONLY_ENV = ("SPARK_LOCAL_IP", "HADOOP_CONF_DIR", "YARN_CONF_DIR", "PYSPARK_GATEWAY_PORT", "SPARK_HOME")


def node_names(count: int) -> list[str]:
    """``node1`` .. ``node<count>``: the hosts with a DataNode and a NodeManager."""
    return [f"node{index}" for index in range(1, count + 1)]


def layout(subnet: str, nodes: int) -> list[Host]:
    """The hosts and their addresses on ``subnet``."""
    return [
        Host(daemons.MASTER, f"{subnet}.2"),
        Host(GATEWAY, f"{subnet}.3", self_on_loopback=True),
        *(Host(name, f"{subnet}.{10 + index}") for index, name in enumerate(node_names(nodes), start=1)),
        Host(OUTSIDER, f"{subnet}.250", listed=False),
    ]


@dataclass(frozen=True)
class HostsInfo:
    """What ``DIR/cluster.json`` holds about a started cluster."""

    prefix: str
    subnet: str
    workdir: str
    conf_dir: str
    java_home: str
    hosts: dict[str, str]
    nodes: list[str]
    spark_home: str = ""
    spark_nodes: list[str] = field(default_factory=list)
    startup_seconds: float = 0.0
    #: Secure mode: the realm (empty: none), the users with keytabs, how often tokens are renewed.
    realm: str = ""
    users: list[str] = field(default_factory=list)
    token_renew_s: int = 3600


class HostCluster:
    """Hadoop on separate hosts of one machine, living in one work dir.

    Constructing it starts nothing: it reads ``DIR/cluster.json`` if present,
    so ``status`` and ``down`` work on a cluster another process started. As
    a context manager it starts on entry and stops on exit.

    Parameters
    ----------
    workdir
        Folder of the hosts' configuration, data and logs; a start wipes it.
    nodes
        Hosts with a DataNode and a NodeManager (at least 2: two replicas).
    cache_dir
        Folder of Hadoop's class path (:func:`jvm.ensure_classpath`).
    size
        What each node offers YARN and Spark standalone.
    startup_timeout
        Seconds to wait for the daemons to serve.
    secure
        Kerberos for every daemon and client (a KDC on ``master``,
        :mod:`secure_conf`), principals and keytabs made at each start.
    users
        Secure mode: the tenants (``alice``) with a principal and a keytab.
    token_renew_s
        Secure mode: delegation tokens expire unless renewed this often.
    """

    def __init__(
        self,
        workdir: str | os.PathLike[str],
        *,
        nodes: int = 3,
        cache_dir: Path = DEFAULT_CACHE_DIR,
        size: daemons.NodeSize = DEFAULT_SIZE,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        secure: bool = False,
        users: Sequence[str] = ("alice",),
        token_renew_s: int = 3600,
    ) -> None:
        if nodes < 2:
            raise ValueError("at least 2 nodes: HDFS keeps two replicas")
        self.workdir = Path(workdir).resolve()
        self.cache_dir = Path(cache_dir)
        self.size = size
        self.startup_timeout = startup_timeout
        self.info: HostsInfo | None = None
        if self.info_file.is_file():
            self.info = HostsInfo(**json.loads(self.info_file.read_text()))
        self.node_count = len(self.info.nodes) if self.info else nodes
        self._secure = (secure, tuple(users), token_renew_s)
        #: Secure mode: the environment of each user's ticket, once logged in (see :meth:`get`).
        self._tickets: dict[str, dict[str, str]] = {}
        #: The processes this object started, by (host, role name).
        self._processes: dict[tuple[str, str], subprocess.Popen[bytes]] = {}

    # -- names and addresses

    @property
    def security(self) -> Security | None:
        """The secure cluster's settings, or None."""
        info = self._started()
        if not info.realm:
            return None
        return Security(info.realm, self.kdc.krb5_conf, tuple(info.users), info.token_renew_s)

    @property
    def kdc(self) -> Kdc:
        """The realm's KDC (secure mode), on ``master``."""
        return Kdc(self.workdir / "kdc", self.address(daemons.MASTER), self._started().realm or REALM)

    def keytab(self, name: str) -> Path:
        """The keytab of a host's daemons or of a user (secure mode)."""
        return self.kdc.folder / "keytabs" / f"{name}.keytab"

    def login(self, user: str) -> dict[str, str]:
        """Secure mode: ``user``'s ticket, from its keytab, in a cache of its own; the environment that uses it.

        ``KRB5CCNAME`` and ``KRB5_CONFIG`` for MIT's library (hdfs-native,
        ``kinit``), ``JDK_JAVA_OPTIONS`` for every JVM a client starts.
        """
        security = self.security
        if security is None:
            return {}
        cache = self.kdc.folder / f"ccache-{user}"
        env = {
            "KRB5CCNAME": f"FILE:{cache}",
            "KRB5_CONFIG": str(security.krb5_conf),
            "JDK_JAVA_OPTIONS": " ".join(java_options(security)),
        }
        principal = self.kdc.principal(user)
        done = subprocess.run(
            ["kinit", "-kt", str(self.keytab(user)), principal],
            env={**os.environ, **env},
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise ClusterError(f"kinit {principal}: {done.stderr.strip()}")
        return env

    @property
    def prefix(self) -> str:
        """Names this cluster's namespaces and bridge (one per work dir)."""
        return "tf" + hashlib.sha256(str(self.workdir).encode()).hexdigest()[:5]

    @property
    def info_file(self) -> Path:
        """``DIR/cluster.json``."""
        return self.workdir / "cluster.json"

    @property
    def conf_dir(self) -> Path:
        """The client configuration of the gateway: HADOOP_CONF_DIR and YARN_CONF_DIR there."""
        return self.workdir / "conf"

    @property
    def machine_conf_dir(self) -> Path:
        """A client configuration for this machine's own namespace (no ``fs.defaultFS``)."""
        return self.workdir / "conf-machine"

    def _started(self) -> HostsInfo:
        if self.info is None:
            raise ClusterError(f"no cluster of hosts was started in {self.workdir}")
        return self.info

    @property
    def network(self) -> HostNetwork:
        """The hosts' network."""
        info = self._started()
        hosts = layout(info.subnet, len(info.nodes))
        return HostNetwork(info.prefix, info.subnet, hosts)

    @property
    def nodes(self) -> list[str]:
        """The hosts with a DataNode and a NodeManager."""
        return list(self._started().nodes)

    def address(self, host: str) -> str:
        """The IPv4 address of ``host``."""
        return self._started().hosts[host]

    def host_dirs(self, host: str) -> daemons.HostDirs:
        """The folders of ``host``."""
        return daemons.HostDirs(self.workdir / "hosts" / host)

    @property
    def fs_default_fs(self) -> str:
        """``hdfs://master:8020``: HDFS as the hosts name it."""
        return f"hdfs://{daemons.MASTER}:{daemons.NAMENODE_PORT}"

    @property
    def fs_by_address(self) -> str:
        """HDFS by the master's address: for this machine's own namespace, where no host name resolves."""
        return f"hdfs://{self.address(daemons.MASTER)}:{daemons.NAMENODE_PORT}"

    def by_address(self, uri_or_url: str) -> str:
        """``uri_or_url`` with a host name replaced by that host's address (``hdfs://master:8020/x`` ...)."""
        parts = urlsplit(uri_or_url)
        hosts = self._started().hosts
        if parts.hostname not in hosts:
            return uri_or_url
        netloc = hosts[parts.hostname] + (f":{parts.port}" if parts.port else "")
        return urlunsplit(parts._replace(netloc=netloc))

    @property
    def webhdfs_url(self) -> str:
        """The NameNode's HTTP address (``/webhdfs/v1``, ``/jmx``), by address."""
        return f"http://{self.address(daemons.MASTER)}:{daemons.NAMENODE_HTTP_PORT}"

    @property
    def rm_url(self) -> str:
        """The ResourceManager's web address (``/ws/v1/cluster``), by address."""
        return f"http://{self.address(daemons.MASTER)}:{daemons.RESOURCEMANAGER_HTTP_PORT}"

    def nm_url(self, host: str) -> str:
        """The web address of ``host``'s NodeManager (``/ws/v1/node``), by address."""
        return f"http://{self.address(host)}:{daemons.NODEMANAGER_HTTP_PORT}"

    @property
    def spark_master_url(self) -> str:
        """``spark://master:7077``: the Spark standalone master, once :meth:`start_spark` ran."""
        return f"spark://{daemons.MASTER}:{daemons.SPARK_MASTER_PORT}"

    def env(self) -> dict[str, str]:
        """Environment of a client on the gateway: the cluster's configuration and JDK (and realm, if secure)."""
        info = self._started()
        env = {"HADOOP_CONF_DIR": info.conf_dir, "YARN_CONF_DIR": info.conf_dir, "JAVA_HOME": info.java_home}
        security = self.security
        if security is not None:
            env |= {"KRB5_CONFIG": str(security.krb5_conf), "JDK_JAVA_OPTIONS": " ".join(java_options(security))}
        return env

    # -- running things on the hosts

    def command(self, host: str, argv: Sequence[str]) -> list[str]:
        """``argv`` run on ``host`` (see :meth:`netns.HostNetwork.command`)."""
        return self.network.command(host, argv)

    def host_env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """``base`` (default this process's environment) for a gateway process: the cluster's, no caller Spark settings."""
        env = {key: value for key, value in (base or os.environ).items() if key not in _CALLER_ONLY_ENV}
        return {**env, **self.env()}

    def popen(self, host: str, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
        """Start ``argv`` on ``host``; ``kwargs`` go to :class:`subprocess.Popen`."""
        return subprocess.Popen(self.command(host, argv), **kwargs)

    def run(self, host: str, argv: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess[Any]:
        """Run ``argv`` on ``host`` to its end; ``kwargs`` go to :func:`subprocess.run`."""
        return subprocess.run(self.command(host, argv), **kwargs)

    def hdfs_shell(self, arguments: Sequence[str]) -> list[str]:
        """``hdfs dfs ARGUMENTS`` (Hadoop's FsShell) as a command of the gateway's client configuration."""
        java = Path(self._started().java_home) / "bin" / "java"
        lib = ensure_classpath(self.cache_dir)
        return [str(java), "-cp", f"{self.conf_dir}:{lib}/*", "org.apache.hadoop.fs.FsShell", *arguments]

    # -- life cycle

    def start(self) -> HostsInfo:
        """Make the hosts, format HDFS, start every daemon and wait until all serve.

        Raises
        ------
        ClusterError
            No root or no namespaces (naming what is missing), no JDK or
            Maven, or a daemon that does not serve in time (with its log's end).
        """
        require_namespaces()
        started = time.monotonic()
        java_home = find_java_home()
        ensure_classpath(self.cache_dir)  # fetched before the hosts exist: Maven needs the network
        self._stop_leftovers()
        shutil.rmtree(self.workdir / "hosts", ignore_errors=True)
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        secure, users, token_renew_s = self._secure
        self.info = HostsInfo(
            prefix=self.prefix,
            subnet=free_subnet(self.prefix),
            workdir=str(self.workdir),
            conf_dir=str(self.conf_dir),
            java_home=str(java_home),
            hosts={},
            nodes=node_names(self.node_count),
            realm=REALM if secure else "",
            users=list(users) if secure else [],
            token_renew_s=token_renew_s,
        )
        hosts = layout(self.info.subnet, self.node_count)
        self.info = HostsInfo(**{**asdict(self.info), "hosts": {host.name: host.address for host in hosts}})
        self._write_info()  # first, so that `down` finds the hosts even if starting fails
        try:
            self.network.create()
            if secure:
                self._start_kdc()
            self._write_client_conf()
            for host in hosts:
                self._write_host_conf(host.name)
            log.info("hosts up: %s", ", ".join(f"{host.name} {host.address}" for host in hosts))
            self._format_hdfs()
            for host, role in self._hadoop_daemons():
                self._launch(host, role, self._daemon_command(host, role))
            self._wait_ready(self.startup_timeout)
        except BaseException:
            self.stop()
            raise
        self.info = HostsInfo(**{**asdict(self.info), "startup_seconds": round(time.monotonic() - started, 1)})
        self._write_info()
        log.info(
            "cluster of hosts ready in %.1f s: %s, YARN %s", self.info.startup_seconds, self.fs_default_fs, self.rm_url
        )
        return self.info

    def _stop_leftovers(self) -> None:
        """A cluster of this work dir left running by a killed process goes first."""
        if self.info is not None:
            self.stop()

    def _hadoop_daemons(self) -> list[tuple[str, daemons.Role]]:
        placed = [(daemons.MASTER, daemons.NAMENODE), (daemons.MASTER, daemons.RESOURCEMANAGER)]
        for node in self.nodes:
            placed += [(node, daemons.DATANODE), (node, daemons.NODEMANAGER)]
        return placed

    def _start_kdc(self) -> None:
        """Secure mode: the realm's KDC on ``master``, the daemons' and the users' keytabs."""
        kdc = self.kdc
        kdc.create()
        for host in self.network.hosts.values():
            roles = {role.name for where, role in self._hadoop_daemons() if where == host.name}
            principals = service_principals(host.name, host.address, roles)
            if principals:
                kdc.keytab(host.name, principals)
        for user in self._started().users:
            kdc.keytab(user, [user])
        with open(kdc.folder / "krb5kdc.out", "ab") as output:
            self._processes[(daemons.MASTER, "KDC")] = self.popen(
                daemons.MASTER, kdc.command(), env={**os.environ, **kdc.env()}, stdin=subprocess.DEVNULL,
                stdout=output, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + 30
        while True:  # the daemons log in from their keytabs as they start
            try:
                socket.create_connection((kdc.address, KDC_PORT), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise ClusterError(
                        f"the KDC does not answer on {kdc.address}:{KDC_PORT}; see {kdc.folder}"
                    ) from None
                time.sleep(0.2)

    def _write_client_conf(self) -> None:
        """The gateway's ``HADOOP_CONF_DIR`` (with the secure mode's client settings), and the machine's.

        The machine's (:attr:`machine_conf_dir`) has no ``fs.defaultFS``: a
        path without a scheme stays a local path there, where names of the
        hosts do not resolve; URIs give the NameNode's address.
        """
        files = daemons.client_conf()
        security = self.security
        if security is not None:
            for name, properties in client_settings(security, daemons.MASTER).items():
                files[name] = {**files[name], **properties}
        self.machine_conf_dir.mkdir(parents=True, exist_ok=True)
        for name, properties in files.items():
            (self.conf_dir / name).write_text(site_xml(properties))
            machine = {key: value for key, value in properties.items() if key != "fs.defaultFS"}
            (self.machine_conf_dir / name).write_text(site_xml(machine))

    def _write_host_conf(self, host: str) -> None:
        dirs = self.host_dirs(host)
        for folder in (dirs.conf, dirs.data, dirs.logs, dirs.tmp, dirs.container_logs):
            folder.mkdir(parents=True, exist_ok=True)
        files = daemons.server_conf(dirs, self.size)
        security = self.security
        if security is not None:
            for name, properties in server_settings(security, daemons.MASTER, self.keytab(host)).items():
                files[name] = {**files[name], **properties}
        for name, properties in files.items():
            (dirs.conf / name).write_text(site_xml(properties))
        (dirs.conf / "log4j.properties").write_text(LOG4J_PROPERTIES)

    def _daemon_command(self, host: str, role: daemons.Role, *args: str) -> list[str]:
        """A Hadoop daemon's command line on ``host`` (with Kerberos's settings in secure mode)."""
        info = self._started()
        security = self.security
        options = java_options(security) if security is not None else []
        java = Path(info.java_home) / "bin" / "java"
        lib = ensure_classpath(self.cache_dir)
        return daemons.hadoop_command(java, lib, self.host_dirs(host), role, *args, jvm_options=options)

    def _format_hdfs(self) -> None:
        dirs = self.host_dirs(daemons.MASTER)
        argv = self._daemon_command(daemons.MASTER, daemons.NAMENODE, "-format", "-force", "-nonInteractive")
        env = self._daemon_env(dirs, None, None)
        done = self.run(daemons.MASTER, argv, env=env, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise ClusterError(
                f"formatting HDFS failed (exit {done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
            )

    def _launch(self, host: str, role: daemons.Role, argv: Sequence[str], spark_home: Path | None = None) -> None:
        dirs = self.host_dirs(host)
        env = self._daemon_env(dirs, spark_home, role)
        with open(dirs.logs / f"{role.name}.log", "ab") as output:
            # A session of its own: a Ctrl-C meant for the caller does not reach the daemons.
            self._processes[(host, role.name)] = self.popen(
                host, argv, cwd=dirs.root, env=env, stdin=subprocess.DEVNULL, stdout=output,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip

    def _daemon_env(self, dirs: daemons.HostDirs, spark_home: Path | None, role: daemons.Role | None) -> dict[str, str]:
        env = daemons.daemon_env(os.environ, Path(self._started().java_home), dirs, spark_home, role)
        if self.security is not None:
            env["KRB5_CONFIG"] = str(self.kdc.krb5_conf)
        return env

    def stop(self) -> None:
        """Kill every process on every host and remove the hosts; no-op if none are there."""
        if self.info is None:
            return
        network = self.network
        if network.exists():
            started = time.monotonic()
            network.destroy()
            log.info("hosts of %s removed in %.1f s", self.workdir, time.monotonic() - started)
        for process in self._processes.values():
            process.wait()  # reap our children (a detached start's are reaped by init)
        self._processes.clear()
        self.info_file.unlink(missing_ok=True)
        self.info = None

    def __enter__(self) -> HostCluster:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()

    def _write_info(self) -> None:
        self.info_file.parent.mkdir(parents=True, exist_ok=True)
        self.info_file.write_text(json.dumps(asdict(self._started()), indent=2) + "\n")

    # -- readiness

    def get(self, url: str) -> bytes:
        """GET a daemon's web endpoint; in secure mode through SPNEGO (``curl --negotiate``) as the first user.

        Raises
        ------
        OSError
            If it does not answer 200.
        """
        if self.security is None:
            with urllib.request.urlopen(url, timeout=10) as response:
                return bytes(response.read())
        user = self._started().users[0]
        if user not in self._tickets:
            self._tickets[user] = self.login(user)
        env = {**os.environ, **self._tickets[user]}
        done = subprocess.run(
            ["curl", "-sS", "--negotiate", "-u", ":", "-w", "\n%{http_code}", url],
            env=env, capture_output=True, timeout=30,
        )  # fmt: skip
        body, _, code = done.stdout.rpartition(b"\n")
        if done.returncode != 0 or code != b"200":
            raise OSError(f"GET {url}: {code.decode() or done.stderr.decode().strip()}")
        return body

    def get_json(self, url: str) -> Any:
        """:meth:`get` a JSON document."""
        return json.loads(self.get(url))

    def readiness(self, nodes: Sequence[str] | None = None) -> str | None:
        """What does not serve yet (``None`` when HDFS and YARN serve with ``nodes``, default all)."""
        expected = set(self.nodes if nodes is None else nodes)
        try:
            beans = self.get_json(f"{self.webhdfs_url}/jmx?qry=Hadoop:service=NameNode,name=NameNodeInfo")["beans"]
            if not beans or beans[0]["Safemode"]:
                return "NameNode: in safe mode"
            live = {name.split(":")[0] for name in json.loads(beans[0]["LiveNodes"])}
            if not expected <= live:
                return f"DataNode: {', '.join(sorted(expected - live))} not live at the NameNode"
            state = self.get_json(f"{self.rm_url}/ws/v1/cluster/info")["clusterInfo"]["state"]
            if state != "STARTED":
                return f"ResourceManager: {state}"
            running = {node["nodeHostName"] for node in self._yarn_nodes("RUNNING")}
            if not expected <= running:
                return f"NodeManager: {', '.join(sorted(expected - running))} not running at the ResourceManager"
            spark_nodes = set(self._started().spark_nodes) & expected
            if spark_nodes:
                workers = http_json(f"http://{self.address(daemons.MASTER)}:{daemons.SPARK_MASTER_HTTP_PORT}/json")
                alive = {w["host"] for w in workers["workers"] if w["state"] == "ALIVE"}
                alive_names = {name for name, address in self._started().hosts.items() if address in alive} | alive
                if not spark_nodes <= alive_names:
                    return f"Spark worker: {', '.join(sorted(spark_nodes - alive_names))} not alive at the master"
        except (OSError, ValueError, KeyError) as error:  # URLError is an OSError
            return f"{type(error).__name__}: {error}"
        return None

    def _yarn_nodes(self, state: str) -> list[dict[str, Any]]:
        # "nodes" is null, not an empty object, while no node is in that state
        found: list[dict[str, Any]] = (
            self.get_json(f"{self.rm_url}/ws/v1/cluster/nodes?states={state}")["nodes"] or {}
        ).get("node", [])
        return found

    def _wait_ready(self, timeout: float, nodes: Sequence[str] | None = None) -> None:
        deadline = time.monotonic() + timeout
        waiting_for = ""
        while (not_ready := self.readiness(nodes)) is not None:
            dead = [f"{host} {role}" for (host, role), process in self._processes.items() if process.poll() is not None]
            if dead or time.monotonic() > deadline:
                cause = f"{', '.join(dead)} exited" if dead else f"not ready after {timeout:.0f} s: {not_ready}"
                raise ClusterError(f"cluster of hosts: {cause}; logs in {self.workdir / 'hosts'}/<host>/logs")
            if not_ready.split(":")[0] != waiting_for:
                waiting_for = not_ready.split(":")[0]
                log.info("waiting for the %s", not_ready)
            time.sleep(0.5)

    # -- failures

    def kill_host(self, host: str) -> int:
        """Kill every process of ``host``, daemons and containers alike (the host dies); return how many."""
        killed = self.network.kill(host)
        for (where, _), process in list(self._processes.items()):
            if where == host:
                process.wait()
        log.info("host %s killed (%d processes)", host, killed)
        return killed

    def restart_host(self, host: str, timeout: float = DEFAULT_STARTUP_TIMEOUT) -> None:
        """Start ``host``'s daemons again (its data kept) and wait until they serve."""
        info = self._started()
        for where, role in self._hadoop_daemons():
            if where == host:
                self._launch(host, role, self._daemon_command(host, role))
        if host in info.spark_nodes:
            self._launch_spark_worker(host, Path(info.spark_home))
        self._wait_ready(timeout)

    def cut_off(self, host: str) -> None:
        """Take ``host``'s link down: its processes run on, unreachable."""
        self.network.set_link(host, up=False)

    def reconnect(self, host: str) -> None:
        """Bring ``host``'s link up again."""
        self.network.set_link(host, up=True)

    # -- Spark standalone

    def start_spark(self, spark_home: str | os.PathLike[str], nodes: Sequence[str] | None = None) -> str:
        """Start a Spark standalone master on ``master`` and a worker on each of ``nodes`` (default all).

        Each worker offers :attr:`NodeSize.spark_cores` cores. Returns the
        master URL, ``spark://master:7077``.
        """
        home = Path(spark_home).resolve()
        chosen = list(self.nodes if nodes is None else nodes)
        self.info = HostsInfo(**{**asdict(self._started()), "spark_home": str(home), "spark_nodes": chosen})
        self._write_info()
        argv = daemons.spark_command(
            home, daemons.SPARK_MASTER, "--host", daemons.MASTER,
            "--port", str(daemons.SPARK_MASTER_PORT), "--webui-port", str(daemons.SPARK_MASTER_HTTP_PORT),
        )  # fmt: skip
        self._launch(daemons.MASTER, daemons.SPARK_MASTER, argv, home)
        for node in chosen:
            self._launch_spark_worker(node, home)
        self._wait_ready(self.startup_timeout)
        return self.spark_master_url

    def _launch_spark_worker(self, node: str, home: Path) -> None:
        dirs = self.host_dirs(node)
        argv = daemons.spark_command(
            home, daemons.SPARK_WORKER, "--host", node, "--cores", str(self.size.spark_cores),
            "--memory", self.size.spark_memory, "--work-dir", str(dirs.data / "spark-work"), self.spark_master_url,
        )  # fmt: skip
        self._launch(node, daemons.SPARK_WORKER, argv, home)

    def stop_spark(self) -> None:
        """Stop the Spark standalone master and workers (and their executors)."""
        info = self._started()
        for (host, role), process in list(self._processes.items()):
            if role in (daemons.SPARK_MASTER.name, daemons.SPARK_WORKER.name):
                process.terminate()
                process.wait(timeout=30)
                del self._processes[(host, role)]
        self.info = HostsInfo(**{**asdict(info), "spark_nodes": []})
        self._write_info()

    # -- inspection

    def container_processes(self, app_id: str | None = None) -> list[ContainerProcess]:
        """The processes of YARN containers on every host (of ``app_id`` only, if given)."""
        return container_processes(self.workdir / "hosts", app_id)

    def container_logs(self, app_id: str | None = None) -> dict[str, ContainerLogs]:
        """Where each container's stdout and stderr are, on every host, by container id."""
        return container_logs([self.host_dirs(node).container_logs for node in self.nodes], app_id)

    def host_of_container(self, container_id: str) -> str:
        """The host whose NodeManager ran ``container_id``."""
        for node in self.nodes:
            if any(self.host_dirs(node).container_logs.glob(f"application_*/{container_id}")):
                return node
        raise ClusterError(f"no host ran container {container_id}")

    def status(self) -> dict[str, Any]:
        """Whether the hosts are up and serve, their addresses, processes and memory."""
        if self.info is None or not self.network.exists():
            return {"running": False, "workdir": str(self.workdir)}
        not_ready = self.readiness()
        network = self.network
        processes = {host: network.pids(host) for host in network.hosts}
        return {
            "running": True,
            "ready": not_ready is None,
            **({"waiting_for": not_ready} if not_ready else {}),
            **asdict(self._started()),
            "processes": {host: len(pids) for host, pids in processes.items()},
            "rss_mb": round(sum(rss_mb(pid) for pids in processes.values() for pid in pids)),
        }


# ----------------------------------------------------------------------- CLI


def _announce(cluster: HostCluster) -> str:
    """What ``up`` prints: the hosts, the addresses, how to submit from the gateway."""
    info = cluster._started()
    me = shlex.quote(str(Path(__file__).resolve()))
    workdir = shlex.quote(info.workdir)
    lines = [f"# {host:<9} {address}" for host, address in info.hosts.items()]
    lines += [
        f"# HDFS {cluster.fs_default_fs} (WebHDFS {cluster.webhdfs_url}), YARN {cluster.rm_url}",
        f"# ready in {info.startup_seconds} s; details: {cluster.info_file}",
        "# a shell on the gateway, HADOOP_CONF_DIR set (names resolve there, not on this machine):",
        f"#   python3 {me} run --workdir {workdir} gateway -- bash",
        f"# files to HDFS: python3 {me} hdfs --workdir {workdir} -- -put build/dist/tfbs-env.tar.gz /dist/",
        "# then, on the gateway, in the checkout: scripts/submit_yarn.sh <stage> -- --config conf/<yours>.yaml",
        f"# stop: python3 {me} down --workdir {workdir}",
        *(f"export {key}={shlex.quote(value)}" for key, value in cluster.env().items()),
    ]
    if info.realm:
        user = info.users[0]
        lines += [
            f"# Kerberos realm {info.realm}: log in as {user} (keytabs of {', '.join(info.users)} in {cluster.kdc.folder}/keytabs)",
            f"#   kinit -kt {shlex.quote(str(cluster.keytab(user)))} {cluster.kdc.principal(user)}",
            f"#   or: export TFBS_PRINCIPAL={cluster.kdc.principal(user)} TFBS_KEYTAB={shlex.quote(str(cluster.keytab(user)))}",
        ]
    return "\n".join(lines)


def parse_args(args: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("up", "down", "status", "run", "hdfs"))
    parser.add_argument("--workdir", required=True, type=Path, help="the hosts' configuration, data and logs")
    parser.add_argument("--nodes", type=int, default=3, help="up: hosts with a DataNode and a NodeManager")
    parser.add_argument("--spark-home", type=Path, help="up: also a Spark standalone master and workers, from here")
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE_DIR, help="holds lib/, the class path")
    parser.add_argument("--secure", action="store_true", help="up: Kerberos (a KDC on master, keytabs for --users)")
    parser.add_argument("--users", default="alice", help="up --secure: the tenants, comma-separated")
    parser.add_argument("host", nargs="?", help="run: the host to run COMMAND on")
    args = list(sys.argv[1:] if args is None else args)
    split = args.index("--") if "--" in args else len(args)
    options = parser.parse_intermixed_args(args[:split])
    options.command = args[split + 1 :]
    return options


def main(args: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code (``status``: 0 only when all serve)."""
    options = parse_args(args)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    cluster = HostCluster(
        options.workdir, nodes=options.nodes, cache_dir=options.cache_dir,
        secure=options.secure, users=options.users.split(","),
    )  # fmt: skip
    try:
        if options.action == "up":
            cluster.start()
            if options.spark_home:
                cluster.start_spark(options.spark_home)
            print(_announce(cluster), flush=True)
            return 0
        if options.action == "down":
            cluster.stop()
            return 0
        if options.action == "run":
            if not options.host:
                raise ClusterError("run: name a host: run --workdir DIR gateway -- COMMAND")
            argv = options.command or ["bash"]
            return cluster.run(options.host, argv, env=cluster.host_env(), cwd=os.getcwd()).returncode
        if options.action == "hdfs":
            return cluster.run(GATEWAY, cluster.hdfs_shell(options.command), env=cluster.host_env()).returncode
        status = cluster.status()
        print(json.dumps(status, indent=2))
        return 0 if status.get("ready") else 1
    except ClusterError as error:
        log.error("%s", error)
        return 1


if __name__ == "__main__":
    sys.exit(main())
