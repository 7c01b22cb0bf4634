"""The cluster of hosts (``hadoop/hosts.py``) from the tests' side.

The tests run in the machine's own namespace, where the bridge reaches
every host by address but no host name resolves: HDFS URIs and web
addresses are turned into their address form (:meth:`HostCluster.by_address`),
and a WebHDFS client follows the NameNode's redirects to DataNodes by name
the same way. Commands meant for the cluster's users (spark-submit, Airflow)
run on the ``gateway`` host, where names resolve as on a real gateway.

What another host can reach of a run is measured here too: every TCP socket
the processes on the hosts listen on, who owns it, and whether the
``outsider`` host (on the bridge, named by no one, holding no secret) can
connect to it.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
from host_daemons import DATANODE_HTTPS_PORT, NAMENODE_HTTPS_PORT
from hosts import OUTSIDER, HostCluster
from netwatch import SPARK_RPC_WITHOUT_AUTH, is_refusal


class WebHdfs:
    """WebHDFS through ``curl --negotiate``: SPNEGO with the session's Kerberos ticket, over verified HTTPS.

    The checks' HDFS client, independent of the pipeline's (hdfs-native in
    the driver and the tasks, Spark's Java client for DataFrames). The
    NameNode redirects a read to a DataNode by its host name and a
    delegation token; ``--resolve`` sends it to that host's address, as
    ``/etc/hosts`` would on the gateway.
    """

    def __init__(self, cluster: HostCluster) -> None:
        self.cluster = cluster
        self.base = f"{cluster.webhdfs_url}/webhdfs/v1"
        self.resolve = [
            option
            for name, address in cluster.info.hosts.items()
            for port in (DATANODE_HTTPS_PORT, NAMENODE_HTTPS_PORT)
            for option in ("--resolve", f"{name}:{port}:{address}")
        ]

    def _get(self, path: str, op: str, *, with_ticket: bool = True) -> subprocess.CompletedProcess[bytes]:
        client = self.cluster.web_client(with_ticket=with_ticket)
        command = [*client, "-L", *self.resolve, "-w", "\n%{http_code}", f"{self.base}{path}?op={op}"]
        return subprocess.run(command, capture_output=True, timeout=120)

    def call(self, path: str, op: str, *, with_ticket: bool = True) -> tuple[int, bytes]:
        """``op`` on ``path``: the last response's status and body."""
        done = self._get(path, op, with_ticket=with_ticket)
        assert done.returncode == 0, done.stderr.decode()
        body, _, code = done.stdout.rpartition(b"\n")
        return int(code), body

    def _json(self, path: str, op: str) -> Any:
        code, body = self.call(path, op)
        assert code == 200, (path, op, code, body[:500])
        return json.loads(body)

    def read(self, path: str) -> bytes:
        """The file's bytes."""
        code, body = self.call(path, "OPEN")
        assert code == 200, (path, code, body[:500])
        return body

    def list(self, path: str) -> list[str]:
        """The names in a directory, sorted."""
        return sorted(s["pathSuffix"] for s in self._json(path, "LISTSTATUS")["FileStatuses"]["FileStatus"])

    def status(self, path: str) -> dict[str, Any]:
        """The file's status (``length``, ``replication``, ``owner``...)."""
        return dict(self._json(path, "GETFILESTATUS")["FileStatus"])

    def block_hosts(self, path: str) -> list[set[str]]:
        """The hosts holding each block of the file, as the NameNode reports them."""
        blocks = self._json(path, "GETFILEBLOCKLOCATIONS")["BlockLocations"]["BlockLocation"]
        return [{name.split(":")[0] for name in block["hosts"]} for block in blocks]


# ---------------------------------------------------------------------------
# What the run exposes
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class HostListener:
    """A TCP socket listening on a host, and who owns it."""

    host: str
    address: str
    port: int
    pid: int
    kind: str

    @property
    def loopback(self) -> bool:
        """Listening on 127.0.0.0/8 or ::1 only."""
        return self.address.startswith("127.") or self.address == "::1"


#: Java main classes and what they are.
_JAVA_KINDS = {
    "namenode.NameNode": "Hadoop NameNode",
    "datanode.DataNode": "Hadoop DataNode",
    "resourcemanager.ResourceManager": "Hadoop ResourceManager",
    "nodemanager.NodeManager": "Hadoop NodeManager",
    "hadoop.NodeManagerMain": "Hadoop NodeManager",
    "YarnCoarseGrainedExecutorBackend": "Spark executor",
    "CoarseGrainedExecutorBackend": "Spark executor",
    "ExecutorLauncher": "Spark application master",
    "ApplicationMaster": "Spark application master",
    "SparkSubmit": "Spark driver",
    "deploy.master.Master": "Spark standalone master",
    "deploy.worker.Worker": "Spark standalone worker",
}


def _kind(process: psutil.Process, port: int, named_ports: dict[int, str]) -> str:
    """What a listening process is: a Hadoop daemon, a part of Spark, one of ``named_ports``' kinds..."""
    try:
        argv = process.cmdline()
    except psutil.Error:
        return "gone"
    joined = " ".join(argv)
    for marker, kind in _JAVA_KINDS.items():
        if marker in joined:
            return kind
    if port in named_ports:
        return named_ports[port]
    if "pyspark.daemon" in joined or "pyspark/daemon" in joined:
        return "PySpark daemon"
    if argv and Path(argv[0]).name == "krb5kdc":
        return "Kerberos KDC"
    name = Path(argv[0]).name if argv else "?"
    return f"other {name}: {joined[:120]}"


def _listening_inodes(pid: int) -> dict[int, tuple[str, int]]:
    """The listening TCP sockets of ``pid``'s network namespace: inode -> (address, port).

    ``/proc/<pid>/net/tcp`` shows the namespace of ``pid`` (psutil reads the
    caller's own, where none of the hosts' sockets are).
    """
    found = {}
    for name in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{name}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] != "0A":  # LISTEN
                continue
            hex_address, hex_port = fields[1].split(":")
            raw = bytes.fromhex(hex_address)
            # The kernel prints each 32-bit word in host (little-endian) order.
            words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
            address = ipaddress.ip_address(words)
            if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
                address = address.ipv4_mapped
            found[int(fields[9])] = (str(address), int(hex_port, 16))
    return found


