"""The tunnel agent of a TF node: its TF connections, over mutual TLS 1.3, between private networks.

Runs in the node's watcher, on the host's network, a thread per listening
socket and per carried connection (:class:`TunnelAgent`). It listens

* on ``<host>:<port>``, the node's address in the real cluster spec (the port
  TensorFlowOnSpark reserved for it): peers' agents connect there over TLS
  1.3 with a certificate of the run's authority
  (:mod:`tf_models.tfos.network_tls`); each such connection is joined to a
  fresh socket to the node's TF server on its private loopback;
* inside the node's private network, on each peer's virtual address: a
  connection from the node's TensorFlow there is carried over TLS to that
  peer's agent, whose certificate must name that peer's task.

A caller without a certificate of the run's authority completes no
handshake and gets a closed connection; nothing reaches a TF server.

Each carried connection is one thread that waits on both of its sockets
and moves what arrives on one to the other with blocking calls: OpenSSL
reads and writes the socket itself, with Python's lock released, where
an event loop's TLS passes every byte through memory buffers and Python
objects on the cores that compute. One thread per connection also keeps
each TLS connection to one thread, as OpenSSL requires.
"""

from __future__ import annotations

import contextlib
import logging
import selectors
import socket
import ssl
import threading
from collections.abc import Callable

from tf_models.tfos.network_tls import task_name, tunnel_contexts

log = logging.getLogger("tfbs.tfos.tunnel")

#: Seconds a peer may take over the TLS handshake; to connect to a peer's agent.
HANDSHAKE_S = 10.0
CONNECT_S = 10.0
#: Bytes read at a time from a node's TensorFlow (a TLS read returns one record, 16 KiB, at most).
READ_BYTES = 1 << 20


def _relay(plain: socket.socket, tls: ssl.SSLSocket) -> None:
    """Carry bytes both ways between ``plain`` and ``tls`` until either side ends or fails, then close both."""
    for sock in (plain, tls):
        # Each write goes out at once: Nagle's wait for an ACK would stall every small RPC (gRPC
        # sets this on its own sockets, asyncio on every TCP connection).
        with contextlib.suppress(OSError):  # not TCP
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buffer = bytearray(READ_BYTES)
    view = memoryview(buffer)
    selector = selectors.DefaultSelector()
    selector.register(plain, selectors.EVENT_READ, (plain, tls))
    selector.register(tls, selectors.EVENT_READ, (tls, plain))
    try:
        while True:
            for key, _ in selector.select():
                source, sink = key.data
                while True:
                    count = source.recv_into(buffer)
                    if not count:
                        return
                    sink.sendall(view[:count])
                    # Records OpenSSL has already read and decrypted wake no select.
                    if source is not tls or not tls.pending():
                        break
    except OSError:  # ssl.SSLError included: a peer gone, a connection reset or stopped
        return
    finally:
        selector.close()
        for sock in (plain, tls):
            sock.close()


class TunnelAgent:
    """One node's tunnel agent (see the module docstring).

    Parameters
    ----------
    secret : bytes
        The run's TF network secret: the root of the tunnels' TLS authority.
    task : str
        This node's task, ``job:index``.
    address : tuple of str and int
        Where peers' agents reach this one: the node's host and port in the
        real cluster spec.
    peers : dict of str to tuple of str and int
        Every other task's agent address.
    listeners : dict of str to socket.socket
        Per peer task, a listening socket on its virtual address inside this
        node's private network.
    own_port : int
        This node's TF server's port on its private loopback.
    fresh_socket : callable
        Returns a new, unconnected socket of the private network.
    """

    def __init__(
        self,
        secret: bytes,
        task: str,
        address: tuple[str, int],
        peers: dict[str, tuple[str, int]],
        listeners: dict[str, socket.socket],
        own_port: int,
        fresh_socket: Callable[[], socket.socket],
    ) -> None:
        self.server_context, self.client_context = tunnel_contexts(secret, task)
        self.task = task
        self.address = address
        self.peers = peers
        self.listeners = listeners
        self.own_port = own_port
        self.fresh_socket = fresh_socket
        self._listening: list[socket.socket] = []
        #: Every socket of a connection being carried, closed by :meth:`stop`.
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._stopped = False

    def start(self) -> None:
        """Listen (the agent's own address, every peer's virtual one), each in a thread of its own.

        Raises
        ------
        OSError
            If the agent cannot listen on its address.
        """
        own = socket.create_server(self.address)
        self._listening = [own, *self.listeners.values()]
        self._thread(self._accept, own, self._from_peer)
        for peer, listener in self.listeners.items():
            listener.setblocking(True)
            self._thread(self._accept, listener, lambda conn, peer=peer: self._to_peer(peer, conn))

    def stop(self) -> None:
        """Stop listening and end every carried connection."""
        with self._lock:
            self._stopped = True
            sockets = [*self._listening, *self._open]
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked on it
            sock.close()

    def _thread(self, target: Callable, *args: object) -> None:
        threading.Thread(target=target, args=args, name=f"tfbs-tunnel-{self.task}", daemon=True).start()

    def _track(self, *sockets: socket.socket) -> bool:
        """Remember ``sockets`` for :meth:`stop`; False (and closed) if the agent has stopped."""
        with self._lock:
            if not self._stopped:
                self._open.update(sockets)
                return True
        for sock in sockets:
            sock.close()
        return False

    def _carry(self, plain: socket.socket, tls: ssl.SSLSocket) -> None:
        if self._track(plain, tls):
            try:
                _relay(plain, tls)
            finally:
                with self._lock:
                    self._open.difference_update((plain, tls))

    def _accept(self, listener: socket.socket, handle: Callable[[socket.socket], None]) -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:  # stopped
                return
            self._thread(handle, conn)

    def _from_peer(self, conn: socket.socket) -> None:
        """A peer agent's connection: past the TLS handshake, joined to this node's TF server on the private loopback."""
        tls = self.server_context.wrap_socket(conn, server_side=True, do_handshake_on_connect=False)
        try:
            tls.settimeout(HANDSHAKE_S)
            tls.do_handshake()
            tls.settimeout(None)
            inside = self.fresh_socket()
        except OSError:  # ssl.SSLError included: no certificate of the run's authority
            tls.close()
            return
        try:
            inside.connect(("127.0.0.1", self.own_port))
        except OSError:
            inside.close()
            tls.close()
            return
        self._carry(inside, tls)

    def _to_peer(self, peer: str, conn: socket.socket) -> None:
        """A connection from this node's TensorFlow to ``peer``'s virtual address: carried to its agent over TLS."""
        raw = None
        try:
            raw = socket.create_connection(self.peers[peer], timeout=CONNECT_S)
            raw.settimeout(HANDSHAKE_S)
            tls = self.client_context.wrap_socket(raw, server_hostname=task_name(peer))
            tls.settimeout(None)
        except OSError as err:  # ssl.SSLError included
            log.warning("tf network: cannot reach %s at %s:%d: %s", peer, *self.peers[peer], err)
            for sock in (raw, conn):
                if sock is not None:
                    sock.close()
            return
        self._carry(conn, tls)
