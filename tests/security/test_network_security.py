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
import io
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
from conftest import wait_until
from netwatch import (
    answer_as_another_user,
    assert_no_secret_written,
    assert_nothing_beyond_loopback,
    is_refusal,
    listening_sockets,
)

from jobs.common import run_stage
from tfbs.errors import ConfigError
from tfbs.launch import (
    CLUSTER_SECURITY,
    GCM_CIPHER,
    LOOPBACK,
    SECRET_FILE_ENV,
    check_security,
    cluster_secret,
    network_conf,
)
from tfbs.launch.session import spark_session
from tfbs.launch.web_ui import UI_KEY, bearer_token, token_path

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
    wait_until(lambda: "refused a connection from" in caplog.text, "the server's refusal")
    assert not planted.exists()
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
    check_security(secure, allow_insecure=False)  # nothing to say
    switches = [key for key, value in CLUSTER_SECURITY.items() if value == "true"]
    assert len(switches) == 4
    for key in switches:
        with pytest.raises(ConfigError, match=rf"^spark.conf: {re.escape(key)} off on YARN: other tenants"):
            check_security({**secure, key: "false"}, allow_insecure=False)
    # Spark's default cipher, AES/CTR, has no integrity check: refused like encryption off.
    ctr = "spark.network.crypto.cipher=AES/CTR/NoPadding"
    with pytest.raises(ConfigError, match=rf"^spark.conf: {re.escape(ctr)} off on YARN"):
        check_security({**secure, "spark.network.crypto.cipher": "AES/CTR/NoPadding"}, allow_insecure=False)
    check_security({k: v for k, v in secure.items() if k != "spark.authenticate"}, allow_insecure=True)
    assert "with spark.authenticate (spark.allow_insecure)" in caplog.text
    check_security({"spark.master": "local[2]"}, allow_insecure=False)  # one machine: loopback instead


@pytest.mark.parametrize("master", ["yarn", "spark://master:7077"])
def test_rpc_encryption_is_on_with_an_authenticated_cipher_off_one_machine(master):
    policy = network_conf(master)
    assert policy["spark.network.crypto.enabled"] == "true"
    assert policy["spark.network.crypto.cipher"] == GCM_CIPHER == "AES/GCM/NoPadding"
    assert policy["spark.authenticate"] == policy["spark.io.encryption.enabled"] == "true"


@pytest.mark.parametrize("master", ["yarn", "spark://master:7077"])
def test_only_the_submitting_user_and_admins_may_view_or_kill_an_application_off_one_machine(master):
    policy = network_conf(master)
    assert policy["spark.acls.enable"] == "true" and policy["spark.ui.killEnabled"] == "false"
    # No ACL of the policy's own: Spark's default is the submitting user (and spark.admin.acls).
    assert not any(".acls" in key and key != "spark.acls.enable" for key in policy)
    secure = {**policy, "spark.master": master, "spark.authenticate.secret": "s"}
    check_security(secure, allow_insecure=False)
    for key, value in [("spark.ui.view.acls", "alice,*"), ("spark.modify.acls.groups", "*"), ("spark.admin.acls", "*")]:
        with pytest.raises(ConfigError, match=re.escape(f"{key}={value}")):
            check_security({**secure, key: value}, allow_insecure=False)
    with pytest.raises(ConfigError, match=r"spark\.acls\.enable"):
        check_security({**secure, "spark.acls.enable": "false"}, allow_insecure=False)
    check_security({**secure, "spark.admin.acls": "ops"}, allow_insecure=False)  # named admins: fine


def _standalone_stage(tmp_path: Path, *overrides: str) -> tuple[int, list[str]]:
    """A stage that opens a session on a standalone master, run as every job runs (exit code, stderr lines)."""

    def stage(config, args):
        with spark_session(config.spark, app_suffix="-refused"):
            raise AssertionError("a session started")

    argv = ["--config", str(Path(__file__).parents[2] / "conf" / "demo.yaml"), "--set", f"run_dir={tmp_path / 'run'}"]
    for override in ("spark.master=spark://127.0.0.1:9", *overrides):
        argv += ["--set", override]
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = run_stage("test", stage, argv)
    # The job's log lines (INFO, to stderr) come first; the error is the one line that ends it.
    lines = err.getvalue().strip().splitlines()
    assert not any("Traceback" in line for line in lines), lines
    return code, [line for line in lines if line.startswith("error:")] + lines[-1:]


def test_a_standalone_master_without_the_cluster_secret_is_refused_in_one_line(tmp_path, monkeypatch):
    monkeypatch.delenv(SECRET_FILE_ENV, raising=False)
    code, lines = _standalone_stage(tmp_path)
    assert code == 2
    assert lines == 2 * [
        "error: spark.authenticate.secret: spark://127.0.0.1:9 needs the secret its master and workers were started "
        f"with: set {SECRET_FILE_ENV} to the file holding it (make cluster-up prints it), or set "
        "spark.allow_insecure: true to run anyway"
    ]


