"""A TF node's private network: a network namespace of its own, whose only interface is its loopback.

TensorFlow's gRPC server listens on every interface and authenticates no one
(both hard-coded in TF; tensorflow/tensorflow#11689, #36973): on a shared
cluster any tenant could read or change a model's weights, or run ops as the
job's user. So the process that runs a node's TensorFlow moves, right after
it is forked, into a network namespace of its own (a user namespace too when
it is not root: unprivileged, as a YARN container's user). Its TF server then
answers on that loopback only, where nothing else lives.

Every node sees the same *virtual* cluster: each task at ``127.0.0.1:<a port
of its own>`` (:func:`virtual_cluster`). Inside the namespace the watcher
(the node's parent, on the host's network) listens on every peer's virtual
address; a TF connection there is carried by the watcher's tunnel agent,
sealed with the run's secret, to the peer's agent, which hands it to the
peer's TF server (:mod:`tf_models.tfos.tunnel`). The sockets inside the
namespace are made there and passed to the watcher over a Unix socket pair
(``SCM_RIGHTS``): the watcher never enters the namespace, which a process
that is not root could not leave again.

    watcher (host network)                          node process (private: loopback only)
    tunnel agent on <host>:<port> (sealed)  <-->  listeners on 127.0.0.1:<each peer's port>
                                            <-->  sockets to 127.0.0.1:<its own port>
    storage gateway                         <-->  remote file systems (tfbs.storage)

What still needs the host's network in the node process, reading and writing
HDFS or a bucket, goes through the watcher (``tfbs.storage``'s gateway).
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import json
import os
import signal
import socket
import struct
import threading
from pathlib import Path

#: The first port of the virtual cluster; task i (in :func:`task_names` order) listens on this + i.
VIRTUAL_BASE_PORT = 20000
LOOPBACK = "127.0.0.1"

_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1
_IFREQ = struct.Struct("16sH14x")
_PR_SET_PDEATHSIG = 1


class PrivateNetworkUnavailable(RuntimeError):
    """This host cannot give a TF node a network namespace of its own (see ``train.placement.tf_network``)."""


def task_names(cluster_spec: dict[str, list[str]]) -> list[str]:
    """Every task of the cluster as ``job:index``, jobs in name order.

    Examples
    --------
    >>> task_names({"worker": ["a:1", "b:2"], "chief": ["c:3"], "ps": ["d:4"]})
    ['chief:0', 'ps:0', 'worker:0', 'worker:1']
    """
    return [f"{job}:{index}" for job in sorted(cluster_spec) for index in range(len(cluster_spec[job]))]


def virtual_ports(cluster_spec: dict[str, list[str]]) -> dict[str, int]:
    """Each task's port in the virtual cluster.

    Examples
    --------
    >>> virtual_ports({"ps": ["d:4"], "chief": ["c:3"]})
    {'chief:0': 20000, 'ps:0': 20001}
    """
    return {task: VIRTUAL_BASE_PORT + index for index, task in enumerate(task_names(cluster_spec))}


def virtual_cluster(cluster_spec: dict[str, list[str]]) -> dict[str, list[str]]:
    """The cluster every node's TensorFlow sees: each task on loopback, at its virtual port.

    Examples
    --------
    >>> virtual_cluster({"ps": ["10.0.0.5:4711"], "worker": ["10.0.0.6:4712", "10.0.0.7:4713"]})
    {'ps': ['127.0.0.1:20000'], 'worker': ['127.0.0.1:20001', '127.0.0.1:20002']}
    """
    ports = virtual_ports(cluster_spec)
    return {job: [f"{LOOPBACK}:{ports[f'{job}:{i}']}" for i in range(len(cluster_spec[job]))] for job in cluster_spec}


def real_addresses(cluster_spec: dict[str, list[str]]) -> dict[str, tuple[str, int]]:
    """Each task's ``(host, port)`` in the real cluster: where its tunnel agent listens."""
    found = {}
    for task in task_names(cluster_spec):
        job, index = task.split(":")
        host, _, port = cluster_spec[job][int(index)].rpartition(":")
        found[task] = (host, int(port))
    return found


def _libc_call(name: str, *args: int) -> int:
    """``libc.name(*args)``; ``errno`` of a failure, 0 on success."""
    libc = ctypes.CDLL(None, use_errno=True)
    return 0 if getattr(libc, name)(*args) == 0 else ctypes.get_errno()


