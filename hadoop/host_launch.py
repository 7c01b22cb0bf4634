"""Starting the daemons of a cluster of hosts (:mod:`hosts`): their configuration, the KDC, HDFS's format, each JVM.

Standard library only.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import host_daemons as daemons
from host_state import HostClusterState
from host_tls import client_ssl, make_cluster_tls, server_ssl
from jvm import LOG4J_PROPERTIES, ClusterError, ensure_classpath, ensure_daemon_classes, site_xml
from kdc import KDC_PORT
from secure_conf import client_settings, java_options, server_settings, service_principals


class HostLaunch(HostClusterState):
    """Writes the hosts' configuration and launches each daemon on its host (:class:`hosts.HostCluster` waits for them)."""

    size: daemons.NodeSize

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

    def _make_tls(self) -> None:
        """Secure mode: a new authority and a key store for each host with web endpoints (:mod:`host_tls`)."""
        tls = self.tls
        assert tls is not None
        shutil.rmtree(tls.folder, ignore_errors=True)
        daemon_hosts = {where for where, _ in self._hadoop_daemons()}
        hosts = {host: address for host, address in self._started().hosts.items() if host in daemon_hosts}
        make_cluster_tls(tls.folder, hosts, Path(self._started().java_home))

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
        tls = self.tls
        if tls is not None:
            files["ssl-client.xml"] = client_ssl(tls)
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
        tls = self.tls
        if tls is not None:
            files |= {"ssl-server.xml": server_ssl(tls, host), "ssl-client.xml": client_ssl(tls)}
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
        classes = ensure_daemon_classes(lib)
        return daemons.hadoop_command(java, lib, classes, self.host_dirs(host), role, *args, jvm_options=options)

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
        if role is not None and role.spark:
            env[daemons.SPARK_SECRET_ENV] = self.spark_secret_file.read_text().strip()
        if self.security is not None:
            env["KRB5_CONFIG"] = str(self.kdc.krb5_conf)
        return env

    def _launch_spark_worker(self, node: str, home: Path) -> None:
        dirs = self.host_dirs(node)
        argv = daemons.spark_command(
            home, daemons.SPARK_WORKER, "--host", node, "--cores", str(self.size.spark_cores),
            "--memory", self.size.spark_memory, "--work-dir", str(dirs.data / "spark-work"), self.spark_master_url,
        )  # fmt: skip
        self._launch(node, daemons.SPARK_WORKER, argv, home)
