"""The daemons of a cluster of hosts: what runs where, with which settings and command line.

Standard library only. Every daemon is a JVM of its own from the class path
the mini cluster uses (Hadoop 3.5.0 from Maven Central) or from PySpark's
jars (Spark standalone), each with the configuration folder of its host.
Every host listens on the standard ports: each has a network of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from jvm import QUIET_POLLING

#: The host of the NameNode, the ResourceManager and a Spark standalone master.
MASTER = "master"
#: Standard ports (Hadoop 3 and Spark defaults, but the NodeManager's RPC port, fixed so a restarted node keeps its id).
NAMENODE_PORT = 8020
NAMENODE_HTTP_PORT = 9870
DATANODE_HTTP_PORT = 9864
RESOURCEMANAGER_HTTP_PORT = 8088
NODEMANAGER_PORT = 8041
NODEMANAGER_HTTP_PORT = 8042
#: The secure cluster's web ports: HTTPS alone (``secure_conf``).
NAMENODE_HTTPS_PORT = 9871
DATANODE_HTTPS_PORT = 9865
RESOURCEMANAGER_HTTPS_PORT = 8090
NODEMANAGER_HTTPS_PORT = 8044
SPARK_MASTER_PORT = 7077
SPARK_MASTER_HTTP_PORT = 8080


@dataclass(frozen=True)
class Role:
    """A kind of daemon: its main class, heap and whether it needs the Spark jars.

    A Hadoop daemon has a Kerberos service (``nn``): on a secure cluster it
    logs in as ``<service>/<host>`` and runs as the Unix user ``tfbs-<service>``.
    """

    name: str
    main_class: str
    heap: str
    spark: bool = False
    service: str = ""

    @property
    def unix_user(self) -> str:
        """Secure mode: the Unix user the daemon runs as (:mod:`service_users`); empty: the cluster's owner.

        One per daemon, not one per system (Hadoop's packages run all of HDFS
        as ``hdfs``): the hosts share this machine's file system, where a
        NodeManager's containers, which run as its user, would otherwise
        reach the master's keytabs, which a real cluster keeps on another disk.
        """
        return f"tfbs-{self.service}" if self.service else ""


NAMENODE = Role("NameNode", "org.apache.hadoop.hdfs.server.namenode.NameNode", "384m", service="nn")
DATANODE = Role("DataNode", "org.apache.hadoop.hdfs.server.datanode.DataNode", "256m", service="dn")
RESOURCEMANAGER = Role(
    "ResourceManager", "org.apache.hadoop.yarn.server.resourcemanager.ResourceManager", "512m", service="rm"
)
#: Hadoop's NodeManager with a local file system that sets permissions without a process per file (hadoop/java).
NODEMANAGER = Role("NodeManager", "local.tfbs.hadoop.NodeManagerMain", "384m", service="nm")
SPARK_MASTER = Role("SparkMaster", "org.apache.spark.deploy.master.Master", "256m", spark=True)
SPARK_WORKER = Role("SparkWorker", "org.apache.spark.deploy.worker.Worker", "256m", spark=True)


@dataclass(frozen=True)
class NodeSize:
    """What each NodeManager offers YARN, and what a Spark standalone worker offers.

    YARN books only memory (the capacity scheduler's default calculator);
    the containers use the machine's real memory. 4 GB fits three
    executors of 768 MB (1,152 MB with overhead), so two hosts still hold
    a training's four executors and its application master after the
    third is lost.
    """

    memory_mb: int = 4096
    vcores: int = 4
    #: Spark's 768 MB + 384 MB overhead would round up to 2 GB at YARN's default 1024.
    min_allocation_mb: int = 128
    spark_cores: int = 2
    spark_memory: str = "3g"


@dataclass(frozen=True)
class HostDirs:
    """The folders of one host under the cluster's work dir."""

    root: Path

    @property
    def conf(self) -> Path:
        """The host's Hadoop configuration (its daemons' and containers' ``HADOOP_CONF_DIR``)."""
        return self.root / "conf"

    @property
    def data(self) -> Path:
        """HDFS storage, NodeManager local dirs, Spark worker dirs: kept when the host restarts."""
        return self.root / "data"

    @property
    def logs(self) -> Path:
        """One log per daemon, and the NodeManager's container logs under ``containers/``."""
        return self.root / "logs"

    @property
    def tmp(self) -> Path:
        """``java.io.tmpdir`` and ``hadoop.tmp.dir``."""
        return self.root / "tmp"

    @property
    def container_logs(self) -> Path:
        """``yarn.nodemanager.log-dirs``."""
        return self.logs / "containers"

    @property
    def namenode(self) -> Path:
        """``dfs.namenode.name.dir``."""
        return self.data / "name"

    @property
    def datanode(self) -> Path:
        """``dfs.datanode.data.dir``."""
        return self.data / "datanode"

    @property
    def nm_local(self) -> Path:
        """``yarn.nodemanager.local-dirs``: localised files and the containers' working folders."""
        return self.data / "nm-local"

    @property
    def nm_recovery(self) -> Path:
        """``yarn.nodemanager.recovery.dir``."""
        return self.data / "nm-recovery"

    def written_by(self, role: Role) -> list[Path]:
        """The folders ``role``'s daemon writes besides ``tmp``: its own on a secure cluster, where it has a user."""
        return {
            NAMENODE.name: [self.namenode],
            DATANODE.name: [self.datanode],
            NODEMANAGER.name: [self.nm_local, self.nm_recovery, self.container_logs],
        }.get(role.name, [])


def client_conf(master: str = MASTER) -> dict[str, dict[str, str]]:
    """The client configuration (file name -> properties): ``HADOOP_CONF_DIR`` of the gateway."""
    return {
        "core-site.xml": {"fs.defaultFS": f"hdfs://{master}:{NAMENODE_PORT}"},
        "hdfs-site.xml": {
            # Three DataNodes: every block on two hosts, so losing one loses nothing.
            "dfs.replication": "2",
            "dfs.namenode.rpc-address": f"{master}:{NAMENODE_PORT}",
            "dfs.namenode.http-address": f"{master}:{NAMENODE_HTTP_PORT}",
        },
        "yarn-site.xml": {"yarn.resourcemanager.hostname": master},
    }


def server_conf(dirs: HostDirs, size: NodeSize, master: str = MASTER) -> dict[str, dict[str, str]]:
    """The configuration of one host's daemons (file name -> properties); all hosts have the same keys."""
    client = client_conf(master)
    return {
        "core-site.xml": {**client["core-site.xml"], "hadoop.tmp.dir": str(dirs.tmp)},
        "hdfs-site.xml": {
            **client["hdfs-site.xml"],
            "dfs.namenode.name.dir": str(dirs.namenode),
            "dfs.datanode.data.dir": str(dirs.datanode),
            # A DataNode silent for 2 x 15 s + 10 heartbeats (3 s) is dead: a
            # minute, where the default 10.5 minutes would outlast every test.
            "dfs.namenode.heartbeat.recheck-interval": "15000",
            "dfs.namenode.safemode.extension": "0",
            **QUIET_POLLING["hdfs-site.xml"],
        },
        "yarn-site.xml": {
            **client["yarn-site.xml"],
            "yarn.nodemanager.address": f"0.0.0.0:{NODEMANAGER_PORT}",
            "yarn.nodemanager.local-dirs": str(dirs.nm_local),
            "yarn.nodemanager.log-dirs": str(dirs.container_logs),
            "yarn.nodemanager.resource.memory-mb": str(size.memory_mb),
            "yarn.nodemanager.resource.cpu-vcores": str(size.vcores),
            "yarn.scheduler.minimum-allocation-mb": str(size.min_allocation_mb),
            # a request bigger than a node is refused at submission instead of waiting forever
            "yarn.scheduler.maximum-allocation-mb": str(size.memory_mb),
            "yarn.scheduler.maximum-allocation-vcores": str(size.vcores),
            # A NodeManager silent for 30 s is lost (default 10 minutes), so a
            # rerun after a host died gets its containers on the hosts left.
            "yarn.nm.liveness-monitor.expiry-interval-ms": "30000",
            # a disk more than 90 % full would mark the node unhealthy: no containers
            "yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage": "100.0",
            # JVMs reserve far more virtual memory than YARN's 2.1 ratio allows; the booked sizes are not limits
            "yarn.nodemanager.vmem-check-enabled": "false",
            "yarn.nodemanager.pmem-check-enabled": "false",
            # finished containers' folders and logs stay an hour, to read what they left (the suite's
            # tests read a run's containers up to half an hour after it, when its session is long)
            "yarn.nodemanager.delete.debug-delay-sec": "3600",
            # A NodeManager restarted on its host keeps what it had localised
            # (the packed environment: a minute of unpacking per node) and its
            # containers' state, as on a cluster that restarts nodes in place.
            "yarn.nodemanager.recovery.enabled": "true",
            "yarn.nodemanager.recovery.dir": str(dirs.nm_recovery),
            # the ResourceManager's store of node attributes, by default in the machine's /tmp,
            # which every cluster of the machine (and every user it runs as) would share
            "yarn.node-attribute.fs-store.root-dir": (dirs.tmp / "node-attribute").as_uri(),
        },
        "capacity-scheduler.xml": {
            "yarn.scheduler.capacity.root.queues": "default",
            "yarn.scheduler.capacity.root.default.capacity": "100",
            "yarn.scheduler.capacity.root.default.maximum-capacity": "100",
            # two applications at once (the default 0.1 admits one application master)
            "yarn.scheduler.capacity.maximum-am-resource-percent": "0.5",
            # One container per node heartbeat: an application's executors
            # spread over the hosts, as on a busy cluster, instead of all
            # landing on the first node to report.
            "yarn.scheduler.capacity.per-node-heartbeat.multiple-assignments-enabled": "false",
            "yarn.scheduler.capacity.node-locality-delay": "-1",
            **QUIET_POLLING["capacity-scheduler.xml"],
        },
    }


def hadoop_command(
    java: Path, lib: Path, classes: Path, dirs: HostDirs, role: Role, *args: str, jvm_options: Sequence[str] = ()
) -> list[str]:
    """The command line of a Hadoop daemon (or ``NameNode -format``) on one host.

    ``lib`` is Hadoop's class path, ``classes`` this project's own daemon
    classes (:func:`jvm.ensure_daemon_classes`).
    """
    return [
        str(java),
        f"-Xmx{role.heap}",
        # daemons mostly wait: the quick compiler alone and the serial collector start them sooner
        "-XX:TieredStopAtLevel=1",
        "-XX:+UseSerialGC",
        "-Djava.net.preferIPv4Stack=true",
        f"-Djava.io.tmpdir={dirs.tmp}",
        f"-Dhadoop.log.dir={dirs.logs}",
        f"-Dlog4j.configuration=file:{dirs.conf / 'log4j.properties'}",
        # Without Hadoop's native library the daemons still start a process for
        # some work (a user's groups, a container's launch); vfork makes each cheaper.
        "-Djdk.lang.Process.launchMechanism=VFORK",
        *jvm_options,
        "-cp",
        f"{dirs.conf}:{classes}:{lib}/*",
        role.main_class,
        *args,
    ]


def spark_command(spark_home: Path, role: Role, *args: str) -> list[str]:
    """The command line of a Spark standalone master or worker: ``bin/spark-class`` (see :func:`daemon_env`)."""
    return [str(spark_home / "bin" / "spark-class"), role.main_class, *args]


#: Spark's protection of a standalone cluster, as its master and workers run
#: it and as ``tfbs.launch.CLUSTER_SECURITY`` asks of every application on
#: it: the same cipher on both ends, AES/GCM for its integrity check. The
#: secret itself goes in the environment (``_SPARK_AUTH_SECRET``), never on
#: a command line, which every user of the machine can read.
SPARK_SECURITY_OPTIONS = (
    "-Dspark.authenticate=true -Dspark.network.crypto.enabled=true "
    "-Dspark.network.crypto.cipher=AES/GCM/NoPadding -Dspark.io.encryption.enabled=true"
)

#: The environment variable a Spark daemon (and the executors it starts) reads its secret from.
SPARK_SECRET_ENV = "_SPARK_AUTH_SECRET"


def daemon_env(
    base: Mapping[str, str], java_home: Path, dirs: HostDirs, spark_home: Path | None, role: Role | None = None
) -> dict[str, str]:
    """A daemon's environment: the machine's basics, nothing of the caller's Spark or Hadoop settings.

    Containers and executors inherit it. A ``SPARK_LOCAL_IP`` from the
    caller (a test session's local Spark binds loopback) would pin them
    to loopback, where no other host reaches them.
    """
    env = {key: base[key] for key in ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "USER", "LOGNAME") if key in base}
    env |= {"JAVA_HOME": str(java_home), "HADOOP_CONF_DIR": str(dirs.conf), "YARN_CONF_DIR": str(dirs.conf)}
    if spark_home is not None:
        # spark-class sets the rest (SPARK_SCALA_VERSION, by which a worker finds the jars of its executors)
        env["SPARK_HOME"] = str(spark_home)
        env["SPARK_LOG_DIR"] = str(dirs.logs)
    if role is not None and role.spark:
        env["SPARK_DAEMON_MEMORY"] = role.heap
        env["SPARK_DAEMON_JAVA_OPTS"] = (
            f"-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Djava.net.preferIPv4Stack=true -Djava.io.tmpdir={dirs.tmp} "
            f"{SPARK_SECURITY_OPTIONS}"
        )
    return env