def _unshare_network() -> None:
    """Move this (single-threaded) process into a new network namespace.

    Root gets a network namespace alone. Anyone else gets a user namespace
    around it, mapping their own uid and gid onto themselves: files keep
    their owner, and the process holds the capabilities it needs in its own
    namespaces only.

    Raises
    ------
    PrivateNetworkUnavailable
        If the kernel refuses both (unprivileged user namespaces off).
    """
    if _libc_call("unshare", _CLONE_NEWNET) == 0:
        return
    uid, gid = os.geteuid(), os.getegid()
    failed = _libc_call("unshare", _CLONE_NEWUSER | _CLONE_NEWNET)
    if failed:
        raise PrivateNetworkUnavailable(
            f"cannot make a network namespace on host {socket.gethostname()}: {os.strerror(failed)} "
            "(unprivileged user namespaces are off: sysctl user.max_user_namespaces, "
            "kernel.unprivileged_userns_clone)"
        )
    Path("/proc/self/setgroups").write_text("deny")
    Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
    Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")


def _loopback_up() -> None:
    """Bring up ``lo``, the namespace's only interface (down in a new one)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        request = _IFREQ.pack(b"lo", 0)
        flags = _IFREQ.unpack(fcntl.ioctl(probe, _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(probe, _SIOCSIFFLAGS, _IFREQ.pack(b"lo", flags | _IFF_UP))


def enter(control: socket.socket, cluster_spec: dict[str, list[str]], task: str) -> None:
    """In the node process, right after the fork: go private and hand the watcher its sockets.

    Sends the watcher (over ``control``) a listening socket on each peer's
    virtual address, then forks a helper that serves its requests for fresh,
    unconnected sockets of the namespace (through which it reaches this
    node's own TF server). A process, not a thread: TensorFlow holds this
    process's interpreter lock while it waits for its peers to connect
    (``MultiWorkerMirroredStrategy()`` does), and those connections wait
    for the sockets the helper hands over.

    Raises
    ------
    PrivateNetworkUnavailable
        If no network namespace can be made; the watcher is told why.
    """
    try:
        _unshare_network()
        _loopback_up()
    except (OSError, PrivateNetworkUnavailable) as err:
        control.sendall(json.dumps({"error": str(err)}).encode())
        raise PrivateNetworkUnavailable(str(err)) from None
    peers = {name: port for name, port in virtual_ports(cluster_spec).items() if name != task}
    listeners = {name: socket.create_server((LOOPBACK, port), backlog=64) for name, port in peers.items()}
    header = json.dumps({"peers": list(listeners)}).encode()
    socket.send_fds(control, [header], [listener.fileno() for listener in listeners.values()])
    for listener in listeners.values():
        listener.close()  # the watcher holds them now
    if os.fork() == 0:
        _libc_call("prctl", _PR_SET_PDEATHSIG, signal.SIGKILL)  # gone with the node process
        try:
            _serve_sockets(control)
        finally:
            os._exit(0)
    control.close()  # the helper's now


def _serve_sockets(control: socket.socket) -> None:
    """Hand the watcher a fresh TCP socket of this namespace per byte it sends, until it closes."""
    while control.recv(1):
        fresh = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        socket.send_fds(control, [b"s"], [fresh.fileno()])
        fresh.close()


class Inside:
    """The watcher's end of a node's private network: the sockets the node process handed over.

    Parameters
    ----------
    control : socket.socket
        The watcher's end of the pair the node process's :func:`enter` speaks on.

    Raises
    ------
    PrivateNetworkUnavailable
        If the node process could not go private (with its reason).
    ConnectionError
        If it ended before saying anything (its own error tells why).
    """

    def __init__(self, control: socket.socket) -> None:
        self._control = control
        self._lock = threading.Lock()
        message, fds, _, _ = socket.recv_fds(control, 1 << 16, 256)
        if not message:
            raise ConnectionError("the node process ended before its network was ready")
        header = json.loads(message)
        if "error" in header:
            raise PrivateNetworkUnavailable(header["error"])
        #: Listening sockets inside the namespace, by peer task.
        self.listeners = {name: socket.socket(fileno=fd) for name, fd in zip(header["peers"], fds)}

    def fresh_socket(self) -> socket.socket:
        """A new, unconnected TCP socket of the namespace (its connect reaches the node's loopback)."""
        with self._lock:
            self._control.sendall(b"s")
            _, fds, _, _ = socket.recv_fds(self._control, 1, 1)
        if not fds:
            raise ConnectionError("the node process is gone")
        return socket.socket(fileno=fds[0])

    def close(self) -> None:
        """Close the listeners and the control socket (the node process's helper thread ends)."""
        for listener in self.listeners.values():
            listener.close()
        self._control.close()


def errno_name(code: int) -> str:
    """``ECONNREFUSED`` for 111: how a socket error is named in a log line."""
    return errno.errorcode.get(code, str(code))
