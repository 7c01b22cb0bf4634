"""The TF network no tenant reaches: sealed connections, private network namespaces, tunnels, the storage gateway.

Each piece on its own, for real (sockets, namespaces, a bucket on the GCS
emulator); the training runs that use them all are test_network_security.py's
(one machine) and test_host_failures.py's (across hosts).
"""

from __future__ import annotations

import contextlib
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tf_models.tfos import private_network
from tf_models.tfos.network_tls import task_name, tunnel_contexts
from tf_models.tfos.sealed import Refused, accept_sealed, connect_sealed
from tf_models.tfos.tunnel import TunnelAgent

REPO = Path(__file__).resolve().parents[2]
SECRET = bytes(range(32))
LABEL = b"tfbs test channel"


def _serve_once(secret: bytes, results: list) -> tuple[socket.socket, threading.Thread]:
    """A sealed server on loopback that answers one message; what happened lands in ``results``."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        client, _ = server.accept()
        try:
            sealed, hello = accept_sealed(client, secret, LABEL, within_s=5)
            message = sealed.receive(within_s=5)
            sealed.send(message.upper())
            results.append(("served", hello, message))
        except (Refused, ConnectionError, TimeoutError) as err:
            results.append(("refused", type(err).__name__))
        finally:
            client.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return server, thread


def test_a_sealed_connection_carries_messages_between_holders_of_the_secret():
    results: list = []
    server, thread = _serve_once(SECRET, results)
    client = connect_sealed(socket.create_connection(server.getsockname()), SECRET, LABEL, b"hello", within_s=5)
    client.send(b"weights")
    assert client.receive(within_s=5) == b"WEIGHTS"
    thread.join(5)
    assert results == [("served", b"hello", b"weights")]


class _Recording(socket.socket):
    """A client socket that keeps a copy of everything it sends."""

    sent = b""

    def sendall(self, data, *args):  # type: ignore[override]
        type(self).sent += bytes(data)
        return super().sendall(data, *args)


@pytest.mark.parametrize("caller", ["wrong_secret", "replayed", "raw_pickle"])
def test_a_caller_without_the_secret_or_replaying_a_conversation_is_refused(caller):
    # A conversation between holders of the secret, recorded on the wire.
    results: list = []
    server, thread = _serve_once(SECRET, results)
    recorder = _Recording(socket.AF_INET, socket.SOCK_STREAM)
    recorder.connect(server.getsockname())
    sealed = connect_sealed(recorder, SECRET, LABEL, b"hello", within_s=5)
    sealed.send(b"weights")
    sealed.receive(within_s=5)
    thread.join(5)

    results.clear()
    server, thread = _serve_once(SECRET, results)
    sock = socket.create_connection(server.getsockname(), timeout=5)
    if caller == "wrong_secret":
        with pytest.raises((Refused, ConnectionError)):
            connect_sealed(sock, bytes(32), LABEL, b"hello", within_s=5)
    elif caller == "replayed":
        sock.sendall(_Recording.sent)  # the same bytes: the server draws a fresh nonce, nothing opens
    else:
        import pickle

        sock.sendall(pickle.dumps({"type": "QINFO"}) * 4)
    thread.join(5)
    assert results == [("refused", "Refused")], results
    sock.close()


def _echo_server(accepted: list | None = None) -> socket.socket:
    """A stand-in for a node's TF server: echoes what it gets, upper-cased, on loopback; counts into ``accepted``."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return
            if accepted is not None:
                accepted.append(client.getpeername())
            with client:
                while data := client.recv(65536):
                    client.sendall(data.upper())

    threading.Thread(target=serve, daemon=True).start()
    return server


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_two_agents_carry_a_tf_connection_and_refuse_an_outsider():
    """Node a's TensorFlow connects to b's virtual address; a's agent carries it to b's, which hands it to b's server."""
    b_server = _echo_server()
    a_listener = socket.create_server(("127.0.0.1", 0))  # b's virtual address inside a's network
    addresses = {"worker:0": ("127.0.0.1", _free_port()), "ps:0": ("127.0.0.1", _free_port())}
    a = TunnelAgent(
        SECRET, "worker:0", addresses["worker:0"], {"ps:0": addresses["ps:0"]}, {"ps:0": a_listener}, 1, socket.socket
    )
    b = TunnelAgent(
        SECRET,
        "ps:0",
        addresses["ps:0"],
        {"worker:0": addresses["worker:0"]},
        {},
        b_server.getsockname()[1],
        socket.socket,
    )
    a.start()
    b.start()
    try:
        with socket.create_connection(a_listener.getsockname(), timeout=10) as tf:
            payload = os.urandom(300_000)  # several frames
            tf.sendall(payload)
            received = b""
            while len(received) < len(payload):
                received += tf.recv(1 << 20)
            assert received == payload.upper()
        # An outsider at b's agent: not a byte back, a closed connection (reset: it left bytes unread); the
        # server never sees it.
        with socket.create_connection(addresses["ps:0"], timeout=10) as outsider:
            outsider.sendall(os.urandom(32) + b"\x00\x00\x00\x40" + os.urandom(64) + b"GET / HTTP/1.0\r\n\r\n")
            answer = b""
            with contextlib.suppress(ConnectionResetError):
                while chunk := outsider.recv(65536):
                    answer += chunk
            assert answer == b""
    finally:
        a.stop()
        b.stop()
        b_server.close()


