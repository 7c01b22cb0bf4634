"""Watching a mini cluster (:mod:`minicluster`): whether its JVM lives and serves, its processes, its containers, its log.

Standard library only, like :mod:`minicluster`, whose
:class:`minicluster.MiniCluster` holds a :class:`MiniClusterWatch` of itself
as ``watch``: what the cluster is (its state) and what starts it are the
cluster's; what it looks like while it runs is the watcher's.
"""

from __future__ import annotations

import json
import logging
import subprocess
import time
from dataclasses import asdict
from typing import Any, NamedTuple

from containers import ContainerLogs, ContainerProcess, container_logs, container_processes
from jvm import ClusterError, http_json, tail
from minicluster_state import MiniClusterState
from procs import descendants, is_alive, rss_mb, start_ticks

log = logging.getLogger("minicluster")


class NotReady(NamedTuple):
    """A service of the cluster that does not serve yet."""

    service: str
    reason: str


class MiniClusterWatch:
    """Watches a cluster: alive, serving, its processes, containers and log; starts and stops nothing.

    Parameters
    ----------
    state
        The cluster's work dir and ``cluster.json``, read anew at each call:
        a start or a stop of the cluster shows at once.
    """

    def __init__(self, state: MiniClusterState) -> None:
        self.state = state

    def is_running(self) -> bool:
        """Whether this work dir's cluster JVM is alive.

        A stale cluster.json may name a pid since reused by another process,
        hence the start time check.
        """
        info = self.state.info
        return info is not None and is_alive(info.pid) and start_ticks(info.pid) == info.pid_start_ticks

    def readiness(self) -> NotReady | None:
        """Return the first service not serving yet, or None when all serve.

        HDFS serves when WebHDFS lists ``/`` and the NameNode is out of safe
        mode with a live DataNode; YARN when the ResourceManager has started
        and a NodeManager has registered.
        """
        service = "NameNode"
        try:
            listing = http_json(f"{self.state.webhdfs_url}/webhdfs/v1/?op=LISTSTATUS")
            if "FileStatuses" not in listing:
                return NotReady(service, f"WebHDFS answered {listing}")
            beans = http_json(f"{self.state.webhdfs_url}/jmx?qry=Hadoop:service=NameNode,name=NameNodeInfo")["beans"]
            if not beans or beans[0]["Safemode"]:
                return NotReady(service, "in safe mode")
            service = "DataNode"
            if not json.loads(beans[0]["LiveNodes"]):
                return NotReady(service, "not registered with the NameNode")
            service = "ResourceManager"
            state = http_json(f"{self.state.rm_url}/ws/v1/cluster/info")["clusterInfo"]["state"]
            if state != "STARTED":
                return NotReady(service, f"state {state}")
            service = "NodeManager"
            if not self.running_nodes():
                return NotReady(service, "not registered with the ResourceManager")
        except (OSError, ValueError, KeyError) as error:  # URLError is an OSError
            return NotReady(service, f"{type(error).__name__}: {error}")
        return None

    def running_nodes(self) -> list[dict[str, Any]]:
        """Return the ResourceManager's records of its running NodeManagers."""
        # "nodes" is null, not an empty object, while no node has registered
        nodes: list[dict[str, Any]] = (
            http_json(f"{self.state.rm_url}/ws/v1/cluster/nodes?states=RUNNING")["nodes"] or {}
        ).get("node", [])
        return nodes

    def wait_ready(self, timeout: float, jvm: subprocess.Popen[bytes]) -> None:
        """Poll `readiness` until all services serve, logging each one waited for.

        Parameters
        ----------
        timeout
            Seconds before giving up.
        jvm
            The cluster JVM just launched: its exit ends the wait at once.

        Raises
        ------
        ClusterError
            If the JVM exits or the timeout passes; the message ends with the log's tail.
        """
        deadline = time.monotonic() + timeout
        waiting_for = ""
        while (not_ready := self.readiness()) is not None:
            if jvm.poll() is not None:
                raise ClusterError(
                    f"the mini cluster JVM exited with code {jvm.returncode}; "
                    f"end of {self.state.log_file}:\n{self.logtail()}"
                )
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"mini cluster not ready after {timeout:.0f} s: {not_ready.service} {not_ready.reason}; "
                    f"end of {self.state.log_file}:\n{self.logtail()}"
                )
            if not_ready.service != waiting_for:
                log.info("waiting for the %s", not_ready.service)
                waiting_for = not_ready.service
            time.sleep(0.5)

    def logtail(self, lines: int = 40) -> str:
        """Return the last lines of the cluster JVM's log."""
        try:
            return tail(self.state.log_file.read_text(errors="replace"), lines)
        except OSError:
            return ""

    def processes(self) -> list[int]:
        """Return the cluster JVM and every process of its containers.

        Containers run in sessions of their own (``setsid``) and may outlive a
        dead parent, so besides the JVM's descendants every process marked as a
        container of this work dir is taken (see `container_processes`).
        """
        if not self.is_running():
            return [process.pid for process in self.container_processes()]
        tree = [self.state.pid, *descendants(self.state.pid)]
        return tree + [process.pid for process in self.container_processes() if process.pid not in tree]

    def status(self) -> dict[str, Any]:
        """Return whether the cluster runs and serves, its addresses and its memory use."""
        if not self.is_running():
            return {"running": False, "workdir": str(self.state.workdir)}
        not_ready = self.readiness()
        processes = self.processes()
        return {
            "running": True,
            "ready": not_ready is None,
            **({"waiting_for": f"{not_ready.service}: {not_ready.reason}"} if not_ready else {}),
            **asdict(self.state.started()),
            "processes": len(processes),
            "rss_mb": round(sum(rss_mb(pid) for pid in processes)),
        }

    def container_processes(self, app_id: str | None = None) -> list[ContainerProcess]:
        """Return the processes running in this cluster's YARN containers (see `containers.container_processes`).

        Useful to kill an executor or a Python worker in a failure test.

        Parameters
        ----------
        app_id
            Only this application's containers; all when None.
        """
        return container_processes(self.state.workdir / "data", app_id)

    def container_logs(self, app_id: str | None = None) -> dict[str, ContainerLogs]:
        """Return where each container's stdout and stderr are, by container id.

        The NodeManager spreads containers over its log dirs
        ``data/MiniHadoopClusterManager/yarn-<n>/*-logDir-nm-0_<i>/``; with
        log aggregation off they stay there, so no ``yarn logs`` is needed.

        Parameters
        ----------
        app_id
            Only this application's containers; all when None.
        """
        return container_logs(sorted(self.state.workdir.glob("data/*/yarn-*/*-logDir-nm-*")), app_id)
