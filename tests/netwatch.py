"""What a run exposes: the sockets its processes listen on, and where its secrets end up.

Test helpers and one fixture (a pytest plugin of ``conftest.py``), used by
``test_network_security.py`` and ``test_tfos.py``:

* :func:`strategy_runs`: ``tfbs train`` watched under each strategy on the
  same shards, the ps and all-reduce runs on a real ``local-cluster``;
  :func:`tfos_training` is its ps run (ps, two workers, the chief), shared
  by both modules.
* :class:`ListenerSampler` samples, every second, the TCP sockets that a
  process and all its descendants (executor JVMs, PySpark daemons and
  workers, TF processes) listen on.
* :func:`files_naming` searches files for a secret in the forms a log or a
  file would carry it (raw, hex, base64, Python's ``repr``).
* Run as a script, this module runs a Python module (``-m jobs.train ...``)
  as the driver after wrapping TFoS's reservation server so that it records
  the run's reservation secret and every node's manager authkey in a file
  of the test's own (the spy file, outside the run's folder)::

      python tests/netwatch.py SPY_FILE -m jobs.train --config ...
"""

from __future__ import annotations

import base64
import contextlib
import ipaddress
import json
import os
import re
import runpy
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest


@dataclass(frozen=True)
class Listener:
    """One listening TCP socket of a process."""

    pid: int
    process: str
    ip: str
    port: int

    @property
    def loopback(self) -> bool:
        """True for 127.0.0.0/8 and ::1 (also IPv4-mapped)."""
        address = ipaddress.ip_address(self.ip.split("%")[0])
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        return address.is_loopback


def _describe(process: psutil.Process) -> str:
    """``java``/``python`` and the first telling word of its command line."""
    try:
        cmdline = process.cmdline()
    except psutil.Error:
        return "?"
    for word in cmdline[1:]:
        if "." in word and not word.startswith("-") and "/" not in word:
            return f"{Path(cmdline[0]).name} {word}"  # a class or module name
    return " ".join(Path(part).name for part in cmdline[:3])


