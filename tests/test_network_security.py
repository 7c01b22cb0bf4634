"""Nothing of a run is open on the network (issue 13).

On one machine nothing of a run listens beyond loopback except TF's own
gRPC servers (one port per TF node; TF hard-codes their all-interfaces
bind). TFoS's reservation exchange takes only messages signed with the
run's secret and unpickles nothing else. Neither that secret nor any TFoS
manager authkey ends in a log or a file of the run.

The training run is the one ``test_tfos.py`` also checks (the
``tfos_training`` fixture of ``netwatch.py``), watched while it runs: its
process tree's listening sockets sampled every second, and its secrets
recorded by a spy in the driver, in a file of the test's own.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import re
import secrets
import socket
import stat
import struct
import time
import urllib.request
from pathlib import Path
from urllib.error import HTTPError

import pytest
from netwatch import (
    assert_no_secret_written,
    assert_nothing_beyond_loopback,
    is_refusal,
    listening_sockets,
)

from tfbs.errors import ConfigError
from tfbs.launch import LOOPBACK, network_conf
from tfbs.session import _check_security
from tfbs.web_ui import UI_KEY, bearer_token, token_path

# ---------------------------------------------------------------------------
# The reservation exchange: signed, bound, and nothing unpickled unsigned
# ---------------------------------------------------------------------------


class _Plant:
    """A pickle whose loading creates ``path``: the proof that something was unpickled."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return (Path.touch, (self.path,))


@pytest.fixture
def tfos_untouched(monkeypatch):
    """Undo, after the test, the node-side patches that unpickling an address installs."""
    from tensorflowonspark import TFManager, TFSparkNode, reservation, util

    monkeypatch.setattr(reservation, "Client", reservation.Client)
    monkeypatch.setattr(TFManager, "TFManager", TFManager.TFManager)
    monkeypatch.setattr(util, "get_ip_address", util.get_ip_address)
    node_logger = logging.getLogger(TFSparkNode.__name__)
    monkeypatch.setattr(node_logger, "filters", list(node_logger.filters))
    return reservation


@pytest.fixture
def server(tfos_untouched):
    """A sealed reservation server for two nodes on loopback, as TFoS gets it in the driver (driver_reservations)."""
    from tensorflowonspark import reservation

    from tf_models.tfos.tfos_patches import driver_reservations

    with driver_reservations(LOOPBACK):
        server = reservation.Server(2)
    address = server.start()
    yield server, address
    server.stop()


def _raw_tfos_message(message: object) -> bytes:
    """``message`` framed as TFoS's own client sends it: length, then the bare pickle."""
    data = pickle.dumps(message)
    return struct.pack(">I", len(data)) + data


def _sealed_conversation(address: tuple[str, int], secret: bytes, message: object) -> bytes:
    """A client's side of a sealed conversation sending ``message``, as bytes on the wire (replayable)."""
    from tf_models.tfos.reservation import CHANNEL, HELLO
    from tf_models.tfos.sealed import connect_sealed

    sent = []

    class Recording(socket.socket):
        def sendall(self, data, *args):  # type: ignore[override]
            sent.append(bytes(data))
            return super().sendall(data, *args)

    sock = Recording(socket.AF_INET, socket.SOCK_STREAM)
    sock.connect(address)
    with contextlib.suppress(Exception):  # a wrong secret is refused at the handshake
        sealed = connect_sealed(sock, secret, CHANNEL, HELLO, within_s=5)
        sealed.send(pickle.dumps(message))
        sealed.receive(within_s=5)
    sock.close()
    return b"".join(sent)


def _answer(address: tuple[str, int], data: bytes) -> bytes:
    """Send ``data`` on a fresh connection and return everything the server sends back."""
    with socket.create_connection(address, timeout=10) as sock:
        sock.sendall(data)
        received = b""
        try:
            while chunk := sock.recv(4096):
                received += chunk
        except ConnectionResetError:
            pass
        return received


