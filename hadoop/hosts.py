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
import json
import logging
import os
import secrets
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from types import TracebackType
from typing import Any

import host_daemons as daemons
from containers import ContainerLogs, ContainerProcess, container_logs, container_processes
from host_launch import HostLaunch
from host_layout import DEFAULT_SIZE, DEFAULT_STARTUP_TIMEOUT, GATEWAY, OUTSIDER, HostsInfo, layout, node_names
from host_readiness import HostReadiness
from jvm import DEFAULT_CACHE_DIR, ClusterError, ensure_classpath, ensure_daemon_classes, find_java_home
from kdc import REALM
from netns import free_subnet, require_namespaces
from procs import rss_mb
from secure_conf import HDFS_SUPERUSER, tenant_folders
from service_users import check_searchable, ensure_service_users

__all__ = [
    "DEFAULT_SIZE",
    "DEFAULT_STARTUP_TIMEOUT",
    "GATEWAY",
    "OUTSIDER",
    "HostCluster",
    "HostsInfo",
    "layout",
    "node_names",
]

log = logging.getLogger("hosts")


class HostCluster(HostLaunch, HostReadiness):
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

    # -- life cycle (names and addresses: HostClusterState; daemons: HostLaunch; readiness: HostReadiness)

    def start(self) -> HostsInfo:
        """Make the hosts, format HDFS, start every daemon and wait until all serve.

        Raises
        ------
        ClusterError
            No root or no namespaces (naming what is missing), no JDK or
            Maven, a secure cluster's work dir its daemons' users cannot
            reach (naming the folder in the way), or a daemon that does not
            serve in time (with its log's end).
        """
        require_namespaces()
        secure, users, token_renew_s = self._secure
        if secure:
            check_searchable(self.workdir)  # before anything is made: the daemons' users must reach it
        started = time.monotonic()
        java_home = find_java_home()
        ensure_daemon_classes(ensure_classpath(self.cache_dir))  # before the hosts exist: Maven needs the network
        self._stop_leftovers()
        shutil.rmtree(self.workdir / "hosts", ignore_errors=True)
        self.conf_dir.mkdir(parents=True, exist_ok=True)
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
                self._make_service_users()
                self._start_kdc()
                self._make_tls()
            self._write_client_conf()
            for host in hosts:
                self._write_host_conf(host.name)
            log.info("hosts up: %s", ", ".join(f"{host.name} {host.address}" for host in hosts))
            self._format_hdfs()
            for host, role in self._hadoop_daemons():
                self._launch(host, role, self._daemon_command(host, role))
            self._wait_ready(self.startup_timeout)
            if secure:
                self._set_up_tenants()
        except BaseException:
            self.stop()
            raise
        self.info = HostsInfo(**{**asdict(self.info), "startup_seconds": round(time.monotonic() - started, 1)})
        self._write_info()
        log.info(
            "cluster of hosts ready in %.1f s: %s, YARN %s", self.info.startup_seconds, self.fs_default_fs, self.rm_url
        )
        return self.info

    def _make_service_users(self) -> None:
        """Secure mode: the daemons' Unix users (:mod:`service_users`), and a work dir they can pass through."""
        self.workdir.chmod(0o711)
        ensure_service_users(sorted({role.unix_user for _, role in self._hadoop_daemons()}))

    def _set_up_tenants(self) -> None:
        """Secure mode: as the HDFS superuser, the root open to all but sticky and each tenant's home its own (700).

        What an administrator does for tenants (:func:`secure_conf.tenant_folders`),
        through WebHDFS (``curl``, :meth:`web_client`): a JVM per command would take seconds each.
        """
        env = {**os.environ, **self.login(HDFS_SUPERUSER, daemons.MASTER)}
        for path, owner, mode in tenant_folders(tuple(self._started().users)):
            for operation in ("MKDIRS", f"SETOWNER&owner={owner}", f"SETPERMISSION&permission={mode}"):
                url = f"{self.webhdfs_url}/webhdfs/v1{path}?op={operation}"
                done = subprocess.run(
                    [*self.web_client(), "-X", "PUT", "-w", "\n%{http_code}", url],
                    env=env, capture_output=True, text=True, timeout=30,
                )  # fmt: skip
                body, _, code = done.stdout.rpartition("\n")
                if done.returncode != 0 or code != "200":
                    raise ClusterError(f"PUT {url} as {HDFS_SUPERUSER}: {code} {body or done.stderr.strip()}")

    def _stop_leftovers(self) -> None:
        """A cluster of this work dir left running by a killed process goes first."""
        if self.info is not None:
            self.stop()

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
        master URL, ``spark://master:7077``. Master, workers and every
        application authenticate with a secret drawn here
        (:attr:`spark_secret_file`, mode 600; :meth:`env` names it) and
        encrypt their connections: without it, whoever reaches the master
        could run code on the workers. One secret for all: a standalone
        cluster serves one tenant.
        """
        home = Path(spark_home).resolve()
        self.spark_secret_file.unlink(missing_ok=True)
        # Created private: no moment where another user could read it.
        secret = os.open(self.spark_secret_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(secret, "w") as out:
            out.write(secrets.token_hex(32) + "\n")
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
        self.spark_secret_file.unlink(missing_ok=True)

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
            f"# web endpoints over HTTPS alone: {' '.join(map(shlex.quote, cluster.web_client()))} {cluster.rm_url}/ws/v1/cluster",
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
