"""Mutual TLS 1.3 for the TF network's tunnels: an authority derived from the run's secret, a certificate per node.

Every node of a run holds the run's TF network secret
(:data:`tf_models.tfos.node.TF_NETWORK_SECRET_ARG`). From it each derives
the same authority: an Ed25519 key from HKDF over the secret, and a
self-signed certificate with fixed fields, so every node builds the same
bytes without any exchange. Each node then draws a key of its own and has
the authority sign a certificate naming its task (:func:`task_name`). Its
tunnel agent serves TLS 1.3 with that certificate and wants the peer's,
signed by the same authority; a connecting agent checks that the
certificate names the task it wants. What crosses the network is TLS 1.3
of Python's ``ssl`` (OpenSSL) and nothing of this project's design; a
caller without the secret can neither present a certificate the agents
accept nor pass for one of them.
"""

from __future__ import annotations

import datetime
import ssl
import tempfile
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.x509.oid import NameOID

#: Binds the derived authority to this use of the secret: no other key is derived the same way.
_AUTHORITY_INFO = b"tfbs tf network authority"
#: The authority's fixed validity: its certificate must be the same bytes on every node, whatever its clock.
_AUTHORITY_FROM = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)
_AUTHORITY_TO = datetime.datetime(2100, 1, 1, tzinfo=datetime.UTC)
#: A node's certificate: valid from an hour back (clocks of the hosts apart) for a week (longer than a run).
_NODE_SKEW = datetime.timedelta(hours=1)
_NODE_LIFETIME = datetime.timedelta(days=7)
#: The names of tasks, under a domain no resolver answers for.
_DOMAIN = "tf-network.invalid"


def task_name(task: str) -> str:
    """The name a node's certificate carries for its task: ``worker:1`` -> ``worker-1.tf-network.invalid``."""
    job, index = task.split(":")
    return f"{job}-{index}.{_DOMAIN}"


def _authority(secret: bytes) -> tuple[ed25519.Ed25519PrivateKey, x509.Certificate]:
    """The run's authority: the same key and certificate on every node that holds ``secret``."""
    seed = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_AUTHORITY_INFO).derive(secret)
    key = ed25519.Ed25519PrivateKey.from_private_bytes(seed)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "tfbs tf network")])
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(int.from_bytes(seed[:16], "big") >> 1)
        .not_valid_before(_AUTHORITY_FROM)
        .not_valid_after(_AUTHORITY_TO)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, False, False, False), critical=True
        )  # keyCertSign alone
        .sign(key, None)  # Ed25519 signs without a separate hash (and deterministically)
    )
    return key, certificate


def _node_certificate(secret: bytes, task: str) -> tuple[bytes, bytes, bytes]:
    """A fresh key for ``task``, its certificate signed by the run's authority, and the authority's: PEM each."""
    authority_key, authority = _authority(secret)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, task_name(task))]))
        .issuer_name(authority.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _NODE_SKEW)
        .not_valid_after(now + _NODE_LIFETIME)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(task_name(task))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([x509.ExtendedKeyUsageOID.SERVER_AUTH, x509.ExtendedKeyUsageOID.CLIENT_AUTH]),
            critical=False,
        )
        .sign(authority_key, None)
    )
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())  # fmt: skip
    pem = serialization.Encoding.PEM
    return key_pem, certificate.public_bytes(pem), authority.public_bytes(pem)


def _context(purpose: ssl.Purpose, key_pem: bytes, certificate_pem: bytes, authority_pem: bytes) -> ssl.SSLContext:
    context = ssl.create_default_context(purpose, cadata=authority_pem.decode())
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    context.verify_mode = ssl.CERT_REQUIRED  # a server asks the connecting agent for its certificate too
    # ssl loads a key only from a file: a folder of this process's alone, gone once it is read.
    with tempfile.TemporaryDirectory(prefix="tfbs-tls-") as folder:
        key_file, certificate_file = Path(folder) / "key.pem", Path(folder) / "certificate.pem"
        key_file.touch(mode=0o600)
        key_file.write_bytes(key_pem)
        certificate_file.write_bytes(certificate_pem)
        context.load_cert_chain(certificate_file, key_file)
    return context


def tunnel_contexts(secret: bytes, task: str) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """``task``'s TLS contexts: the one its agent serves peers with, and the one it connects to them with.

    The client context checks the peer's name (:func:`task_name`); the
    server context requires a certificate of the run's authority from
    whoever connects, and sends no session tickets: nothing resumes a
    session here, and a ticket is a record the client's blocking read
    would take for data (:mod:`tf_models.tfos.tunnel`).
    """
    key_pem, certificate_pem, authority_pem = _node_certificate(secret, task)
    server = _context(ssl.Purpose.CLIENT_AUTH, key_pem, certificate_pem, authority_pem)
    server.num_tickets = 0
    client = _context(ssl.Purpose.SERVER_AUTH, key_pem, certificate_pem, authority_pem)
    return server, client
