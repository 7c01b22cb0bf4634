"""Hadoop's secure mode on the hosts: Kerberos for every daemon and client, tokens for containers.

Standard library only. What :mod:`hosts` adds to each host's configuration
when the cluster is secure, and the principals each daemon's keytab holds:

* every RPC authenticated by Kerberos and encrypted (``hadoop.rpc.protection
  privacy``), service-level authorization on;
* HDFS block tokens, and SASL on the DataNodes' data transfer
  (``dfs.data.transfer.protection privacy``), so DataNodes need no
  privileged ports; every daemon's web endpoints, WebHDFS included,
  through SPNEGO (``HTTP/*`` principals) and over HTTPS alone
  (``dfs.http.policy`` and ``yarn.http.policy`` ``HTTPS_ONLY``; the
  cluster's authority and key stores are :mod:`host_tls`'s), so neither
  SPNEGO's cookies nor WebHDFS's delegation tokens cross the network in
  clear;
* each daemon on its own principal, from a keytab of its own that its
  Unix user alone reads (:mod:`service_users`; the host's configuration
  names it as ``${tfbs.daemon.keytab}``); containers get delegation tokens
  from the application (``HADOOP_TOKEN_FILE_LOCATION``), never a keytab;
* delegation tokens to be renewed every ``token_renew_s`` seconds, so a
  test sees a run outlive several renewals;
* tenants apart: the HDFS superuser is the NameNode's own user (``nn``)
  alone, no tenant in its group; each tenant gets ``/user/<tenant>`` (700)
  and the namespace's root is open to all but sticky, as ``/tmp`` is
  (:func:`tenant_folders`); YARN's ACLs on (:data:`YARN_ADMINS` alone
  administer it, the tenants may submit to the one queue and administer
  nothing), so a tenant can neither kill nor view another's application.

Service principals name their host as the hosts name it (``nn/master``),
fixed rather than ``_HOST``, so a client that reaches the NameNode by
address (this machine's own namespace) asks for the same principal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import host_daemons as daemons

#: YARN's administrators (``yarn.admin.acl``): the ResourceManager's own user, no tenant.
YARN_ADMINS = "rm"

#: The HDFS superuser: the NameNode's login user (the short name of ``nn/<host>``).
HDFS_SUPERUSER = "nn"

#: The Java system property that names a daemon's keytab. The two daemons of a host share its
#: configuration but not a keytab (each its own, readable by its Unix user alone): every keytab
#: setting reads ``${tfbs.daemon.keytab}``, which Hadoop's configuration takes from the JVM.
DAEMON_KEYTAB = "tfbs.daemon.keytab"
#: The same for a daemon's TLS key store (``ssl-server.xml``, :mod:`host_tls`).
DAEMON_KEYSTORE = "tfbs.daemon.keystore"


@dataclass(frozen=True)
class Security:
    """A secure cluster's settings: the realm, the clients' ``krb5.conf``, the users and how long tokens last."""

    realm: str
    krb5_conf: Path
    users: tuple[str, ...]
    token_renew_s: int = 3600


def daemon_principals(role: daemons.Role, host: str, address: str) -> list[str]:
    """The principals (without realm) of ``role``'s daemon on ``host``: what its keytab holds.

    ``HTTP/<host>`` and ``HTTP/<address>``: SPNEGO for clients that name the
    host and for those that reach it by address. Both daemons of a host
    hold them, with the same key (:meth:`kdc.Kdc.keytab`).
    """
    return [f"{role.service}/{host}", f"HTTP/{host}", f"HTTP/{address}"]


def daemon_options(keytab: Path, keystore: Path) -> list[str]:
    """The JVM options that name a daemon's own keytab and key store, which its host's configuration refers to."""
    return [f"-D{DAEMON_KEYTAB}={keytab}", f"-D{DAEMON_KEYSTORE}={keystore}"]


def client_settings(security: Security, master: str) -> dict[str, dict[str, str]]:
    """What a client of the secure cluster needs to know (file name -> properties)."""
    realm = security.realm
    return {
        "core-site.xml": {
            "hadoop.security.authentication": "kerberos",
            "hadoop.security.authorization": "true",
            "hadoop.rpc.protection": "privacy",
            # Short names without a default realm: a container's JVM has no krb5.conf to name one.
            "hadoop.security.auth_to_local": "\n".join(
                [f"RULE:[{parts}:$1@$0](.*@{re.escape(realm)})s/@.*//" for parts in (1, 2)] + ["DEFAULT"]
            ),
        },
        "hdfs-site.xml": {
            "dfs.http.policy": "HTTPS_ONLY",
            "dfs.namenode.https-address": f"{master}:{daemons.NAMENODE_HTTPS_PORT}",
            "dfs.namenode.kerberos.principal": f"nn/{master}@{realm}",
            "dfs.datanode.kerberos.principal": f"dn/_HOST@{realm}",
            "dfs.block.access.token.enable": "true",
            "dfs.data.transfer.protection": "privacy",
            # AES after the SASL handshake: SASL's own DIGEST-MD5 privacy (3DES/RC4) moves the
            # 0.6 GB YARN archive to a NodeManager in minutes instead of seconds.
            "dfs.encrypt.data.transfer.cipher.suites": "AES/CTR/NoPadding",
        },
        "yarn-site.xml": {
            # Clients learn the scheme here too: Spark's application master filters its UI for
            # the ResourceManager's proxy at this address.
            "yarn.http.policy": "HTTPS_ONLY",
            "yarn.resourcemanager.webapp.https.address": f"{master}:{daemons.RESOURCEMANAGER_HTTPS_PORT}",
            "yarn.resourcemanager.principal": f"rm/{master}@{realm}",
            "yarn.nodemanager.principal": f"nm/_HOST@{realm}",
        },
    }


def server_settings(security: Security, master: str) -> dict[str, dict[str, str]]:
    """A secure host's daemon settings (file name -> properties), on top of :func:`client_settings`."""
    client = client_settings(security, master)
    keytab = f"${{{DAEMON_KEYTAB}}}"  # each daemon's own (daemon_options)
    renew_ms = str(security.token_renew_s * 1000)
    # Tenants are no Unix users of the hosts: each its own group and no other (none is in supergroup).
    groups = ";".join(f"{user}={user}" for user in security.users)
    tenants = ",".join(security.users)
    return {
        "core-site.xml": {
            **client["core-site.xml"],
            "hadoop.user.group.static.mapping.overrides": f"{groups};",
            # Every daemon's web endpoints (UIs, REST, JMX, container logs) through SPNEGO too.
            "hadoop.http.filter.initializers": "org.apache.hadoop.security.AuthenticationFilterInitializer",
            "hadoop.http.authentication.type": "kerberos",
            "hadoop.http.authentication.simple.anonymous.allowed": "false",
            "hadoop.http.authentication.kerberos.principal": "*",
            "hadoop.http.authentication.kerberos.keytab": keytab,
        },
        "hdfs-site.xml": {
            **client["hdfs-site.xml"],
            "dfs.namenode.keytab.file": keytab,
            "dfs.datanode.keytab.file": keytab,
            "dfs.datanode.https.address": f"0.0.0.0:{daemons.DATANODE_HTTPS_PORT}",
            "dfs.web.authentication.kerberos.principal": "*",
            "dfs.web.authentication.kerberos.keytab": keytab,
            # SASL on data transfer stands for the privileged ports Hadoop's launcher would need (jsvc).
            "ignore.secure.ports.for.testing": "true",
            "dfs.namenode.delegation.token.renew-interval": renew_ms,
        },
        "yarn-site.xml": {
            **client["yarn-site.xml"],
            "yarn.resourcemanager.keytab": keytab,
            "yarn.nodemanager.keytab": keytab,
            "yarn.nodemanager.webapp.https.address": f"0.0.0.0:{daemons.NODEMANAGER_HTTPS_PORT}",
            "yarn.resourcemanager.delegation.token.renew-interval": renew_ms,
            # Applications' ACLs (Spark's view and modify ACLs) and the queues' enforced.
            "yarn.acl.enable": "true",
            "yarn.admin.acl": YARN_ADMINS,
        },
        "capacity-scheduler.xml": {
            # A queue's ACL adds to its parent's, whose default is everyone: the root's say no one (" ").
            "yarn.scheduler.capacity.root.acl_submit_applications": " ",
            "yarn.scheduler.capacity.root.acl_administer_queue": " ",
            "yarn.scheduler.capacity.root.default.acl_submit_applications": tenants,
            "yarn.scheduler.capacity.root.default.acl_administer_queue": " ",
        },
    }


def tenant_folders(users: tuple[str, ...]) -> list[tuple[str, str, str]]:
    """What the HDFS superuser sets up for the tenants at start: (path, owner, mode) in order.

    The root stays the superuser's, sticky and open to all (shared archives
    go there, and no tenant can remove another's folder); each tenant's home
    (its data and runs; Spark on YARN stages each application there) is the
    tenant's alone.
    """
    homes = [(f"/user/{user}", user, "700") for user in users]
    return [("/", HDFS_SUPERUSER, "1777"), ("/user", HDFS_SUPERUSER, "755"), *homes]


def java_options(security: Security) -> list[str]:
    """What a JVM of the cluster (a daemon, a client) needs to find the realm."""
    return [f"-Djava.security.krb5.conf={security.krb5_conf}", "-Dsun.security.krb5.disableReferrals=true"]