def _process_tree(root_pid: int) -> list[psutil.Process]:
    """``root_pid`` and its descendants, now (none if it is gone)."""
    try:
        root = psutil.Process(root_pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def listening_sockets(root_pid: int) -> set[Listener]:
    """The TCP sockets ``root_pid`` and its descendants listen on, now."""
    found = set()
    for process in _process_tree(root_pid):
        try:
            connections = process.net_connections(kind="tcp")
        except psutil.Error:
            continue  # gone meanwhile
        for conn in connections:
            if conn.status == psutil.CONN_LISTEN:
                found.add(Listener(process.pid, _describe(process), conn.laddr.ip, conn.laddr.port))
    return found


def command_lines(root_pid: int) -> set[str]:
    """The command lines of ``root_pid`` and its descendants, now."""
    found = set()
    for process in _process_tree(root_pid):
        with contextlib.suppress(psutil.Error):
            found.add(" ".join(process.cmdline()))
    return found


class ListenerSampler:
    """Samples :func:`listening_sockets` of a process tree every ``interval`` seconds.

    Use as a context manager around the run; ``seen`` holds every listener
    sampled, ``samples`` the number of samples taken.
    """

    def __init__(self, root_pid: int, interval: float = 1.0) -> None:
        self.root_pid = root_pid
        self.interval = interval
        self.seen: set[Listener] = set()
        self.samples = 0
        #: What ``nobody`` got from each listener (:func:`answer_as_another_user`).
        self.answers: dict[Listener, bytes] = {}
        #: Every command line of the process tree, as any user of the machine may read them.
        self.command_lines: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            found = listening_sockets(self.root_pid)
            for listener in found - self.seen:
                # What another user of the machine gets there, once, while it listens.
                threading.Thread(target=self._probe, args=(listener,), daemon=True).start()
            self.seen |= found
            self.command_lines |= command_lines(self.root_pid)
            self.samples += 1
            self._stop.wait(self.interval)

    def _probe(self, listener: Listener) -> None:
        answer = answer_as_another_user(listener.ip, listener.port)
        if answer.startswith(b"HTTP/"):  # a web server (Jetty's 400 to Spark's frame): ask it for its page
            answer = answer_as_another_user(listener.ip, listener.port, HTTP_GET)
            # Spark's web UI listens before its pages and filters are attached, and
            # answers 404 meanwhile (seen 100 times in 9,300 requests over a session's
            # start): ask until it serves its pages, or refuses them.
            for _ in range(_UI_START_RETRIES):
                if not answer.startswith(b"HTTP/1.1 404 "):
                    break
                time.sleep(0.5)
                answer = answer_as_another_user(listener.ip, listener.port, HTTP_GET)
        self.answers[listener] = answer

    def __enter__(self) -> ListenerSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def beyond_loopback(self) -> set[Listener]:
        """The listeners seen on an address other than loopback."""
        return {listener for listener in self.seen if not listener.loopback}


#: A well-formed Spark RPC request (Spark's transport framing: the frame's
#: length, the message type RpcRequest = 3, a request id, the body's length,
#: the body) from a peer that skipped the authentication a session requires.
#: Spark answers it with an RpcFailure (type 5) or closes.
_BODY = b"\x00" * 16
SPARK_RPC_WITHOUT_AUTH = (
    (8 + 1 + 8 + 4 + len(_BODY)).to_bytes(8, "big") + bytes([3]) + (1).to_bytes(8, "big")
    + len(_BODY).to_bytes(4, "big") + _BODY
)  # fmt: skip
RPC_FAILURE = 5

#: How many times a web UI that answers 404 (still starting) is asked again, every 0.5 s.
_UI_START_RETRIES = 20

#: What a browser sends first: a web UI's page, asked without the run's token.
HTTP_GET = b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"

#: What was answered before a close or 2 s of silence, all of it: a peer that answers and keeps
#: the connection open (Spark does) has answered all the same.
_PROBE = """
import socket, sys
data = b""
try:
    with socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=2) as conn:
        conn.sendall(bytes.fromhex(sys.argv[3]))
        while len(data) < 4096:
            chunk = conn.recv(4096)
            if not chunk:
                break
            data += chunk
except OSError:
    pass
sys.stdout.write(data.hex())
"""


def answer_as_another_user(ip: str, port: int, payload: bytes = SPARK_RPC_WITHOUT_AUTH) -> bytes:
    """What user ``nobody`` gets from ``ip:port`` for ``payload`` (before a close or 2 s of silence)."""
    done = subprocess.run(
        ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", sys.executable, "-c", _PROBE,
         ip, str(port), payload.hex()],
        capture_output=True, text=True, timeout=30, cwd="/",
    )  # fmt: skip
    return bytes.fromhex(done.stdout.strip())


#: What a PySpark daemon answers a caller without the worker factory's secret: the
#: forked worker's pid (4 bytes, written before the secret is read), then "err".
_PYSPARK_REFUSAL = len(b"err").to_bytes(4, "big") + b"err"


#: What only Spark's authentication handlers put in the RpcFailure that refuses a peer:
#: SASL's complaint, or their own frame in its stack trace (the AES handler falls back to SASL).
#: A Spark without authentication refuses the probe's message too, but from its RPC
#: dispatcher ("invalid stream header"): that is no refusal of the caller.
_AUTH_REFUSALS = (b"Expected SaslMessage", b"AuthRpcHandler")


def is_refusal(answer: bytes) -> bool:
    """Nothing, Spark's authentication refusing the caller, a PySpark daemon's "err", or HTTP's 403.

    A Spark RpcFailure frame counts only when Spark's authentication sent it
    (:data:`_AUTH_REFUSALS`): one with authentication off answers the
    probe's empty message with an RpcFailure of its own (a deserialisation
    error), having accepted the connection of a caller with no secret.
    """
    spark_failure = (
        len(answer) > 8
        and answer[8] == RPC_FAILURE
        and int.from_bytes(answer[:8], "big") == len(answer)
        and any(marker in answer for marker in _AUTH_REFUSALS)
    )
    pyspark_refusal = len(answer) == 11 and answer[4:] == _PYSPARK_REFUSAL
    return answer == b"" or spark_failure or pyspark_refusal or answer.startswith(b"HTTP/1.1 403 ")