def test_sealed_reservations_bind_one_interface_and_print_no_secret(server):
    from tf_models.tfos.reservation import HiddenBytes, ReservationClient

    reservations, address = server
    assert address == (LOOPBACK, address[1])
    listening = [item for item in listening_sockets(os.getpid()) if item.port == address[1]]
    assert [item.ip for item in listening] == [LOOPBACK]
    # What TFoS logs or formats shows neither the secret nor an authkey.
    key = HiddenBytes(b"k" * 32)
    for shown in (repr(address), str(address), f"{address}", repr({"authkey": key}), str({"a": key})):
        assert "k" * 8 not in shown and reservations.secret.hex() not in shown and "secret" not in shown
    assert bytes(pickle.loads(pickle.dumps(key))) == b"k" * 32

    first, second = ReservationClient(address), ReservationClient(address)
    assert first.register({"executor_id": 0, "authkey": key}) == "OK"
    assert first._request("QUERY") is False
    assert second.register({"executor_id": 1}) == "OK"
    nodes = first.await_reservations()
    assert [node["executor_id"] for node in nodes] == [0, 1]
    assert bytes(nodes[0]["authkey"]) == b"k" * 32
    first.close()
    second.close()


@pytest.mark.parametrize("sender", ["tfos_pickle", "wrong_secret", "replayed", "oversized"])
def test_a_caller_without_the_secret_is_refused_and_nothing_is_unpickled(server, tmp_path, caplog, sender):
    from tf_models.tfos.reservation import ReservationClient

    reservations, address = server
    planted = tmp_path / "planted"
    message = {"type": "QINFO", "data": _Plant(planted)}
    # The payload is live: loading it creates the file.
    pickle.loads(pickle.dumps(_Plant(planted)))
    assert planted.exists()
    planted.unlink()
    if sender == "replayed":
        # A node's whole conversation, recorded on the wire, then sent again.
        data = _sealed_conversation(address, reservations.secret, {"type": "QUERY"})
    else:
        data = {
            "tfos_pickle": lambda: _raw_tfos_message(message),
            "wrong_secret": lambda: _sealed_conversation(address, b"x" * 32, message),
            "oversized": lambda: b"n" * 32 + struct.pack(">I", 1 << 30) + pickle.dumps(message),
        }[sender]()

    node = ReservationClient(address)
    node.register({"executor_id": 0, "authkey": b"secret-authkey!!"})
    node.close()
    caplog.clear()
    reply = _answer(address, data)
    # Refused: the connection closed; nothing answered (a replayed hello gets a fresh nonce and a sealed "ok",
    # under keys the replayer does not have: the request after it does not open).
    assert reply == b"" or (sender == "replayed" and len(reply) == 32 + 4 + 2 + 16)
    time.sleep(0.2)
    assert not planted.exists()
    assert "refused a connection from" in caplog.text
    # The server still serves a node that has the secret.
    client = ReservationClient(address)
    assert [node["executor_id"] for node in client.get_reservations()] == [0]
    client.close()


def test_a_stalled_caller_holds_up_no_node(server):
    """Each connection is served apart: one that sends nothing does not delay a node's registration."""
    from tf_models.tfos.reservation import ReservationClient

    _, address = server
    with socket.create_connection(address):  # connected, silent
        started = time.monotonic()
        node = ReservationClient(address)
        assert node.register({"executor_id": 0}) == "OK"
        node.close()
        assert time.monotonic() - started < 2


def test_tfos_own_client_gets_no_node_records(server, tfos_untouched):
    """TFoS's unpatched client (what any caller without the secret can run) learns nothing."""
    _, address = server
    client = tfos_untouched.Client((address[0], address[1]))
    with pytest.raises(Exception, match="socket closed|reset by peer"):
        client.get_reservations()
    client.close()


