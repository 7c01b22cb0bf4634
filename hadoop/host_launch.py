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
from jvm import LOG4J_PROPERTIES, ClusterError, ensure_classpath, ensure_daemon_classes, shared_copy, site_xml
from kdc import KDC_PORT
from secure_conf import client_settings, daemon_options, daemon_principals, java_options, server_settings
from service_users import ServiceUser, give, run_as, service_user


class HostLaunch(HostClusterState):
    """Writes the hosts' configuration and launches each daemon on its host (:class:`hosts.HostCluster` waits for them)."""

    size: daemons.NodeSize

    def _hadoop_daemons(self) -> list[tuple[str, daemons.Role]]:
        placed = [(daemons.MASTER, daemons.NAMENODE), (daemons.MASTER, daemons.RESOURCEMANAGER)]
        for node in self.nodes:
            placed += [(node, daemons.DATANODE), (node, daemons.NODEMANAGER)]
        return placed

    def _service_user(self, role: daemons.Role) -> ServiceUser | None:
        """The Unix user ``role``'s daemon runs as: its own on a secure cluster (:mod:`service_users`), else None."""
        return service_user(role.unix_user) if self.security is not None and role.unix_user else None

    def _start_kdc(self) -> None:
        """Secure mode: the realm's KDC on ``master``; a keytab for each daemon (its Unix user's alone) and user."""
        kdc = self.kdc
        kdc.create()
        for host, role in self._hadoop_daemons():
            name = self.daemon_keytab(host, role.service).stem
            keytab = kdc.keytab(name, daemon_principals(role, host, self.address(host)))
            give(keytab, self._service_user(role), 0o600)
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
        """Secure mode: a new authority, and a key store for each daemon with web endpoints (:mod:`host_tls`).

        The daemons of a host share its key and certificate; each reads a
        copy of its own (600, its Unix user's), made while the folder is
        still the owner's alone.
        """
        tls = self.tls
        assert tls is not None
        shutil.rmtree(tls.folder, ignore_errors=True)
        daemon_hosts = {where for where, _ in self._hadoop_daemons()}
        hosts = {host: address for host, address in self._started().hosts.items() if host in daemon_hosts}
        make_cluster_tls(tls.folder, hosts, Path(self._started().java_home))
        for host, role in self._hadoop_daemons():
            store = tls.daemon_keystore(host, role.service)
            store.write_bytes(tls.keystore(host).read_bytes())
            give(store, self._service_user(role), 0o600)
        for host in hosts:
            tls.keystore(host).unlink()
        tls.folder.chmod(0o711)  # the daemons reach their stores and the trust store; no one lists the folder

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
            for name, properties in server_settings(security, daemons.MASTER).items():
                files[name] = {**files[name], **properties}
        tls = self.tls
        if tls is not None:
            files |= {"ssl-server.xml": server_ssl(tls), "ssl-client.xml": client_ssl(tls)}
        for name, properties in files.items():
            (dirs.conf / name).write_text(site_xml(properties))
        (dirs.conf / "log4j.properties").write_text(LOG4J_PROPERTIES)
        if security is not None:
            self._give_host_dirs(host)

    def _give_host_dirs(self, host: str) -> None:
        """Secure mode: each daemon's folders its own; the configuration (the stores' password in it) the group's."""
        dirs = self.host_dirs(host)
        for path in dirs.conf.iterdir():
            give(path, None, 0o640, group=True)
        give(dirs.conf, None, 0o750, group=True)
        dirs.tmp.chmod(0o1777)  # every daemon's java.io.tmpdir and hadoop.tmp.dir, as /tmp is
        for where, role in self._hadoop_daemons():
            if where == host:
                for folder in dirs.written_by(role):
                    folder.mkdir(parents=True, exist_ok=True)
                    give(folder, self._service_user(role), 0o700)

    def _daemon_command(self, host: str, role: daemons.Role, *args: str) -> list[str]:
        """A Hadoop daemon's command line on ``host``; in secure mode with Kerberos's settings, as its own user."""
        info = self._started()
        java = Path(info.java_home) / "bin" / "java"
        lib, classes = self._daemon_classpath()
        security, tls, user = self.security, self.tls, self._service_user(role)
        options = []
        if security is not None and tls is not None:
            keytab, keystore = self.daemon_keytab(host, role.service), tls.daemon_keystore(host, role.service)
            options = [*java_options(security), *daemon_options(keytab, keystore)]
        argv = daemons.hadoop_command(java, lib, classes, self.host_dirs(host), role, *args, jvm_options=options)
        return run_as(user, argv) if user is not None else argv

    def _daemon_classpath(self) -> tuple[Path, Path]:
        """Hadoop's jars and this project's daemon classes; in secure mode a copy in the work dir, for the daemons' users."""
        lib = ensure_classpath(self.cache_dir)
        classes = ensure_daemon_classes(lib)
        if self.security is None:
            return lib, classes
        shared = self.workdir / "classpath"
        return shared_copy(lib, shared / lib.name), shared_copy(classes, shared / classes.name)

    def _format_hdfs(self) -> None:
        dirs = self.host_dirs(daemons.MASTER)
        argv = self._daemon_command(daemons.MASTER, daemons.NAMENODE, "-format", "-force", "-nonInteractive")
        env = self._daemon_env(dirs, None, daemons.NAMENODE)
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
        user = self._service_user(role) if role is not None else None
        if user is not None:
            # its own home: a NodeManager's containers, which run as its user, keep their caches there
            env |= {"HOME": str(user.home), "USER": user.name, "LOGNAME": user.name}
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