def secret_forms(secret: bytes) -> list[bytes]:
    """The byte strings a file or log would hold ``secret`` as."""
    forms = [
        secret,
        secret.hex().encode(),
        secret.hex().upper().encode(),
        base64.b64encode(secret),
        base64.urlsafe_b64encode(secret),
        base64.b64encode(secret).rstrip(b"="),
        base64.urlsafe_b64encode(secret).rstrip(b"="),
        # Python's repr of bytes, as TFoS's logged dicts carried the authkeys.
        repr(secret)[2:-1].encode(),
    ]
    return [form for form in forms if len(form) >= 8]


def files_naming(paths: Iterable[Path], secrets: Iterable[bytes]) -> dict[str, list[str]]:
    """The files under ``paths`` that hold any of ``secrets`` in any of :func:`secret_forms`.

    Returns
    -------
    dict
        File path -> the hex of each secret found in it.
    """
    needles = [(secret.hex(), form) for secret in secrets for form in secret_forms(secret)]
    found: dict[str, list[str]] = {}
    for root in paths:
        files = [root] if root.is_file() else []
        # Not into symbolic links: a local-cluster's spark-home links to pyspark's jars.
        for folder, _, names in os.walk(root, followlinks=False):
            files += [Path(folder, name) for name in names if not Path(folder, name).is_symlink()]
        for path in files:
            try:
                data = path.read_bytes()
            except OSError:
                continue
            hits = sorted({name for name, form in needles if form in data})
            if hits:
                found[str(path)] = hits
    return found


#: Whole epochs, no early stopping: every strategy sees the same examples.
#: Motif matches counted inside the centre only (no learned positional
#: weights): what is compared is how the strategies deal the records, and
#: that model trains 3.5 times faster.
EQUAL_EXAMPLES = [
    "train.model.motif_cnn.positional_bp=null",
    "train.steps=null",
    "train.epochs=4",
    "train.checkpoint_every_steps=null",
    "train.early_stopping_patience=null",
]
#: Each strategy's Spark master: one executor JVM per TF node on the clusters.
STRATEGY_MASTERS = {
    "local": "local[2]",
    "parameter_server": "local-cluster[4,1,1024]",
    "multi_worker_mirrored": "local-cluster[3,1,1024]",
}


@pytest.fixture(scope="session")
def strategy_runs(motif_shards, tmp_path_factory) -> dict[str, tuple[Path, WatchedRun]]:
    """``tfbs train`` under each strategy on the same shards and examples, every run watched.

    The ps run (one ps, two workers and the chief on four executor JVMs,
    each worker pinned to a core of its own) and the all-reduce run (the
    chief and two workers) are the training runs ``test_tfos.py`` checks
    and ``test_network_security.py`` checks for what they exposed; with the
    one-process run, they are also what ``test_tfos.py`` compares the
    strategies' learning on. Returns, per strategy, the run's folder and
    its :class:`WatchedRun`.
    """
    from conftest import DEMO_CONFIG, MOTIF_OVERRIDES, REPO

    from tfbs.storage import local_path

    config, _ = motif_shards
    runs = {}
    for strategy, master in STRATEGY_MASTERS.items():
        root = tmp_path_factory.mktemp(f"train-{strategy}")
        run_dir = root / "run"
        overrides = [
            *MOTIF_OVERRIDES,
            *EQUAL_EXAMPLES,
            f"run_dir={run_dir}",
            f"data.root={local_path(config.data.root)}",
            f"shards_dir={config.shards_uri}",
            f"train.placement.strategy={strategy}",
            f"spark.master={master}",
        ]
        if strategy == "parameter_server":
            # Each worker on a core of its own (test_tfos reads their log lines).
            overrides.append('train.placement.node_cpus={"worker:0": "0", "worker:1": "1"}')
        args = ["jobs.train", "--config", str(DEMO_CONFIG)]
        for override in overrides:
            args += ["--set", override]
        runs[strategy] = run_dir, watched_run(args, root / "spy.jsonl", REPO)
    return runs


@pytest.fixture(scope="session")
def tfos_training(strategy_runs) -> tuple[Path, WatchedRun]:
    """The watched ParameterServerStrategy run of :func:`strategy_runs`: its folder and :class:`WatchedRun`."""
    return strategy_runs["parameter_server"]


def read_spy(spy_file: Path) -> tuple[list[bytes], list[bytes]]:
    """The reservation secrets and manager authkeys the spy recorded: ``(secrets, authkeys)``."""
    secrets, authkeys = [], []
    for line in spy_file.read_text().splitlines():
        record = json.loads(line)
        if record.get("secret"):
            secrets.append(bytes.fromhex(record["secret"]))
        authkeys += [bytes.fromhex(key) for key in record["authkeys"]]
    return secrets, authkeys


