"""The tunnel agent of a TF node: its TF connections, over mutual TLS 1.3, between private networks.

Runs in the node's watcher, on the host's network, in an event loop of its
own thread (:class:`TunnelAgent`). It listens

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
"""

from __future__ import annotations

import asyncio
import functools
import logging
import socket
import ssl
import threading
from collections.abc import Callable

from tf_models.tfos.network_tls import task_name, tunnel_contexts

log = logging.getLogger("tfbs.tfos.tunnel")

#: Seconds a peer may take over the TLS handshake; to connect to a peer's agent.
HANDSHAKE_S = 10.0
CONNECT_S = 10.0
#: Bytes read at a time on either side of a relay: a TF step's tensors move in few reads.
READ_BYTES = 1 << 20


async def _relay(
    near: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    far: tuple[asyncio.StreamReader, asyncio.StreamWriter],
) -> None:
    """Carry bytes both ways until either side ends, then close both."""

    async def carry(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        while data := await source.read(READ_BYTES):
            sink.write(data)
            await sink.drain()

    tasks = [asyncio.ensure_future(carry(near[0], far[1])), asyncio.ensure_future(carry(far[0], near[1]))]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        for _, writer in (near, far):
            writer.close()


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
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._failed: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"tfbs-tunnel-{task}", daemon=True)

    def start(self) -> None:
        """Listen (the agent's own address, every peer's virtual one) in the agent's thread; return when ready.

        Raises
        ------
        OSError
            If the agent cannot listen on its address.
        """
        self._thread.start()
        self._ready.wait()
        if self._failed is not None:
            raise self._failed

    def stop(self) -> None:
        """Stop listening and end every relay."""
        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop)
            self._thread.join(timeout=10)

    async def _shutdown(self) -> None:
        """End every relay (each closes its connections as it ends), then the loop."""
        others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)
        asyncio.get_running_loop().stop()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._listen())
        except BaseException as err:  # noqa: BLE001 - handed to start()
            self._failed = err
            self._ready.set()
            return
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            self._loop.close()

    async def _listen(self) -> None:
        await asyncio.start_server(self._from_peer, *self.address, reuse_address=True, ssl=self.server_context,
                                   ssl_handshake_timeout=HANDSHAKE_S)  # fmt: skip
        for peer, listener in self.listeners.items():
            listener.setblocking(False)
            await asyncio.start_server(functools.partial(self._to_peer, peer), sock=listener)

    async def _from_peer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """A peer agent's connection, its TLS handshake passed: joined to this node's TF server on the private loopback."""
        try:
            inside = await asyncio.get_running_loop().run_in_executor(None, self.fresh_socket)
            inside.setblocking(False)
            await asyncio.get_running_loop().sock_connect(inside, ("127.0.0.1", self.own_port))
            server = await asyncio.open_connection(sock=inside, limit=READ_BYTES)
        except OSError:
            writer.close()
            return
        await _relay(server, (reader, writer))

    async def _to_peer(self, peer: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """A connection from this node's TensorFlow to ``peer``'s virtual address: carried to its agent over TLS."""
        try:
            remote = await asyncio.wait_for(
                asyncio.open_connection(*self.peers[peer], ssl=self.client_context, server_hostname=task_name(peer),
                                        ssl_handshake_timeout=HANDSHAKE_S, limit=READ_BYTES),
                CONNECT_S + HANDSHAKE_S,
            )  # fmt: skip
        except (OSError, ssl.SSLError, TimeoutError) as err:
            log.warning("tf network: cannot reach %s at %s:%d: %s", peer, *self.peers[peer], err)
            writer.close()
            return
        await _relay((reader, writer), remote)