def _socket_inodes(pid: int) -> set[int]:
    """The socket inodes ``pid`` holds open."""
    inodes = set()
    try:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(int(target[8:-1]))
    except OSError:
        pass
    return inodes


def listeners(cluster: HostCluster, named_ports: dict[int, str]) -> list[HostListener]:
    """Every TCP socket the processes of every host listen on, now, with its owner's kind.

    ``named_ports``: the kind of the ports a run's log names (a TF node's
    placement port, the reservation server's), which a process's command
    line does not tell.
    """
    found = set()
    network = cluster.network
    for host in network.hosts:
        pids = network.pids(host)
        if not pids:
            continue
        sockets = _listening_inodes(pids[0])
        for pid in pids:
            for inode in _socket_inodes(pid) & set(sockets):
                ip, port = sockets[inode]
                address = cluster.address(host) if ip in ("0.0.0.0", "::") else ip
                try:
                    kind = _kind(psutil.Process(pid), port, named_ports)
                except psutil.Error:
                    continue
                found.add(HostListener(host, address, port, pid, kind))
    return sorted(found, key=lambda item: (item.host, item.port, item.pid))


#: Run on the outsider: which of the (address, port) pairs on stdin accept a TCP connection.
_CONNECT_SCRIPT = """
import socket, sys
for line in sys.stdin:
    address, port = line.split()
    try:
        socket.create_connection((address, int(port)), timeout=2).close()
        print(address, port, "open")
    except OSError as error:
        print(address, port, type(error).__name__)
"""


