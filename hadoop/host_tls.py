"""TLS for the secure hosts' web endpoints: a certificate authority per cluster, a key store per host.

Standard library only; OpenSSL's command line makes the keys and
certificates (milliseconds, where a JVM per ``keytool`` step would take
seconds on every start), the JDK's ``keytool`` the Java trust store (a
PKCS #12 file of OpenSSL 3.0 carries no Java trust attribute, so Java would
read it as empty). What :mod:`hosts` gives each daemon and client:

* ``ca.pem``: the cluster's authority, made at each start; what ``curl
  --cacert`` and other clients verify the daemons against;
* ``<host>.p12``: a host's key and certificate (its name and address as
  subject alternative names, so clients that reach it by either verify),
  signed by the authority; :mod:`host_launch` gives each daemon of the host
  a copy of its own (``<host>-<service>.p12``, 600, the daemon's Unix
  user's), which ``ssl-server.xml`` names through the daemon's JVM;
* ``truststore.p12``: the authority for Java clients (``ssl-client.xml``).

The key stores are their owners' alone (mode 600); the authority and the
trust store are public; the store password sits in the XML files that name
the stores, as Hadoop reads it.
"""

from __future__ import annotations

import os
import secrets
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from secure_conf import DAEMON_KEYSTORE

#: How long the certificates last: longer than any cluster runs.
DAYS = 30


@dataclass(frozen=True)
class ClusterTls:
    """Where a cluster's authority, key stores and trust store are, and the password of the stores."""

    folder: Path

    @property
    def password(self) -> str:
        """The stores' password (drawn at the cluster's start)."""
        return (self.folder / "store-password").read_text().strip()

    @property
    def ca_file(self) -> Path:
        """The authority's certificate (PEM): what clients verify the daemons against."""
        return self.folder / "ca.pem"

    @property
    def truststore(self) -> Path:
        """The authority as a Java trust store (PKCS #12)."""
        return self.folder / "truststore.p12"

    def keystore(self, host: str) -> Path:
        """``host``'s key and certificate chain (PKCS #12)."""
        return self.folder / f"{host}.p12"

    def daemon_keystore(self, host: str, service: str) -> Path:
        """The copy of ``host``'s key store that its daemon ``service`` (``nn``) reads."""
        return self.folder / f"{host}-{service}.p12"


def _openssl(*args: str, folder: Path, env: Mapping[str, str] | None = None) -> None:
    done = subprocess.run(["openssl", *args], cwd=folder, env=env, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"openssl {args[0]} failed: {done.stderr.strip()}")


def make_cluster_tls(folder: Path, hosts: Mapping[str, str], java_home: Path) -> ClusterTls:
    """An authority, a key store for each of ``hosts`` (name -> address) and a Java trust store, in ``folder``.

    Raises
    ------
    RuntimeError
        If ``openssl`` or ``keytool`` fails (with its message).
    """
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    (folder / "store-password").write_text(secrets.token_urlsafe(24))
    tls = ClusterTls(folder)
    curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    _openssl("req", "-x509", *curve, "-keyout", "ca.key", "-out", "ca.pem", "-days", str(DAYS),
             "-subj", "/CN=tfbs hosts CA", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign", folder=folder)  # fmt: skip
    password = {**os.environ, "TFBS_STORE_PASSWORD": tls.password}  # never on a command line
    for host, address in hosts.items():
        _openssl("req", *curve, "-keyout", f"{host}.key", "-out", f"{host}.csr", "-subj", f"/CN={host}", folder=folder)
        (folder / f"{host}.ext").write_text(
            f"subjectAltName=DNS:{host},IP:{address}\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n"
        )
        _openssl("x509", "-req", "-in", f"{host}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                 "-days", str(DAYS), "-extfile", f"{host}.ext", "-out", f"{host}.pem", folder=folder)  # fmt: skip
        _openssl("pkcs12", "-export", "-name", host, "-inkey", f"{host}.key", "-in", f"{host}.pem",
                 "-certfile", "ca.pem", "-out", tls.keystore(host).name, "-passout", "env:TFBS_STORE_PASSWORD",
                 folder=folder, env=password)  # fmt: skip
        for leftover in (f"{host}.key", f"{host}.csr", f"{host}.ext"):
            (folder / leftover).unlink()
    keytool = [str(java_home / "bin" / "keytool"), "-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC"]
    done = subprocess.run(
        [*keytool, "-importcert", "-noprompt", "-alias", "tfbs-hosts-ca", "-file", "ca.pem", "-storetype", "pkcs12",
         "-keystore", tls.truststore.name, "-storepass:env", "TFBS_STORE_PASSWORD"],
        cwd=folder, env=password, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"keytool -importcert failed: {done.stdout.strip()} {done.stderr.strip()}")
    (folder / "ca.key").unlink()  # nothing more is signed: no one can add a host to the cluster's trust
    for path in folder.iterdir():
        path.chmod(0o644 if path in (tls.ca_file, tls.truststore) else 0o600)
    return tls


def server_ssl(tls: ClusterTls) -> dict[str, str]:
    """``ssl-server.xml`` of a host's daemons: each daemon's key store, as its JVM names it (``DAEMON_KEYSTORE``)."""
    return {
        "ssl.server.keystore.location": f"${{{DAEMON_KEYSTORE}}}",
        "ssl.server.keystore.type": "pkcs12",
        "ssl.server.keystore.password": tls.password,
        "ssl.server.keystore.keypassword": tls.password,
    }


def client_ssl(tls: ClusterTls) -> dict[str, str]:
    """``ssl-client.xml`` of the cluster's Java clients (``hdfs fsck``, ``swebhdfs://``): the trust store."""
    return {
        "ssl.client.truststore.location": str(tls.truststore),
        "ssl.client.truststore.type": "pkcs12",
        "ssl.client.truststore.password": tls.password,
    }
