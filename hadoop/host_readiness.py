"""Whether a cluster of hosts (:mod:`hosts`) serves: its daemons' web endpoints, polled until they do.

Standard library only.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import time
import urllib.request
from collections.abc import Sequence
from typing import Any

import host_daemons as daemons
from host_state import HostClusterState
from jvm import ClusterError, http_json

log = logging.getLogger("hosts")


class HostReadiness(HostClusterState):
    """The daemons' web endpoints (through SPNEGO in secure mode) and the wait until HDFS, YARN and Spark serve."""

    def get(self, url: str) -> bytes:
        """GET a daemon's web endpoint; in secure mode over verified HTTPS and SPNEGO as the first user.

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
            [*self.web_client(), "-w", "\n%{http_code}", url],
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