def test_unpickling_the_address_installs_the_node_patches(server, monkeypatch):
    import socket as sockets

    from tensorflowonspark import TFManager, TFSparkNode, reservation, util

    from tf_models.tfos.reservation import HiddenBytes
    from tf_models.tfos.tfos_patches import LocalManager, NodeReservationClient

    _, sent = server
    address = pickle.loads(pickle.dumps(sent))  # as a node task's closure is loaded
    assert tuple(address) == tuple(sent) and bytes(address.secret) == bytes(sent.secret)
    assert reservation.Client is NodeReservationClient
    assert TFManager.TFManager is LocalManager
    # The node registers the address of its route to the driver (here: loopback).
    monkeypatch.delenv("SPARK_LOCAL_IP", raising=False)
    assert util.get_ip_address() == LOOPBACK
    authkey = b"\x00'\"\\k" * 4

    # TFoS's ps manager is "remote", which TFoS binds to every interface: here a Unix socket.
    # A fork holds the listening sockets this process had when it forked (some closed here since).
    ours = {item.port for item in listening_sockets(os.getpid()) if item.pid == os.getpid()}
    manager = TFManager.start(authkey, ["control", "error"], "remote")
    try:
        assert isinstance(manager.address, str)
        # No TCP port of its own.
        assert {item.port for item in listening_sockets(manager._process.pid)} <= ours
        # TFoS records the ps manager as (host, port); the node registers its socket's path.
        monkeypatch.setattr(TFSparkNode.TFSparkNode, "mgr", manager)
        client = reservation.Client(address)
        client.register({"executor_id": 0, "job_name": "ps", "addr": ("192.0.2.7", 1), "authkey": authkey})
        [node] = client.get_reservations()
        client.close()
        assert node["addr"] == manager.address and node["hostname"] == sockets.gethostname()
        # ... and its authkey hidden, in every copy of the record.
        assert isinstance(node["authkey"], HiddenBytes) and bytes(node["authkey"]) == authkey
        assert "<redacted>" in repr(node) and repr(authkey)[2:-1] not in repr(node)
    finally:
        manager.shutdown()


def test_a_node_registers_spark_local_ip_else_its_route_to_the_driver(monkeypatch):
    from tf_models.tfos import tfos_patches

    monkeypatch.delenv("SPARK_LOCAL_IP", raising=False)
    assert tfos_patches.node_address(LOOPBACK) == LOOPBACK
    assert tfos_patches.node_address("localhost") == LOOPBACK
    monkeypatch.setenv("SPARK_LOCAL_IP", "192.0.2.9")
    assert tfos_patches.node_address(LOOPBACK) == "192.0.2.9"


@pytest.mark.parametrize("authkey", [bytes(range(256)), b"it's", b'say "k"', b"both ' and \" \\'"])
def test_the_node_record_tfos_logs_before_registering_shows_no_authkey(tfos_untouched, caplog, authkey):
    from tensorflowonspark import TFSparkNode

    from tf_models.tfos.tfos_patches import install_node_patches

    install_node_patches(LOOPBACK)
    install_node_patches(LOOPBACK)  # idempotent: one filter
    node_logger = logging.getLogger(TFSparkNode.__name__)
    assert len(node_logger.filters) == 1
    record = {"executor_id": 0, "port": 1, "authkey": authkey, "addr": ("127.0.0.1", 2)}
    with caplog.at_level(logging.INFO):
        node_logger.info(f"TFSparkNode.reserve: {record}")  # as TFoS logs it (str.format)
    [line] = [r.getMessage() for r in caplog.records if r.name == TFSparkNode.__name__]
    assert line == "TFSparkNode.reserve: {'executor_id': 0, 'port': 1, 'authkey': <redacted>, 'addr': ('127.0.0.1', 2)}"


# ---------------------------------------------------------------------------
# Spark's own services
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("master", ["local[2]", "local-cluster[4,1,1024]", "yarn", "spark://master:7077"])
def test_the_network_policy_holds_no_secret(master):
    # Secrets are drawn per session (build_session) or by Spark itself (YARN), never kept in a policy.
    assert [key for key in network_conf(master) if "secret" in key.lower()] == []


def test_a_yarn_session_with_any_protection_off_is_refused_before_it_starts(caplog):
    secure = network_conf("yarn") | {"spark.master": "yarn"}
    _check_security(secure, allow_insecure=False)  # nothing to say
    for key in secure.keys() - {"spark.master"}:
        with pytest.raises(ConfigError, match=rf"^spark.conf: {re.escape(key)} off on YARN: other tenants"):
            _check_security({**secure, key: "false"}, allow_insecure=False)
    _check_security({k: v for k, v in secure.items() if k != "spark.authenticate"}, allow_insecure=True)
    assert "spark.authenticate off (spark.allow_insecure)" in caplog.text
    _check_security({"spark.master": "local[2]"}, allow_insecure=False)  # one machine: loopback instead