def reachable_from_outsider(cluster: HostCluster, targets: Sequence[HostListener]) -> set[tuple[str, int]]:
    """Which of ``targets`` the outsider host can open a TCP connection to."""
    remote = [target for target in targets if not target.loopback]
    lines = "".join(f"{target.address} {target.port}\n" for target in remote)
    done = cluster.run(
        OUTSIDER, [sys.executable, "-c", _CONNECT_SCRIPT], input=lines, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    return {
        (address, int(port)) for address, port, state in map(str.split, done.stdout.splitlines()) if state == "open"
    }


def count_by_kind(found: Sequence[HostListener]) -> dict[str, int]:
    """How many listeners of each kind."""
    return dict(sorted(Counter(listener.kind for listener in found).items()))


#: Run on the outsider: send stdin's payload to each (address, port) of argv at once; print what each answered (hex).
_EXCHANGE_SCRIPT = """
import socket, sys, threading
payload = sys.stdin.buffer.read()
answers = {}

def exchange(address, port):
    got = b""
    try:
        with socket.create_connection((address, port), timeout=2) as s:
            s.sendall(payload)
            while chunk := s.recv(65536):  # until the peer closes, or 2 s without a byte
                got += chunk
    except OSError:
        pass
    answers[(address, port)] = got

threads = [threading.Thread(target=exchange, args=(a, int(p))) for a, p in zip(sys.argv[1::2], sys.argv[2::2])]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
for (address, port), got in answers.items():
    print(address, port, got.hex())
"""


def outsider_exchanges(cluster: HostCluster, targets: Sequence[tuple[str, int]], payload: bytes) -> dict:
    """From the outsider, send ``payload`` to every target at once; what each answered before closing or 2 s of silence."""
    argv = [str(part) for target in targets for part in target]
    done = cluster.run(
        OUTSIDER, [sys.executable, "-c", _EXCHANGE_SCRIPT, *argv], input=payload, capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    answers = {}
    for line in done.stdout.decode().splitlines():
        address, port, *answer = line.split()
        answers[(address, int(port))] = bytes.fromhex(answer[0] if answer else "")
    return answers


#: A TF node's placement port: its tunnel agent (tf_models/tfos/tunnel.py).
TUNNEL_AGENT = "TF tunnel agent"
#: What a gRPC client sends first (HTTP/2's connection preface): what a caller of a TF server would send.
GRPC_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes(9)
#: The Spark processes of a run (a standalone cluster's master and workers are the cluster's).
RUN_SPARK_KINDS = {"Spark driver", "Spark executor", "Spark application master"}
#: What a host that holds no secret may reach: the realm's KDC (which issues
#: tickets only to who knows a principal's key), Hadoop's daemons, Spark's
#: authenticated endpoints, the TF nodes' tunnel agents (which answer nothing
#: without the run's secret). TensorFlow's gRPC servers listen in private
#: networks, reachable by no host.
ALLOWED_KINDS = {
    "Kerberos KDC",
    "Hadoop NameNode",
    "Hadoop DataNode",
    "Hadoop ResourceManager",
    "Hadoop NodeManager",
    "Spark driver",
    "Spark executor",
    TUNNEL_AGENT,
}
#: A web client's first bytes: Spark's RPC endpoints close on them, its web UIs answer in HTTP.
HTTP_GET = b"GET / HTTP/1.0\r\n\r\n"


@dataclass(frozen=True)
class OutsiderScan:
    """What the outsider reached of a training run as it trained, and what each endpoint answered it."""

    seen: list[HostListener]
    reachable: set[tuple[str, int]]
    #: Spark's RPC endpoints (the driver's, the executors'): their answer to an unauthenticated message.
    spark_answers: dict[tuple[str, int], bytes]
    #: Spark's web UIs: their answer to a plain GET.
    web_answers: dict[tuple[str, int], bytes]
    #: The TF nodes' tunnel agents: their answer to a gRPC client's first bytes.
    agent_answers: dict[tuple[str, int], bytes]


def outsider_scan(cluster: HostCluster, output: str) -> OutsiderScan:
    """Every socket the hosts listen on while the run whose log is ``output`` trains, probed from the outsider.

    A TF node's placement port (in the log) is its tunnel agent's. Each of Spark's
    reachable ports is asked for a web page first: those that answer in HTTP are web
    UIs; the rest get an RPC message without the application's secret.
    """
    agents = {int(port): TUNNEL_AGENT for port in re.findall(r"tfbs placement: .* port=(\d+)", output)}
    seen = listeners(cluster, agents)
    reachable = reachable_from_outsider(cluster, seen)
    spark = [(i.address, i.port) for i in seen if i.kind in RUN_SPARK_KINDS and (i.address, i.port) in reachable]
    web = {
        endpoint: got for endpoint, got in outsider_exchanges(cluster, spark, HTTP_GET).items() if got[:5] == b"HTTP/"
    }
    rpc = [endpoint for endpoint in spark if endpoint not in web]
    tunnels = [(i.address, i.port) for i in seen if i.kind == TUNNEL_AGENT]
    return OutsiderScan(
        seen,
        reachable,
        outsider_exchanges(cluster, rpc, SPARK_RPC_WITHOUT_AUTH),
        web,
        outsider_exchanges(cluster, tunnels, GRPC_PREFACE),
    )


def assert_outsider_refused(scan: OutsiderScan, allowed_kinds: set[str], n_agents: int) -> None:
    """What the outsider reached is of ``allowed_kinds`` only, and nothing of a run answered it but a refusal.

    Every socket beyond loopback answers a connect (no firewall: this is what
    the processes expose); ``n_agents`` TF tunnel agents answer a TF client's
    first bytes with nothing; Spark's RPC endpoints with nothing or the error
    that refused the message; Spark's web UIs with 403 (no session key);
    nothing of TFoS or TensorFlow listens beyond loopback.
    """
    reached = [item for item in scan.seen if (item.address, item.port) in scan.reachable]
    print("listening:", count_by_kind(scan.seen))
    print("reached from the outsider:", count_by_kind(reached))
    assert {item.kind for item in reached} <= allowed_kinds, [i for i in reached if i.kind not in allowed_kinds]
    assert {(i.address, i.port) for i in scan.seen if not i.loopback} == scan.reachable
    assert count_by_kind(reached)[TUNNEL_AGENT] == n_agents
    assert set(scan.agent_answers.values()) == {b""} and len(scan.agent_answers) == n_agents
    for endpoint, answer in scan.spark_answers.items():
        assert is_refusal(answer), (endpoint, answer[:200])
    for endpoint, answer in scan.web_answers.items():
        assert answer.split(b"\r\n", 1)[0].split()[1] == b"403", (endpoint, answer[:300])
    # No manager, the reservation server closed once every node had the cluster; nothing of TensorFlow.
    assert not [i for i in scan.seen if not i.loopback and ("TFoS" in i.kind or i.kind.startswith("other"))]


def placement_hosts(output: str) -> dict[str, str]:
    """The host name of each TF node (``"worker:1": "node3"``), from the driver's placement lines."""
    return {
        f"{job}:{task}": hostname
        for job, task, hostname in re.findall(r"tfbs placement: job=(\w+) task=(\d+) .*? hostname=(\S+)", output)
    }
