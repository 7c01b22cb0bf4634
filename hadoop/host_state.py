"""What a cluster of hosts (:mod:`hosts`) knows without starting anything: names, addresses, folders, its realm.

:class:`HostClusterState` is the base of :class:`hosts.HostCluster`: it
reads the cluster from ``DIR/cluster.json`` (:class:`host_layout.HostsInfo`)
and runs commands on its hosts. Standard library only.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import host_daemons as daemons
from host_layout import HostsInfo, layout
from host_tls import ClusterTls
from jvm import ClusterError, ensure_classpath
from kdc import REALM, Kdc
from netns import HostNetwork
from secure_conf import Security, java_options

#: Environment variables a caller's shell or test session may hold that must not reach the hosts' processes.
_CALLER_ONLY_ENV = ("SPARK_LOCAL_IP", "HADOOP_CONF_DIR", "YARN_CONF_DIR", "PYSPARK_GATEWAY_PORT", "SPARK_HOME")


class HostClusterState:
    """Names, addresses, folders and the realm of a cluster of hosts; commands run on its hosts.

    :class:`hosts.HostCluster` sets the attributes below in its constructor.
    """

    workdir: Path
    cache_dir: Path
    info: HostsInfo | None
    #: Secure mode: the environment of each user's ticket, once logged in (see ``get``).
    _tickets: dict[str, dict[str, str]]
    #: The processes this object started, by (host, role name).
    _processes: dict[tuple[str, str], subprocess.Popen[bytes]]

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

    @property
    def tls(self) -> ClusterTls | None:
        """Secure mode: the authority and key stores of the daemons' HTTPS endpoints (:mod:`host_tls`), or None."""
        return ClusterTls(self.workdir / "tls") if self.security is not None else None

    def web_client(self, *, with_ticket: bool = True) -> list[str]:
        """``curl`` for the daemons' web endpoints: in secure mode with SPNEGO and the cluster's authority.

        SPNEGO uses the ticket of the caller's ``KRB5CCNAME`` (see :meth:`login`);
        ``--cacert`` verifies each daemon's certificate against the cluster's
        authority alone, its name or address included.
        """
        tls = self.tls
        if tls is None:
            return ["curl", "-sS"]
        spnego = ["--negotiate", "-u", ":"] if with_ticket else []
        return ["curl", "-sS", *spnego, "--cacert", str(tls.ca_file)]

    def keytab(self, name: str) -> Path:
        """The keytab of a user, or of a daemon (``<host>-<service>``: see :meth:`daemon_keytab`), in secure mode."""
        return self.kdc.folder / "keytabs" / f"{name}.keytab"

    def daemon_keytab(self, host: str, service: str) -> Path:
        """Secure mode: the keytab of the daemon ``service`` (``nn``) of ``host``, its Unix user's alone."""
        return self.keytab(f"{host}-{service}")

    def login(self, user: str, service_host: str | None = None) -> dict[str, str]:
        """Secure mode: ``user``'s ticket, from its keytab, in a cache of its own; the environment that uses it.

        ``KRB5CCNAME`` and ``KRB5_CONFIG`` for MIT's library (hdfs-native,
        ``kinit``), ``JDK_JAVA_OPTIONS`` for every JVM a client starts.
        With ``service_host``, ``user`` is a daemon's service (``nn``) and
        the ticket is ``<user>/<service_host>``'s, from that daemon's keytab.
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
        principal = self.kdc.principal(f"{user}/{service_host}" if service_host else user)
        keytab = self.daemon_keytab(service_host, user) if service_host else self.keytab(user)
        done = subprocess.run(
            ["kinit", "-kt", str(keytab), principal],
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

    def _web_url(self, host: str, http_port: int, https_port: int) -> str:
        if self.security is None:
            return f"http://{self.address(host)}:{http_port}"
        return f"https://{self.address(host)}:{https_port}"

    @property
    def webhdfs_url(self) -> str:
        """The NameNode's web address (``/webhdfs/v1``, ``/jmx``, ``/fsck``), by address; HTTPS in secure mode."""
        return self._web_url(daemons.MASTER, daemons.NAMENODE_HTTP_PORT, daemons.NAMENODE_HTTPS_PORT)

    @property
    def rm_url(self) -> str:
        """The ResourceManager's web address (``/ws/v1/cluster``, ``/proxy``), by address; HTTPS in secure mode."""
        return self._web_url(daemons.MASTER, daemons.RESOURCEMANAGER_HTTP_PORT, daemons.RESOURCEMANAGER_HTTPS_PORT)

    def nm_url(self, host: str) -> str:
        """The web address of ``host``'s NodeManager (``/ws/v1/node``), by address; HTTPS in secure mode."""
        return self._web_url(host, daemons.NODEMANAGER_HTTP_PORT, daemons.NODEMANAGER_HTTPS_PORT)

    @property
    def spark_master_url(self) -> str:
        """``spark://master:7077``: the Spark standalone master, once :meth:`start_spark` ran."""
        return f"spark://{daemons.MASTER}:{daemons.SPARK_MASTER_PORT}"

    @property
    def spark_secret_file(self) -> Path:
        """The Spark standalone cluster's shared secret (mode 600), once :meth:`start_spark` drew it."""
        return self.workdir / "spark-secret"

    def env(self) -> dict[str, str]:
        """Environment of a client on the gateway: the cluster's configuration and JDK (and realm, if secure).

        With a Spark standalone master, also ``TFBS_SPARK_SECRET_FILE``: the
        file of the secret its master and workers share, which a session on
        ``spark://`` needs (``tfbs.launch.session.cluster_secret``).
        """
        info = self._started()
        env = {"HADOOP_CONF_DIR": info.conf_dir, "YARN_CONF_DIR": info.conf_dir, "JAVA_HOME": info.java_home}
        if self.spark_secret_file.is_file():
            env["TFBS_SPARK_SECRET_FILE"] = str(self.spark_secret_file)
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

    def _write_info(self) -> None:
        self.info_file.parent.mkdir(parents=True, exist_ok=True)
        self.info_file.write_text(json.dumps(asdict(self._started()), indent=2) + "\n")