def test_a_standalone_master_with_a_setting_that_opens_it_is_refused_in_one_line(tmp_path, monkeypatch):
    secret = tmp_path / "secret"
    secret.write_text("s3cret\n")
    secret.chmod(0o600)
    monkeypatch.setenv(SECRET_FILE_ENV, str(secret))
    code, lines = _standalone_stage(tmp_path, "spark.conf={'spark.network.crypto.enabled': 'false'}")
    assert code == 2
    assert lines == 2 * [
        "error: spark.network.crypto.enabled: opens this run on spark://127.0.0.1:9 to anyone on the network "
        "(they could join, read or alter it); remove the setting, or set spark.allow_insecure: true to run anyway"
    ]


def test_the_cluster_secret_is_read_only_from_a_private_file_of_this_user(tmp_path):
    secret = tmp_path / "secret"
    assert cluster_secret({}) is None
    with pytest.raises(ConfigError, match=rf"^{SECRET_FILE_ENV}: .*cannot read the cluster's secret"):
        cluster_secret({SECRET_FILE_ENV: str(secret)})
    secret.write_text(" s3cret \n")
    secret.chmod(0o640)
    with pytest.raises(ConfigError, match=r"must be yours and private \(owner uid \d+, mode 640\): chmod 600 it$"):
        cluster_secret({SECRET_FILE_ENV: str(secret)})
    secret.chmod(0o600)
    assert cluster_secret({SECRET_FILE_ENV: str(secret)}) == "s3cret"
    if os.getuid() == 0:  # another user's file, however private, is not this user's secret
        os.chown(secret, 65534, 65534)
        with pytest.raises(ConfigError, match=r"owner uid 65534, mode 600"):
            cluster_secret({SECRET_FILE_ENV: str(secret)})


@pytest.mark.parametrize(
    ("setting", "named"),
    [
        ({"spark.authenticate": "false"}, "spark.authenticate=false"),
        ({"spark.driver.bindAddress": "0.0.0.0"}, "spark.driver.bindAddress=0.0.0.0"),
        ({"spark.ui.filters": ""}, 'spark.ui.filters=""'),
    ],
)
def test_off_yarn_a_setting_that_weakens_the_policy_is_refused_or_warned_on_every_stage(setting, named, caplog):
    local = {**network_conf("local[2]"), "spark.master": "local[2]"}
    check_security(local, allow_insecure=False)  # the one-machine policy as every local run has it
    with pytest.raises(ConfigError, match=rf"^{re.escape(named)}: opens this run on local\[2\] to anyone"):
        check_security({**local, **setting}, allow_insecure=False)
    with caplog.at_level(logging.WARNING, logger="tfbs"):
        for _stage in range(2):  # each stage builds a session, and each warns
            check_security({**local, **setting}, allow_insecure=True)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [f"Spark on local[2] with {named} (spark.allow_insecure): others on the network may join, "
                        "read or alter this run"] * 2  # fmt: skip


def test_a_local_session_listens_on_loopback_only(spark):
    jvm = spark.sparkContext._gateway.proc.pid
    listeners = listening_sockets(jvm)
    assert len(listeners) >= 3  # RPC, block manager, UI at least
    assert {item for item in listeners if not item.loopback} == set()
    assert spark.sparkContext.uiWebUrl.startswith(f"http://{LOOPBACK}:")


#: A Spark driver with authentication off, as a configuration that opted out would start it:
#: prints its RPC port, then holds until its stdin closes.
_UNAUTHENTICATED_DRIVER = """
import sys
from pyspark.sql import SparkSession
session = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
           .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
           .config("spark.authenticate", "false").getOrCreate())
print(session.sparkContext.getConf().get("spark.driver.port"), flush=True)
sys.stdin.read()
session.stop()
"""


def test_the_spark_rpc_probe_tells_an_unauthenticated_spark_from_a_refusal(spark):
    """The probe's negative control: it can fail. Spark with authentication off answers the
    probe with an RpcFailure too (it could not read the message), and the probe must call that reachable."""
    # The suite's session authenticates (a secret drawn per session): refused.
    secured = answer_as_another_user(LOOPBACK, int(spark.sparkContext.getConf().get("spark.driver.port")))
    assert is_refusal(secured) and b"Expected SaslMessage" in secured, secured[:200]
    import subprocess
    import sys

    env = {**os.environ, "SPARK_LOCAL_IP": LOOPBACK}
    env.pop("PYSPARK_GATEWAY_PORT", None)
    with subprocess.Popen(
        [sys.executable, "-c", _UNAUTHENTICATED_DRIVER],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
    ) as driver:  # fmt: skip
        try:
            port = int(driver.stdout.readline())
            open_answer = answer_as_another_user(LOOPBACK, port)
        finally:
            driver.stdin.close()
            driver.wait(timeout=120)
    # An RpcFailure frame all the same, but from the dispatcher that read the caller's bytes: reachable.
    assert open_answer[8] == 5 and int.from_bytes(open_answer[:8], "big") == len(open_answer), open_answer[:200]
    assert not is_refusal(open_answer), open_answer[:300]


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
    # Judged on the whole answer (a Spark refusal names its authentication handler past 80 bytes).
    opened = [f"{item.process} {item.ip}:{item.port}" for item, answer in answers.items() if not is_refusal(answer)]
    assert opened == [], {name: answered[name] for name in opened}
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
