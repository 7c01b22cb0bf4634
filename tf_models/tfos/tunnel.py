"""The tunnel agent of a TF node: its TF connections, sealed, between private networks.

Runs in the node's watcher, on the host's network, in an event loop of its
own thread (:class:`TunnelAgent`). It listens

* on ``<host>:<port>``, the node's address in the real cluster spec (the port
  TensorFlowOnSpark reserved for it): peers' agents connect there, prove
  they hold the run's secret (:mod:`tf_models.tfos.sealed`) and name this
  node's task; each such connection is joined to a fresh socket to the
  node's TF server on its private loopback;
* inside the node's private network, on each peer's virtual address: a
  connection from the node's TensorFlow there is carried, sealed, to that
  peer's agent.

A caller without the secret gets no byte back and a closed connection;
nothing reaches a TF server. Each side of a relay is
read in chunks of 64 KB and sealed into one frame per chunk.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import socket
import threading
from collections.abc import Callable

from tf_models.tfos.sealed import (
    CHUNK_BYTES,
    NONCE_BYTES,
    FrameCipher,
    Refused,
    answer,
    derive_ciphers,
    frame_length,
    hello_cipher,
    opening,
)

log = logging.getLogger("tfbs.tfos.tunnel")

#: Keys of the TF network's tunnels open no other channel's frames, and back.
CHANNEL = b"tfbs tf network"
#: Seconds a peer may take over the handshake; to connect to a peer's agent.
HANDSHAKE_S = 10.0
CONNECT_S = 10.0


async def _read_frame(reader: asyncio.StreamReader) -> bytes:
    """The next frame's ciphertext (its length checked before it is read)."""
    return await reader.readexactly(frame_length(await reader.readexactly(4)))


async def _relay(
    plain: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    sealed: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    send: FrameCipher,
    receive: FrameCipher,
) -> None:
    """Carry bytes both ways until either side ends, then close both."""

    async def outward() -> None:
        while data := await plain[0].read(CHUNK_BYTES):
            sealed[1].write(send.seal(data))
            await sealed[1].drain()

    async def inward() -> None:
        while True:
            plain[1].write(receive.open(await _read_frame(sealed[0])))
            await plain[1].drain()

    tasks = [asyncio.ensure_future(outward()), asyncio.ensure_future(inward())]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        for _, writer in (plain, sealed):
            writer.close()
        for task in tasks:
            if not task.cancelled() and task.done() and isinstance(task.exception(), Refused):
                log.warning("tf network: a frame that does not open: connection closed")


class TunnelAgent:
    """One node's tunnel agent (see the module docstring).

    Parameters
    ----------
    secret : bytes
        The run's TF network secret.
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
        self.secret = secret
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
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)

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
        await asyncio.start_server(self._from_peer, *self.address, reuse_address=True)
        for peer, listener in self.listeners.items():
            listener.setblocking(False)
            await asyncio.start_server(functools.partial(self._to_peer, peer), sock=listener)

    async def _from_peer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """A peer agent's connection: its handshake, then this node's TF server on the private loopback."""
        peer = writer.get_extra_info("peername")
        try:
            client_nonce = await asyncio.wait_for(reader.readexactly(NONCE_BYTES), HANDSHAKE_S)
            frame = await asyncio.wait_for(_read_frame(reader), HANDSHAKE_S)
            hello = hello_cipher(self.secret, CHANNEL, client_nonce).open(frame)
            if hello != self.task.encode():
                raise Refused(f"asked for {hello[:40]!r}, this is {self.task}")
            reply, ciphers = answer(self.secret, CHANNEL, client_nonce)
            receive, send = ciphers["to_server"], ciphers["to_client"]
            writer.write(reply)
            await writer.drain()
            inside = await asyncio.get_running_loop().run_in_executor(None, self.fresh_socket)
            inside.setblocking(False)
            await asyncio.get_running_loop().sock_connect(inside, ("127.0.0.1", self.own_port))
            server = await asyncio.open_connection(sock=inside)
        except Refused as err:
            log.warning("tf network: refused a connection from %s: %s", peer, err)
            writer.close()
            return
        except (OSError, EOFError, TimeoutError, asyncio.IncompleteReadError):
            writer.close()
            return
        await _relay(server, (reader, writer), send, receive)

    async def _to_peer(self, peer: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """A connection from this node's TensorFlow to ``peer``'s virtual address: carried to its agent."""
        try:
            remote = await asyncio.wait_for(asyncio.open_connection(*self.peers[peer]), CONNECT_S)
            first, client_nonce = opening(self.secret, CHANNEL, peer.encode())
            remote[1].write(first)
            server_nonce = await asyncio.wait_for(remote[0].readexactly(NONCE_BYTES), HANDSHAKE_S)
            ciphers = derive_ciphers(self.secret, CHANNEL, client_nonce, server_nonce)
            send, receive = ciphers["to_server"], ciphers["to_client"]
            if receive.open(await asyncio.wait_for(_read_frame(remote[0]), HANDSHAKE_S)) != b"ok":
                raise Refused(f"{peer}'s agent did not accept")
        except (Refused, OSError, EOFError, TimeoutError, asyncio.IncompleteReadError) as err:
            log.warning("tf network: cannot reach %s at %s:%d: %s", peer, *self.peers[peer], err)
            writer.close()
            return
        await _relay((reader, writer), remote, send, receive)