@dataclass
class WatchedRun:
    """A command run as a driver under the spy, with its listeners sampled throughout."""

    returncode: int
    output: str
    listeners: ListenerSampler
    secrets: list[bytes]
    authkeys: list[bytes]


def watched_run(module_args: list[str], spy_file: Path, cwd: Path, timeout: float = 1200) -> WatchedRun:
    """Run ``python tests/netwatch.py SPY_FILE -m MODULE ARGS...``, sampling its process tree's listeners.

    Parameters
    ----------
    module_args : list of str
        ``["jobs.train", "--config", ...]``.
    spy_file : Path
        Where the spy records the secrets (outside the run's folder).
    cwd : Path
        The checkout.
    timeout : float
        Seconds before the run is killed.
    """
    command = [sys.executable, str(Path(__file__).resolve()), str(spy_file), "-m", *module_args]
    proc = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    with proc, ListenerSampler(proc.pid) as sampler:
        try:
            output, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            output, _ = proc.communicate()
    secrets, authkeys = read_spy(spy_file) if spy_file.exists() else ([], [])
    return WatchedRun(proc.returncode, output, sampler, secrets, authkeys)


def placement_ports(output: str) -> set[int]:
    """The TF nodes' ports, from the driver's "tfbs placement" lines: their tunnel agents'."""
    return {int(port) for port in re.findall(r"tfbs placement: .* port=(\d+)", output)}


def assert_nothing_beyond_loopback(run: WatchedRun, num_nodes: int) -> None:
    """Nothing of the run listened beyond loopback: not Spark, not TFoS, not TensorFlow.

    Each TF node's placement port (its tunnel agent's) was seen on loopback,
    and so was the reservation server: the sampler ran while the cluster was
    up. TF's own gRPC servers listen in the nodes' private networks, which
    no socket of this machine's network shows.
    """
    ports = placement_ports(run.output)
    assert len(ports) == num_nodes, run.output[-4000:]
    exposed = run.listeners.beyond_loopback()
    assert exposed == set(), sorted(exposed, key=lambda item: item.port)
    on_loopback = {item.port for item in run.listeners.seen if item.loopback}
    assert ports <= on_loopback, (ports, on_loopback)
    reservations = re.search(r"tfbs reservations: listening on (\S+):(\d+)", run.output)
    assert reservations is not None and reservations.group(1) == "127.0.0.1", run.output[-4000:]
    assert int(reservations.group(2)) in on_loopback


def assert_no_secret_written(run: WatchedRun, paths: list[Path], num_nodes: int) -> None:
    """Neither the reservation secret nor any manager authkey is in ``paths`` or the driver's output."""
    assert len(run.secrets) == 1 and len(run.authkeys) == num_nodes, (run.secrets, len(run.authkeys))
    secrets = run.secrets + run.authkeys
    assert files_naming(paths, secrets) == {}
    output = run.output.encode()
    assert not [form for secret in secrets for form in secret_forms(secret) if form in output]


def _install_spy(spy_file: Path) -> None:
    """Record each reservation server's secret and the nodes' authkeys once all nodes registered."""
    from tensorflowonspark import reservation

    await_reservations = reservation.Server.await_reservations

    def spied(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        nodes = await_reservations(self, *args, **kwargs)
        secret = getattr(self, "secret", None)
        record = {
            "secret": bytes(secret).hex() if secret else None,
            "authkeys": [bytes(node["authkey"]).hex() for node in nodes],
        }
        with spy_file.open("a") as out:
            out.write(json.dumps(record) + "\n")
        return nodes

    reservation.Server.await_reservations = spied


if __name__ == "__main__":
    # netwatch.py SPY_FILE -m MODULE ARGS...
    spy, flag, module, *rest = sys.argv[1:]
    assert flag == "-m", "usage: netwatch.py SPY_FILE -m MODULE [ARGS...]"
    _install_spy(Path(spy))
    sys.argv = [module, *rest]
    sys.path[0] = str(Path(__file__).resolve().parents[1])  # the checkout, as `python -m` would
    runpy.run_module(module, run_name="__main__", alter_sys=True)