def test_a_request_sent_in_parts_reaches_a_server_that_answers_only_once_it_has_all():
    """The relay never waits on one side while the other has bytes to carry (a TLS 1.3 session ticket
    arriving after the handshake would hold a blocking read that no data follows)."""
    size = 200_000
    server = socket.create_server(("127.0.0.1", 0))

    def answer_when_whole() -> None:
        client, _ = server.accept()
        with client:
            received = 0
            while received < size and (chunk := client.recv(65536)):
                received += len(chunk)
            client.sendall(b"whole" if received == size else b"short")

    threading.Thread(target=answer_when_whole, daemon=True).start()
    listener = socket.create_server(("127.0.0.1", 0))
    addresses = {"worker:0": ("127.0.0.1", _free_port()), "ps:0": ("127.0.0.1", _free_port())}
    a = TunnelAgent(
        SECRET, "worker:0", addresses["worker:0"], {"ps:0": addresses["ps:0"]}, {"ps:0": listener}, 1, socket.socket
    )
    b = TunnelAgent(SECRET, "ps:0", addresses["ps:0"], {}, {}, server.getsockname()[1], socket.socket)
    a.start()
    b.start()
    try:
        with socket.create_connection(listener.getsockname(), timeout=10) as tf:
            tf.sendall(os.urandom(size // 2))
            time.sleep(0.5)  # the handshake's last records have arrived by now
            tf.sendall(os.urandom(size - size // 2))
            assert tf.recv(16) == b"whole"
    finally:
        a.stop()
        b.stop()
        server.close()


def _tls_exchange(address: tuple[str, int], context: ssl.SSLContext, name: str) -> tuple[str, bytes]:
    """Connect over TLS as ``context`` to ``address`` asking for ``name``, send a line: the version and the answer."""
    raw = socket.create_connection(address, timeout=10)
    with raw, context.wrap_socket(raw, server_hostname=name) as tls:
        tls.sendall(b"weights")
        answer = b""
        while len(answer) < 7 and (chunk := tls.recv(64)):
            answer += chunk
        return str(tls.version()), answer


def test_the_tunnels_speak_tls_1_3_to_holders_of_the_run_s_authority_alone():
    """Probes at a ps agent's address, each with the contexts an agent of some run would have."""
    accepted: list = []
    server = _echo_server(accepted)
    address = ("127.0.0.1", _free_port())
    agent = TunnelAgent(SECRET, "ps:0", address, {}, {}, server.getsockname()[1], socket.socket)
    agent.start()
    try:
        # A node of the same run: TLS 1.3, its bytes reach the ps's server.
        _, as_worker = tunnel_contexts(SECRET, "worker:0")
        assert _tls_exchange(address, as_worker, task_name("ps:0")) == ("TLSv1.3", b"WEIGHTS")
        assert len(accepted) == 1
        # The same node asking for another task at this address: the certificate names ps-0, the client refuses.
        with pytest.raises(ssl.SSLCertVerificationError, match="Hostname mismatch"):
            _tls_exchange(address, as_worker, task_name("worker:1"))
        # A node of another run (another secret): neither side accepts the other's authority.
        _, other_run = tunnel_contexts(bytes(32), "worker:0")
        with pytest.raises(ssl.SSLCertVerificationError, match="certificate verify failed"):
            _tls_exchange(address, other_run, task_name("ps:0"))
        # A client that trusts anything but has no certificate: the agent wants one, nothing gets through.
        bare = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        bare.check_hostname, bare.verify_mode = False, ssl.CERT_NONE
        try:  # TLS 1.3 reports the missing certificate to the client at its first read, or as the end of the stream
            answer = _tls_exchange(address, bare, task_name("ps:0"))[1]
        except (ssl.SSLError, ConnectionError) as err:
            answer = b""
            print("a client without a certificate:", err)
        assert answer == b""
        assert len(accepted) == 1, accepted  # only the run's node ever reached the server
    finally:
        agent.stop()
        server.close()


def test_every_node_derives_the_same_authority_and_a_certificate_of_its_own():
    from cryptography import x509

    from tf_models.tfos import network_tls

    a_key, a_cert = network_tls._authority(SECRET)
    b_key, b_cert = network_tls._authority(SECRET)
    assert a_cert.public_bytes(ssl_der()) == b_cert.public_bytes(ssl_der())  # the same bytes, no exchange
    assert network_tls._authority(bytes(32))[1].public_key() != a_cert.public_key()
    key_1, cert_1, _ = network_tls._node_certificate(SECRET, "worker:1")
    key_2, cert_2, _ = network_tls._node_certificate(SECRET, "worker:1")
    assert key_1 != key_2  # each node draws its own key
    names = x509.load_pem_x509_certificate(cert_1).extensions.get_extension_for_class(x509.SubjectAlternativeName)
    assert names.value.get_values_for_type(x509.DNSName) == ["worker-1.tf-network.invalid"]


def ssl_der():
    from cryptography.hazmat.primitives import serialization

    return serialization.Encoding.DER


_PROBE_CHILD = r"""
import json, os, socket, sys
sys.path.insert(0, sys.argv[1])
from tf_models.tfos import private_network
cluster = {"ps": ["10.9.9.1:1"], "worker": ["10.9.9.2:2"]}
parent, child = socket.socketpair()
report_in, report_out = socket.socketpair()
pid = os.fork()
if pid == 0:
    parent.close()
    private_network.enter(child, cluster, "worker:0")
    server = socket.create_server(("0.0.0.0", 20001))  # what TF does: every interface, of its own network
    interfaces = sorted(name for _, name in socket.if_nameindex())
    report_out.sendall(json.dumps({"interfaces": interfaces, "uid": os.getuid()}).encode().ljust(256))
    connection, _ = server.accept()
    connection.sendall(b"inside")
    os._exit(0)
child.close()
inside = private_network.Inside(parent)
report = json.loads(report_in.recv(256))
fresh = inside.fresh_socket()
fresh.connect(("127.0.0.1", 20001))
report["through_the_handed_socket"] = fresh.recv(16).decode()
report["listeners"] = sorted(inside.listeners)
try:
    socket.create_connection(("127.0.0.1", 20001), timeout=2).close()
    report["from_the_host"] = "reached"
except OSError as err:
    report["from_the_host"] = type(err).__name__
os.waitpid(pid, 0)
print(json.dumps(report))
"""


@pytest.mark.parametrize("user", ["root", "nobody"])
def test_a_node_process_goes_private_and_hands_its_sockets_to_the_watcher(user, code_for_everyone):
    """Root gets a network namespace; anyone else a user namespace around it (a YARN container's user)."""
    import json

    command = [sys.executable, "-c", _PROBE_CHILD, str(code_for_everyone)]
    if user == "nobody":
        command = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *command]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["interfaces"] == ["lo"]
    assert report["uid"] == (0 if user == "root" else 65534)  # its own uid, mapped onto itself
    assert report["listeners"] == ["ps:0"]  # the peer's virtual address, handed to the watcher
    assert report["through_the_handed_socket"] == "inside"
    assert report["from_the_host"] == "ConnectionRefusedError"  # the host's loopback is not the node's


def test_the_virtual_cluster_is_the_same_on_every_node():
    cluster = {"worker": ["10.0.0.6:4712", "10.0.0.7:4713"], "ps": ["10.0.0.5:4711"], "chief": ["10.0.0.8:4714"]}
    assert private_network.virtual_cluster(cluster) == {
        "worker": ["127.0.0.1:20002", "127.0.0.1:20003"],
        "ps": ["127.0.0.1:20001"],
        "chief": ["127.0.0.1:20000"],
    }
    assert private_network.real_addresses(cluster)["worker:1"] == ("10.0.0.7", 4713)


_GATEWAY_CHILD = r"""
import os, socket, sys
sys.path.insert(0, sys.argv[1])
from tfbs import storage
from tfbs.storage.gateway import GATEWAY_FD_ENV
from tfbs.storage.gateway_server import StorageGateway
from tf_models.tfos import private_network
base = sys.argv[2]
parent, child = socket.socketpair()
control_parent, control_child = socket.socketpair()
pid = os.fork()
if pid == 0:
    parent.close()
    private_network.enter(control_child, {"chief": ["127.0.0.1:1"]}, "chief:0")
    os.environ[GATEWAY_FD_ENV] = str(child.fileno())
    storage.write_text(f"{base}/gateway/a.txt", "written from a private network")
    with storage.open_output(f"{base}/gateway/b.bin") as out:
        out.write(bytes(range(256)) * 4096)
    storage.write_text(f"{base}/gateway/a.txt", "and replaced")
    listed = storage.list_files(f"{base}/gateway")
    text = storage.read_text(f"{base}/gateway/a.txt")
    size = len(storage.read_range(f"{base}/gateway/b.bin", 1000, (1 << 20) - 1000))
    print(listed, text, size, flush=True)
    os._exit(0)
child.close()
gateway = StorageGateway(parent).start()
private_network.Inside(control_parent)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def test_a_private_node_reads_and_writes_a_bucket_through_its_watcher(gcs_base):
    """The node process reaches no network; its watcher's gateway does the bucket's reads and writes."""
    done = subprocess.run(
        [sys.executable, "-c", _GATEWAY_CHILD, str(REPO), gcs_base],
        capture_output=True, text=True, timeout=120, env=os.environ,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == (
        f"['{gcs_base}/gateway/a.txt', '{gcs_base}/gateway/b.bin'] and replaced {(1 << 20) - 1000}"
    )