def test_a_local_session_listens_on_loopback_only(spark):
    jvm = spark.sparkContext._gateway.proc.pid
    listeners = listening_sockets(jvm)
    assert len(listeners) >= 3  # RPC, block manager, UI at least
    assert {item for item in listeners if not item.loopback} == set()
    assert spark.sparkContext.uiWebUrl.startswith(f"http://{LOOPBACK}:")


def _page(url: str, token: str | None) -> int:
    """The HTTP status ``url`` answers, with ``token`` as the bearer or none."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as page:
            return page.status
    except HTTPError as refused:
        return refused.code


def test_the_web_ui_opens_only_with_the_session_s_token(spark):
    sc = spark.sparkContext
    token = token_path(sc.applicationId)
    assert stat.S_IMODE(token.stat().st_mode) == 0o600 and stat.S_IMODE(token.parent.stat().st_mode) == 0o700
    url = f"{sc.uiWebUrl}/jobs/"
    assert _page(url, None) == 403
    assert _page(url, bearer_token(secrets.token_bytes(32), "tfbs")) == 403  # signed with another key
    assert _page(url, token.read_text()) == 200
    # The key went to the JVM through py4j, not on its command line.
    key = sc.getConf().get(UI_KEY)
    assert len(key) == 43
    assert key not in Path(f"/proc/{sc._gateway.proc.pid}/cmdline").read_text()


# ---------------------------------------------------------------------------
# A real training run: what listened, and what was written
# ---------------------------------------------------------------------------


def test_training_listens_on_nothing_beyond_loopback(tfos_training):
    """(a) One ps, two workers, the chief: four tunnel agents on loopback, TF's servers in private networks."""
    _, run = tfos_training
    assert run.returncode == 0, run.output[-4000:]
    assert run.listeners.samples >= 10
    assert_nothing_beyond_loopback(run, num_nodes=4)
    # Executor JVMs and PySpark workers were sampled too (the ps manager has no TCP port).
    processes = " ".join(item.process for item in run.listeners.seen)
    assert "CoarseGrainedExecutorBackend" in processes and "pyspark.daemon" in processes


def test_another_user_of_the_machine_gets_nothing_from_the_training(tfos_training):
    """(b) ``nobody`` connects to every port the run listened on, as it listened: nothing answers it,
    but Spark's refusal (the session's secret is drawn per run, on no command line)."""
    _, run = tfos_training
    assert run.returncode == 0, run.output[-4000:]
    answers = run.listeners.answers
    assert len(answers) == len(run.listeners.seen)
    answered = {f"{item.process} {item.ip}:{item.port}": answer[:80] for item, answer in answers.items()}
    assert [name for name, answer in answered.items() if not is_refusal(answer)] == [], answered
    # Spark's web UIs refused their page too: the driver's, the local-cluster's master's and its four workers'.
    web_uis = [name for name, answer in answered.items() if answer.startswith(b"HTTP/1.1 403 ")]
    assert len(web_uis) == 6 and all(name.startswith("java") for name in web_uis), answered
    assert any(is_refusal(answers[item]) and item.process.startswith("java") for item in answers)  # Spark's RPC
    jvms = [line for line in run.listeners.command_lines if "java" in line.split(" ", 1)[0]]
    assert len(jvms) >= 5  # the driver's, four executors'
    assert [line for line in jvms if "spark.authenticate.secret" in line] == []


def test_no_output_of_the_run_names_a_secret(tfos_training):
    """(c) The reservation secret and the four manager authkeys are in no log or file of the run."""
    run_dir, run = tfos_training
    assert run.returncode == 0, run.output[-4000:]
    executor_logs = list((run_dir / "spark-home" / "work").glob("app-*/*/stderr"))
    assert len(executor_logs) == 4
    # TFoS's node records were logged, with their keys redacted.
    assert "'authkey': <redacted>" in "".join(p.read_text(errors="replace") for p in executor_logs)
    (export,) = run_dir.glob("models/*/export/saved_model.pb")  # the one model version
    assert export.stat().st_size > 0
    assert_no_secret_written(run, [run_dir], num_nodes=4)
