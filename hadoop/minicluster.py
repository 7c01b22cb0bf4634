#!/usr/bin/env python3
"""A real single-machine Hadoop 3.5.0 cluster (HDFS + YARN) for tests and demos.

One JVM runs ``org.apache.hadoop.mapreduce.MiniHadoopClusterManager`` (the class
behind ``mapred minicluster``): a NameNode with WebHDFS, one DataNode, a
ResourceManager, one NodeManager and a MapReduce JobHistoryServer, all on
127.0.0.1 and on free ports picked at start.  Every start formats a fresh, empty
HDFS.  The class path (199 jars, ~114 MB) is fetched once with Maven from
``pom.xml`` beside this file.

Standard library only, so it runs before any virtualenv exists::

    python hadoop/minicluster.py start  --workdir DIR [--detach]
    python hadoop/minicluster.py status --workdir DIR
    python hadoop/minicluster.py logs   --workdir DIR [--app APPLICATION_ID]
    python hadoop/minicluster.py stop   --workdir DIR

``DIR/conf`` is a client configuration usable as ``HADOOP_CONF_DIR`` and
``YARN_CONF_DIR``; ``DIR/cluster.json`` describes the running cluster.  From
Python::

    with MiniCluster(workdir) as cluster:
        subprocess.run([...], env={**os.environ, **cluster.env()})
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType

from containers import ContainerLogs, ContainerProcess, application_of
from jvm import (
    DEFAULT_CACHE_DIR,
    HADOOP_VERSION,
    LOG4J_PROPERTIES,
    QUIET_POLLING,
    ClusterError,
    ensure_classpath,
    find_java_home,
    site_xml,
)
from minicluster_state import LOOPBACK, ClusterInfo, MiniClusterState
from minicluster_watch import MiniClusterWatch
from procs import start_ticks, terminate

__all__ = ["ClusterError", "ContainerLogs", "ContainerProcess", "MiniCluster", "Resources", "application_of"]

MAIN_CLASS = "org.apache.hadoop.mapreduce.MiniHadoopClusterManager"
#: -Xmx of the cluster JVM: NameNode, DataNode, ResourceManager, NodeManager and
#: JobHistoryServer share it (idle they take ~500 MB of RSS)
DEFAULT_HEAP = "1g"
#: start-up takes 8-40 s on a 2-core machine, depending on its load
DEFAULT_STARTUP_TIMEOUT = 180.0

#: Ports chosen before the start, so that the client configuration can be
#: written up front.  The DataNode and NodeManager take ephemeral ports: no
#: client configuration names them (the NodeManager's web address is read
#: from the ResourceManager once the node has registered).
PORT_NAMES = (
    "namenode",
    "namenode_http",
    "rm",
    "rm_scheduler",
    "rm_tracker",
    "rm_admin",
    "rm_web",
    "jhs",
    "jhs_web",
    "jhs_admin",
)

log = logging.getLogger("minicluster")


@dataclass(frozen=True)
class Resources:
    """What the one NodeManager offers to YARN.

    YARN only books these figures (the memory checks are off); containers use
    the machine's real memory.  The defaults fit a Spark application with an
    ApplicationMaster and four 512 MB executors (896 MB each with overhead).
    """

    memory_mb: int = 8192
    vcores: int = 8
    #: Spark's 512 MB + 384 MB overhead would round up to 1 GB at YARN's default 1024.
    min_allocation_mb: int = 128


def free_ports(names: Iterable[str]) -> dict[str, int]:
    """Return distinct free loopback ports, one per name.

    All sockets stay bound until every port is picked, so no two names can
    get the same port.
    """
    with ExitStack() as stack:
        sockets = {name: stack.enter_context(socket.socket()) for name in names}
        for sock in sockets.values():
            sock.bind((LOOPBACK, 0))
        return {name: sock.getsockname()[1] for name, sock in sockets.items()}


def _address(ports: Mapping[str, int], name: str) -> str:
    return f"{LOOPBACK}:{ports[name]}"


def server_conf(ports: Mapping[str, int], tmp_dir: Path, resources: Resources) -> dict[str, str]:
    """Hadoop settings given to the daemons with ``-D``.

    Parameters
    ----------
    ports
        Port of each name in `PORT_NAMES`.
    tmp_dir
        Folder for ``hadoop.tmp.dir`` (inside the work dir).
    resources
        Size of the NodeManager.
    """
    return {
        "hadoop.tmp.dir": str(tmp_dir),
        # one DataNode: the default of 3 would leave every block under-replicated
        "dfs.replication": "1",
        # a single-user scratch cluster: any client user name may write anywhere
        "dfs.permissions.enabled": "false",
        # every ResourceManager and JobHistoryServer endpoint on a known loopback
        # port, so that the client configuration can name them
        "yarn.resourcemanager.hostname": LOOPBACK,
        "yarn.resourcemanager.address": _address(ports, "rm"),
        "yarn.resourcemanager.scheduler.address": _address(ports, "rm_scheduler"),
        "yarn.resourcemanager.resource-tracker.address": _address(ports, "rm_tracker"),
        "yarn.resourcemanager.admin.address": _address(ports, "rm_admin"),
        "yarn.resourcemanager.webapp.address": _address(ports, "rm_web"),
        "mapreduce.jobhistory.address": _address(ports, "jhs"),
        "mapreduce.jobhistory.webapp.address": _address(ports, "jhs_web"),
        "mapreduce.jobhistory.admin.address": _address(ports, "jhs_admin"),
        # MiniYARNCluster sizes its NodeManagers from this key (default 4096),
        # not from yarn.nodemanager.resource.memory-mb
        "yarn.minicluster.yarn.nodemanager.resource.memory-mb": str(resources.memory_mb),
        "yarn.nodemanager.resource.cpu-vcores": str(resources.vcores),
        "yarn.scheduler.minimum-allocation-mb": str(resources.min_allocation_mb),
        # a request bigger than the node is refused at submission instead of waiting forever
        "yarn.scheduler.maximum-allocation-mb": str(resources.memory_mb),
        "yarn.scheduler.maximum-allocation-vcores": str(resources.vcores),
        # the queue comes from capacity-scheduler.xml of the yarn-server-tests jar,
        # whose AM share of 0.1 lets only one application run at a time
        "yarn.scheduler.capacity.maximum-am-resource-percent": "0.5",
        # a disk more than 90% full would mark the node unhealthy: no containers
        "yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage": "100.0",
        # JVMs reserve far more virtual memory than YARN's 2.1 ratio allows, and the
        # booked sizes above are not meant as limits
        "yarn.nodemanager.vmem-check-enabled": "false",
        "yarn.nodemanager.pmem-check-enabled": "false",
        # keep finished containers' work dirs for 10 minutes, to read what they left
        "yarn.nodemanager.delete.debug-delay-sec": "600",
        # one JVM, one configuration: the capacity scheduler reads its keys from it too
        **{key: value for properties in QUIET_POLLING.values() for key, value in properties.items()},
    }


def client_conf(ports: Mapping[str, int], server: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """The client configuration files (name -> properties) of ``DIR/conf``.

    MiniHadoopClusterManager's ``-writeConfig`` output is not usable as a
    HADOOP_CONF_DIR (it holds the daemons' own paths and test settings), so
    the client files are written from the chosen ports.
    """
    return {
        "core-site.xml": {"fs.defaultFS": f"hdfs://{_address(ports, 'namenode')}"},
        "hdfs-site.xml": {
            "dfs.replication": "1",
            "dfs.namenode.rpc-address": _address(ports, "namenode"),
            "dfs.namenode.http-address": _address(ports, "namenode_http"),
        },
        "yarn-site.xml": {key: value for key, value in server.items() if key.startswith("yarn.resourcemanager.")},
        "mapred-site.xml": {
            "mapreduce.framework.name": "yarn",
            "mapreduce.jobhistory.address": server["mapreduce.jobhistory.address"],
            "mapreduce.jobhistory.webapp.address": server["mapreduce.jobhistory.webapp.address"],
        },
    }


def java_command(
    java_home: Path, lib: Path, workdir: Path, ports: Mapping[str, int], conf: Mapping[str, str], heap: str
) -> list[str]:
    """The command line of the cluster JVM."""
    command = [
        str(java_home / "bin" / "java"),
        f"-Xmx{heap}",
        # MiniDFSCluster and MiniYARNCluster put every storage, local and log
        # dir under test.build.data; java.io.tmpdir keeps Jetty's files in the work dir
        f"-Dtest.build.data={workdir / 'data'}",
        f"-Djava.io.tmpdir={workdir / 'tmp'}",
        f"-Dlog4j.configuration=file:{workdir / 'log4j.properties'}",
        # IPv4 only, the default of Hadoop's own launch scripts (hadoop-functions.sh)
        "-Djava.net.preferIPv4Stack=true",
        # Without Hadoop's native library the NodeManager sets the permissions of
        # every file it localises with a `chmod` process of its own (19,500 in the
        # YARN archive); launched with vfork, each costs about half (JDK 17).
        "-Djdk.lang.Process.launchMechanism=VFORK",
        "-cp",
        f"{lib}/*",
        MAIN_CLASS,
        "-format",
        "-nnport",
        str(ports["namenode"]),
        "-nnhttpport",
        str(ports["namenode_http"]),
        "-rmport",
        str(ports["rm"]),
        "-jhsport",
        str(ports["jhs"]),
    ]
    for key, value in conf.items():
        command += ["-D", f"{key}={value}"]
    return command


# ------------------------------------------------------------------- cluster


class MiniCluster(MiniClusterState):
    """A Hadoop mini cluster living in one work dir.

    Constructing it starts nothing: it reads ``DIR/cluster.json`` if present,
    so `stop` and its ``watch`` (status, processes, containers, log) work on
    a cluster started by another process.  As a context manager it starts on
    entry and stops on exit.

    Parameters
    ----------
    workdir
        Folder of the cluster's state, configuration and logs.  A start wipes
        the state of the previous run in it.
    cache_dir
        Folder of the class path (see `ensure_classpath`).
    resources
        Size of the NodeManager.
    heap
        ``-Xmx`` of the cluster JVM (all daemons share it).
    startup_timeout
        Seconds to wait for readiness before giving up.
    extra_conf
        More ``-D`` settings for the daemons; they override the defaults.
    """

    def __init__(
        self,
        workdir: str | os.PathLike[str],
        *,
        cache_dir: Path = DEFAULT_CACHE_DIR,
        resources: Resources = Resources(),
        heap: str = DEFAULT_HEAP,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        extra_conf: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(Path(workdir).resolve())
        #: What the cluster looks like while it runs (:class:`minicluster_watch.MiniClusterWatch`).
        self.watch = MiniClusterWatch(self)
        #: The JVM a start launched from this process, reaped by `stop`; None for one started elsewhere.
        self._process: subprocess.Popen[bytes] | None = None
        self.cache_dir = Path(cache_dir)
        self.resources = resources
        self.heap = heap
        self.startup_timeout = startup_timeout
        self.extra_conf = dict(extra_conf or {})

    def start(self) -> ClusterInfo:
        """Start a fresh cluster and wait until HDFS and YARN serve.

        Returns
        -------
        ClusterInfo
            Also written to ``DIR/cluster.json``.

        Raises
        ------
        ClusterError
            If a cluster already runs from this work dir, the class path
            cannot be fetched, or the cluster is not ready within
            ``startup_timeout`` (the message ends with the JVM's log tail).
        """
        if self.watch.is_running():
            raise ClusterError(f"a mini cluster already runs from {self.workdir} (pid {self.pid})")
        java_home = find_java_home()
        lib = ensure_classpath(self.cache_dir)
        started = time.monotonic()
        self._reset_workdir()
        ports = free_ports(PORT_NAMES)
        conf = {**server_conf(ports, self.workdir / "tmp", self.resources), **self.extra_conf}
        for name, properties in client_conf(ports, conf).items():
            (self.conf_dir / name).write_text(site_xml(properties))
        log.info(
            "starting the Hadoop %s mini cluster in %s (HDFS %s, YARN %s)",
            HADOOP_VERSION,
            self.workdir,
            _address(ports, "namenode"),
            _address(ports, "rm"),
        )
        self._process = self._launch(java_command(java_home, lib, self.workdir, ports, conf, self.heap), java_home)
        self.info = ClusterInfo(
            pid=self._process.pid,
            pid_start_ticks=start_ticks(self._process.pid) or 0,
            workdir=str(self.workdir),
            conf_dir=str(self.conf_dir),
            log_file=str(self.log_file),
            java_home=str(java_home),
            fs_default_fs=f"hdfs://{_address(ports, 'namenode')}",
            webhdfs_url=f"http://{_address(ports, 'namenode_http')}",
            rm_url=f"http://{_address(ports, 'rm_web')}",
            nm_url="",
            ports=ports,
            startup_seconds=0.0,
        )
        # written at once, so that `stop` finds the JVM even if waiting is interrupted
        self._write_info()
        try:
            self.watch.wait_ready(self.startup_timeout, self._process)
            nm_url = f"http://{self.watch.running_nodes()[0]['nodeHTTPAddress']}"
        except BaseException:
            self.stop()
            raise
        self.info = ClusterInfo(
            **{**asdict(self.info), "nm_url": nm_url, "startup_seconds": round(time.monotonic() - started, 1)}
        )
        self._write_info()
        log.info(
            "mini cluster ready in %.1f s: %s, YARN %s", self.info.startup_seconds, self.fs_default_fs, self.rm_url
        )
        return self.info

    def _reset_workdir(self) -> None:
        for sub in ("conf", "data", "tmp"):
            shutil.rmtree(self.workdir / sub, ignore_errors=True)
            (self.workdir / sub).mkdir(parents=True)
        self.info_file.unlink(missing_ok=True)
        (self.workdir / "log4j.properties").write_text(LOG4J_PROPERTIES)

    def _launch(self, command: Sequence[str], java_home: Path) -> subprocess.Popen[bytes]:
        env = dict(os.environ)
        # Containers inherit these from the NodeManager (yarn.nodemanager.env-whitelist):
        # launch scripts run $JAVA_HOME/bin/java, and Python code in a container
        # (hdfs_native.Client()) finds the cluster through HADOOP_CONF_DIR.
        env.update(JAVA_HOME=str(java_home), HADOOP_CONF_DIR=str(self.conf_dir), YARN_CONF_DIR=str(self.conf_dir))
        with open(self.log_file, "wb") as output:
            # a session of its own: Ctrl-C in the terminal reaches this script,
            # which then stops the cluster in order, not the JVM directly
            return subprocess.Popen(
                command,
                cwd=self.workdir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def _write_info(self) -> None:
        self.info_file.write_text(json.dumps(asdict(self.started()), indent=2) + "\n")

    def stop(self, grace: float = 10.0) -> None:
        """Stop the cluster and every container process; no-op if none runs.

        SIGTERM first (daemons shut down, executors exit), SIGKILL to whatever
        is left after ``grace`` seconds.

        Raises
        ------
        ClusterError
            If a process survives SIGKILL.
        """
        processes = self.watch.processes()
        if processes:
            log.info("stopping the mini cluster in %s (%d processes)", self.workdir, len(processes))
            started = time.monotonic()
            survivors = terminate(processes, grace)
            if survivors:
                raise ClusterError(f"processes {survivors} of the mini cluster survived SIGKILL")
            log.info("mini cluster stopped in %.1f s", time.monotonic() - started)
        if self._process is not None:
            self._process.wait()  # reap our child; a detached start's JVM is reaped by init
            self._process = None

    def __enter__(self) -> MiniCluster:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()


# ----------------------------------------------------------------------- CLI


def run_foreground(cluster: MiniCluster) -> int:
    """Keep the cluster up until Ctrl-C (or SIGTERM/SIGHUP), then stop it."""
    try:
        while cluster.watch.is_running():
            time.sleep(1.0)
    except KeyboardInterrupt:
        cluster.stop()
        return 0
    log.error("the mini cluster JVM died; end of %s:\n%s", cluster.log_file, cluster.watch.logtail())
    cluster.stop()
    return 1


def _exports(env: Mapping[str, str]) -> str:
    return "\n".join(f"export {key}={shlex.quote(value)}" for key, value in env.items())


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _start(cluster: MiniCluster, detach: bool) -> int:
    if not detach:
        # `make` or a terminal closing sends these: stop the cluster as for Ctrl-C
        # (also while starting, where start() stops what it launched)
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, _raise_interrupt)
    info = cluster.start()
    stop_hint = (
        f"stop: python3 {shlex.quote(str(Path(__file__).resolve()))} stop --workdir {shlex.quote(info.workdir)}"
        if detach
        else "stop: Ctrl-C"
    )
    print(
        f"# HDFS {info.fs_default_fs} (WebHDFS {info.webhdfs_url}), YARN {info.rm_url}, NodeManager {info.nm_url}\n"
        f"# details: {cluster.info_file}; {stop_hint}\n{_exports(cluster.env())}",
        flush=True,  # stdout is a pipe under make: without it nothing shows until the end
    )
    return 0 if detach else run_foreground(cluster)


def _logs(cluster: MiniCluster, app_id: str | None) -> int:
    logs = cluster.watch.container_logs(app_id)
    for container, paths in logs.items():
        print(f"{container}\t{paths.stdout}\t{paths.stderr}")
    return 0 if logs else 1


def parse_args(args: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("start", "status", "stop", "logs"))
    parser.add_argument("--workdir", required=True, type=Path, help="cluster state, conf/ and logs")
    parser.add_argument("--detach", action="store_true", help="start: return once ready, leave it running")
    parser.add_argument("--app", help="logs: only this application id")
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE_DIR, help="holds lib/, the class path")
    parser.add_argument("--nm-memory-mb", type=int, default=Resources.memory_mb, help="memory YARN may book")
    parser.add_argument("--nm-vcores", type=int, default=Resources.vcores, help="vcores YARN may book")
    parser.add_argument("--heap", default=DEFAULT_HEAP, help="-Xmx of the cluster JVM")
    parser.add_argument(
        "--timeout", type=float, default=DEFAULT_STARTUP_TIMEOUT, help="start: seconds to wait for readiness"
    )
    parser.add_argument(
        "-D", dest="conf", action="append", default=[], metavar="KEY=VALUE", help="extra daemon setting"
    )
    return parser.parse_args(args)


def main(args: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code.

    ``status`` exits 0 only when the cluster runs and serves, ``logs`` only
    when it found container logs.
    """
    options = parse_args(args)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    cluster = MiniCluster(
        options.workdir,
        cache_dir=options.cache_dir,
        resources=Resources(memory_mb=options.nm_memory_mb, vcores=options.nm_vcores),
        heap=options.heap,
        startup_timeout=options.timeout,
        extra_conf=dict(setting.split("=", 1) for setting in options.conf),
    )
    try:
        if options.action == "start":
            return _start(cluster, options.detach)
        if options.action == "stop":
            cluster.stop()
            return 0
        if options.action == "logs":
            return _logs(cluster, options.app)
        status = cluster.watch.status()
        print(json.dumps(status, indent=2))
        return 0 if status.get("ready") else 1
    except ClusterError as error:
        log.error("%s", error)
        return 1
    except KeyboardInterrupt:  # during start: start() has stopped what it launched
        return 130


if __name__ == "__main__":
    sys.exit(main())
