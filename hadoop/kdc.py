"""A Kerberos KDC for a cluster on one machine: MIT krb5 (Debian's ``krb5-kdc``), a realm of its own.

Standard library only. The database, the configuration, the keytabs and the
log live in one folder; :meth:`Kdc.start` runs ``krb5kdc`` in the
foreground of a process the caller places (on the ``master`` host of
:mod:`hosts`). Principals get random keys (``addprinc -randkey``) and are
written to a keytab once: writing one again would give it a new key and
void the keytabs made before.

Clients read :attr:`Kdc.krb5_conf` (``KRB5_CONFIG`` for MIT's tools and
libraries, ``-Djava.security.krb5.conf`` for Java). It names the KDC by
address and turns hostname canonicalization off, so a client that reaches
the hosts by address (this machine's own namespace) asks for the same
service principals (``nn/master@REALM``) as one on a host that resolves
their names.
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from jvm import ClusterError

#: The realm of a cluster on one machine.
REALM = "TFBS.LOCAL"
KDC_PORT = 88


def require_krb5() -> None:
    """Fail naming the Debian packages when MIT Kerberos's tools are missing.

    Raises
    ------
    ClusterError
        If ``krb5kdc``, ``kdb5_util``, ``kadmin.local`` or ``kinit`` is not on PATH.
    """
    tools = {"krb5kdc": "krb5-kdc", "kdb5_util": "krb5-kdc", "kadmin.local": "krb5-admin-server", "kinit": "krb5-user"}
    missing = sorted({package for tool, package in tools.items() if shutil.which(tool) is None})
    if missing:
        raise ClusterError(f"Kerberos needs MIT krb5: apt-get install {' '.join(missing)}")


class Kdc:
    """A realm's KDC and its principals, in ``folder``.

    Parameters
    ----------
    folder
        Database, configuration, keytabs, log.
    address
        Where the KDC listens (its host's address).
    realm
        The realm.
    """

    def __init__(self, folder: Path, address: str, realm: str = REALM) -> None:
        self.folder = Path(folder)
        self.address = address
        self.realm = realm

    @property
    def krb5_conf(self) -> Path:
        """The clients' ``krb5.conf``."""
        return self.folder / "krb5.conf"

    @property
    def kdc_conf(self) -> Path:
        """The KDC's own ``kdc.conf``."""
        return self.folder / "kdc.conf"

    def env(self) -> dict[str, str]:
        """What MIT's tools need to find this realm: ``KRB5_CONFIG``, ``KRB5_KDC_PROFILE``."""
        return {"KRB5_CONFIG": str(self.krb5_conf), "KRB5_KDC_PROFILE": str(self.kdc_conf)}

    def create(self) -> None:
        """Write the configuration and create the realm's database (a random master key)."""
        require_krb5()
        shutil.rmtree(self.folder, ignore_errors=True)
        (self.folder / "keytabs").mkdir(parents=True)
        for folder in (self.folder, self.folder / "keytabs"):
            folder.chmod(0o711)  # others (the daemons' users) reach krb5.conf and their own keytabs, list nothing
        self.kdc_conf.write_text(
            "[kdcdefaults]\n"
            f"  kdc_ports = {KDC_PORT}\n  kdc_tcp_ports = {KDC_PORT}\n"
            "[realms]\n"
            f"  {self.realm} = {{\n"
            f"    database_name = {self.folder / 'principal'}\n"
            f"    key_stash_file = {self.folder / 'stash'}\n"
            f"    acl_file = {self.folder / 'kadm5.acl'}\n"
            "    max_life = 1d\n    max_renewable_life = 7d\n"
            "    supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal\n"
            "  }\n"
            "[logging]\n"
            f"  kdc = FILE:{self.folder / 'kdc.log'}\n"
        )
        self.krb5_conf.write_text(
            "[libdefaults]\n"
            f"  default_realm = {self.realm}\n"
            "  dns_lookup_kdc = false\n  dns_lookup_realm = false\n"
            # Service principals as the servers name themselves (nn/master), from any client.
            "  dns_canonicalize_hostname = false\n  rdns = false\n"
            "  udp_preference_limit = 1\n"  # TCP: Java's and MIT's clients alike
            "  ticket_lifetime = 1d\n  renew_lifetime = 7d\n  forwardable = true\n"
            "[realms]\n"
            f"  {self.realm} = {{\n    kdc = {self.address}:{KDC_PORT}\n  }}\n"
        )
        (self.folder / "kadm5.acl").write_text(f"*/admin@{self.realm} *\n")
        self._run(["kdb5_util", "-r", self.realm, "create", "-s", "-P", secrets.token_hex(16)])

    def command(self) -> list[str]:
        """The KDC's command line (foreground), for the caller to start where it belongs."""
        return ["krb5kdc", "-n", "-r", self.realm]

    def keytab(self, name: str, principals: Sequence[str]) -> Path:
        """Create ``principals`` (``nn/master``, ``alice``; the realm is added) if new and write them to one keytab.

        Returns
        -------
        Path
            ``<folder>/keytabs/<name>.keytab``, mode 600.
        """
        path = self.folder / "keytabs" / f"{name}.keytab"
        known = set(self._run(["kadmin.local", "-r", self.realm, "-q", "listprincs"]).split())
        for principal in map(self.principal, principals):
            if principal not in known:
                self._run(["kadmin.local", "-r", self.realm, "-q", f"addprinc -randkey {principal}"])
        # The keys as made: a principal in two keytabs (a host's HTTP/, for two daemons) keeps one key.
        wanted = " ".join(map(self.principal, principals))
        self._run(["kadmin.local", "-r", self.realm, "-q", f"ktadd -norandkey -k {path} {wanted}"])
        path.chmod(0o600)
        return path

    def principal(self, name: str) -> str:
        """``name@REALM``."""
        return name if "@" in name else f"{name}@{self.realm}"

    def _run(self, argv: list[str]) -> str:
        done = subprocess.run(argv, capture_output=True, text=True, env={**_base_env(), **self.env()}, timeout=60)
        if done.returncode != 0 or "error" in done.stderr.lower():
            raise ClusterError(f"{' '.join(argv[:3])}: {done.stderr.strip() or done.stdout.strip()}")
        return done.stdout


def _base_env() -> dict[str, str]:
    import os

    return {key: os.environ[key] for key in ("PATH", "HOME", "LANG") if key in os.environ}
