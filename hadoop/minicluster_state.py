"""What a mini cluster (:mod:`minicluster`) is: its work dir, the state a start leaves, its paths and addresses.

Standard library only, like :mod:`minicluster`. The starting and stopping
(:class:`minicluster.MiniCluster`) build on it, as the cluster of hosts
builds on :class:`host_state.HostClusterState`; the watching
(:mod:`minicluster_watch`) reads it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from jvm import ClusterError

LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class ClusterInfo:
    """What ``DIR/cluster.json`` holds about a started cluster."""

    pid: int
    #: start time of the JVM (see `start_ticks`): tells it from a later process with the same pid
    pid_start_ticks: int
    workdir: str
    conf_dir: str
    log_file: str
    java_home: str
    fs_default_fs: str
    webhdfs_url: str
    rm_url: str
    nm_url: str
    ports: dict[str, int]
    startup_seconds: float


class MiniClusterState:
    """A mini cluster's work dir and ``cluster.json``.

    Parameters
    ----------
    workdir
        Folder of the cluster's state, configuration and logs.
    """

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.info: ClusterInfo | None = None
        if self.info_file.is_file():
            self.info = ClusterInfo(**json.loads(self.info_file.read_text()))

    @property
    def conf_dir(self) -> Path:
        """The client configuration: HADOOP_CONF_DIR and YARN_CONF_DIR."""
        return self.workdir / "conf"

    @property
    def info_file(self) -> Path:
        """``DIR/cluster.json``."""
        return self.workdir / "cluster.json"

    @property
    def log_file(self) -> Path:
        """Output of the cluster JVM."""
        return self.workdir / "minicluster.log"

    def started(self) -> ClusterInfo:
        """The started cluster's record; a :class:`ClusterError` when none was started here."""
        if self.info is None:
            raise ClusterError(f"no mini cluster was started in {self.workdir}")
        return self.info

    @property
    def pid(self) -> int:
        """Process id of the cluster JVM."""
        return self.started().pid

    @property
    def fs_default_fs(self) -> str:
        """``hdfs://127.0.0.1:<port>``."""
        return self.started().fs_default_fs

    @property
    def webhdfs_url(self) -> str:
        """NameNode HTTP address serving ``/webhdfs/v1``."""
        return self.started().webhdfs_url

    @property
    def rm_url(self) -> str:
        """ResourceManager web address (UI and ``/ws/v1/cluster``)."""
        return self.started().rm_url

    @property
    def nm_url(self) -> str:
        """NodeManager web address (``/ws/v1/node``, container logs)."""
        return self.started().nm_url

    @property
    def ports(self) -> dict[str, int]:
        """The loopback port of each name in :data:`minicluster.PORT_NAMES`."""
        return dict(self.started().ports)

    def env(self) -> dict[str, str]:
        """Environment for Hadoop, YARN and Spark clients of this cluster.

        SPARK_LOCAL_IP keeps Spark's driver on loopback: the host name may
        resolve to 127.0.0.1 while Spark would otherwise advertise eth0.
        """
        info = self.started()
        return {
            "HADOOP_CONF_DIR": info.conf_dir,
            "YARN_CONF_DIR": info.conf_dir,
            "JAVA_HOME": info.java_home,
            "SPARK_LOCAL_IP": LOOPBACK,
        }
