"""TFoS's reservation exchange, authenticated and bound to one interface.

TFoS's own reservation server (``tensorflowonspark.reservation``) listens on
every interface of the driver, unpickles whatever it receives, and answers
any caller with every node's record, manager authkeys included. This module
keeps TFoS's message kinds and replaces the transport:

* :class:`ReservationServer` binds the one address it is given (the
  driver's ``spark.driver.host``, see :func:`tf_models.tfos.run_cluster`)
  and draws a fresh 256-bit secret for each run. It listens only until
  every node has the cluster's records: a few seconds at the start of a
  training, not the hours it runs.
* Every message is framed as ``length | HMAC-SHA256(secret, direction |
  payload) | payload``. The receiver checks the tag with
  :func:`hmac.compare_digest` before it unpickles anything: a caller
  without the secret (TFoS's own client, a raw pickle, a wrong key) is
  refused and its bytes are dropped unread by ``pickle``. The direction
  label keeps a reply from being replayed as a request.
* :class:`ReservationAddress`, the ``(host, port)`` TFoS ships to the node
  tasks inside the task closure, carries the secret to the executors. Its
  ``repr`` is TFoS's ``(host, port)``, so no log line shows the secret, and
  nothing writes it to a file or an environment variable. Unpickling it on
  an executor installs the node side (:mod:`tf_models.tfos.tfos_patches`).

Why not Spark's barrier mode (``BarrierTaskContext.allGather``): TFoS does
the exchange inline in its node task (``TFSparkNode.run``), so using it would
mean replacing TFoS's whole node task and shutdown, and barrier stages retry
or abort all nodes together, which changes the failure handling the
``tf_models.tfos`` package is built on (one dead node named within
seconds, no retries). Signing TFoS's messages keeps TFoS as it is.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import pickle
import secrets
import select
import socket
import struct
import threading
import time
from typing import Any

from tensorflowonspark import reservation as tfos_reservation

logger = logging.getLogger(__name__)

#: Bytes of the per-run secret (256 bits).
SECRET_BYTES = 32
#: Largest message accepted, in bytes: a few hundred node records fit easily.
MAX_MESSAGE_BYTES = 1 << 20
#: Seconds a peer may take to send one whole message, so a stalled or
#: hostile peer holds up the server's single thread no longer than this.
MESSAGE_TIMEOUT_S = 10.0

REQUEST = b"tfbs-reservation request\0"
REPLY = b"tfbs-reservation reply\0"
_HEADER = struct.Struct(">I")
_TAG_BYTES = hashlib.sha256().digest_size


class HiddenBytes(bytes):
    """Bytes whose ``repr`` and ``str`` hide the value.

    TFoS logs whole node records at INFO (``TFSparkNode.reserve: {...}``,
    ``node: {...}``) and the records hold each node's manager authkey.
    Keys and secrets of this type print as ``<redacted>`` wherever they
    end up.
    """

    def __repr__(self) -> str:
        return "<redacted>"

    __str__ = __repr__

    def __reduce__(self) -> tuple[Any, ...]:
        return (HiddenBytes, (bytes(self),))


class ReservationRefused(Exception):
    """A message failed authentication (or framing) and was dropped unread."""


def _sign(secret: bytes, direction: bytes, payload: bytes) -> bytes:
    """HMAC-SHA256 of ``direction | payload`` under ``secret``."""
    return hmac.new(secret, direction + payload, hashlib.sha256).digest()


def send_message(sock: socket.socket, secret: bytes, direction: bytes, message: Any) -> None:
    """Pickle ``message`` and send it signed: ``length | tag | payload``."""
    payload = pickle.dumps(message)
    body = _sign(secret, direction, payload) + payload
    sock.sendall(_HEADER.pack(len(body)) + body)


def _receive_exactly(sock: socket.socket, size: int, deadline: float | None) -> bytes:
    """``size`` bytes from ``sock`` by ``deadline`` (``time.monotonic()``; ``None``: the socket's timeout).

    Raises :class:`ConnectionError` if the peer closes first and
    :class:`TimeoutError` if the deadline passes.
    """
    chunks, left = [], size
    while left:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("message not received in time")
            sock.settimeout(remaining)
        chunk = sock.recv(min(left, 65536))
        if not chunk:
            raise ConnectionError("connection closed")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def receive_message(sock: socket.socket, secret: bytes, direction: bytes, within_s: float | None = None) -> Any:
    """Receive one message and unpickle it only if its tag verifies.

    Parameters
    ----------
    sock : socket.socket
        A connected socket.
    secret : bytes
        The run's secret.
    direction : bytes
        :data:`REQUEST` or :data:`REPLY`, as the sender signed it.
    within_s : float or None
        The whole message must arrive within this many seconds (a peer
        trickling bytes cannot hold the reader longer); ``None`` leaves
        the socket's own timeout.

    Raises
    ------
    ReservationRefused
        If the length is out of bounds or the tag does not match; the payload
        is never unpickled.
    ConnectionError, OSError
        If the peer closed the connection or the read timed out.
    """
    deadline = None if within_s is None else time.monotonic() + within_s
    (size,) = _HEADER.unpack(_receive_exactly(sock, _HEADER.size, deadline))
    if not _TAG_BYTES < size <= MAX_MESSAGE_BYTES:
        raise ReservationRefused(f"message of {size} bytes")
    body = _receive_exactly(sock, size, deadline)
    tag, payload = body[:_TAG_BYTES], body[_TAG_BYTES:]
    if not hmac.compare_digest(tag, _sign(secret, direction, payload)):
        raise ReservationRefused("bad signature")
    return pickle.loads(payload)  # authenticated above


def _restore_address(host: str, port: int, secret: bytes) -> ReservationAddress:
    """Unpickle a :class:`ReservationAddress`, installing the node side of the patches first."""
    from tf_models.tfos.tfos_patches import install_node_patches

    install_node_patches(host)
    return ReservationAddress(host, port, secret)


class ReservationAddress(tuple[str, int]):
    """``(host, port)`` of a :class:`ReservationServer`, carrying the run's secret.

    TFoS passes the server address to every node task in its task closure
    (``cluster_meta['server_addr']``) and hands it to
    ``reservation.Client``; that is how the secret reaches the executors.
    Printed, it is the plain ``(host, port)``.
    """

    secret: HiddenBytes

    def __new__(cls, host: str, port: int, secret: bytes) -> ReservationAddress:
        address = super().__new__(cls, (host, port))
        address.secret = HiddenBytes(secret)
        return address

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore_address, (self[0], self[1], bytes(self.secret)))


def _bind(host: str, ports: list[int]) -> socket.socket:
    """A listening socket on ``host`` and the first free port of ``ports``."""
    if host in ("", "0.0.0.0", "::"):
        raise ValueError(f"the reservation server binds one interface, not {host!r}")
    family = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)[0][0]
    errors = []
    for port in ports:
        try:
            return socket.create_server((host, port), family=family, backlog=64)
        except OSError as err:
            errors.append(f"{port}: {err}")
    raise OSError(f"reservation server cannot bind {host}: {'; '.join(errors)}")


class ReservationServer(tfos_reservation.Server):
    """TFoS's reservation server, bound to ``host`` and accepting only signed messages.

    Parameters
    ----------
    count : int
        Number of nodes expected to register.
    host : str
        The address to listen on. Nodes connect to it, so it must be an
        address they reach (the driver's ``spark.driver.host``); loopback on
        one machine. A wildcard address is refused.

    Attributes
    ----------
    secret : HiddenBytes
        This run's secret; shipped to the nodes in the address
        :meth:`start` returns.
    """

    def __init__(self, count: int, host: str) -> None:
        super().__init__(count)
        self.host = host
        self.secret = HiddenBytes(secrets.token_bytes(SECRET_BYTES))
        #: Nodes that fetched the whole cluster's records: when all have, nothing more is asked.
        self.informed = 0

    def start(self) -> ReservationAddress:
        """Listen in a daemon thread; return the address (with the secret) nodes connect to.

        TFoS's ``TFOS_SERVER_PORT`` (a port or a range ``9997-9999``) still
        chooses the port; ``TFOS_SERVER_HOST`` is ignored in favour of ``host``.
        """
        server_sock = _bind(self.host, self.get_server_ports())
        port = server_sock.getsockname()[1]
        logger.info("tfbs reservations: listening on %s:%d (signed messages only)", self.host, port)
        threading.Thread(target=self._listen, args=(server_sock,), name="tfbs-reservations", daemon=True).start()
        return ReservationAddress(self.host, port, self.secret)

    def _listen(self, server_sock: socket.socket) -> None:
        """Serve until :meth:`stop`, or until every node has the cluster's records: one message, one reply."""
        connections = [server_sock]
        try:
            while not self.done:
                readable, _, _ = select.select(connections, [], [], 1.0)
                for sock in readable:
                    if sock is server_sock:
                        client, _ = server_sock.accept()
                        connections.append(client)
                    elif not self._serve_one(sock):
                        connections.remove(sock)
                        sock.close()
        finally:
            for sock in connections:
                sock.close()

    def _serve_one(self, sock: socket.socket) -> bool:
        """Answer one message on ``sock``; ``False`` when the connection is to be closed."""
        try:
            peer = sock.getpeername()
            message = receive_message(sock, self.secret, REQUEST, within_s=MESSAGE_TIMEOUT_S)
        except (ReservationRefused, TimeoutError) as err:
            logger.warning("tfbs reservations: refused a message from %s: %s", peer, err)
            return False
        except Exception:  # noqa: BLE001 - closed or reset; nothing to answer
            return False
        try:
            send_message(sock, self.secret, REPLY, self._reply(message))
        except Exception as err:  # noqa: BLE001 - keep serving the other nodes
            logger.warning("tfbs reservations: cannot answer %s: %s", peer, err)
            return False
        return True

    def _reply(self, message: Any) -> Any:
        """TFoS's answers: ``REG`` registers a node, ``QUERY`` asks if all have, ``QINFO`` lists them."""
        kind = message.get("type") if isinstance(message, dict) else None
        if kind == "REG":
            self.reservations.add(message["data"])
            return "OK"
        if kind == "QUERY":
            return self.reservations.done()
        if kind == "QINFO":
            if self.reservations.done():
                # A node asks once before it registers and once when all have:
                # after the last node's second ask, no node needs the server.
                self.informed += 1
                if self.informed >= self.reservations.required:
                    self.done = True
                    logger.info("tfbs reservations: every node has the cluster's records; no longer listening")
            return self.reservations.get()
        if kind == "STOP":
            self.done = True
            return "OK"
        return "ERR"


class ReservationClient(tfos_reservation.Client):
    """TFoS's reservation client, speaking signed messages; built from a :class:`ReservationAddress`.

    TFoS's node task calls ``reservation.Client(cluster_meta['server_addr'])``
    and then ``register``, ``await_reservations``, ``get_reservations`` and
    ``close``, which the base class builds on :meth:`_request`.
    """

    def __init__(self, server_addr: ReservationAddress) -> None:
        secret = getattr(server_addr, "secret", None)
        if not secret:
            raise ValueError("the reservation address carries no secret")
        self.secret = secret
        self.server_addr = (server_addr[0], server_addr[1])
        self.sock = socket.create_connection(self.server_addr, timeout=MESSAGE_TIMEOUT_S)
        logger.info("tfbs reservations: connected to %s:%d", *self.server_addr)

    def _request(self, msg_type: str, msg_data: Any = None) -> Any:
        message: dict[str, Any] = {"type": msg_type}
        if msg_data:
            message["data"] = msg_data
        send_message(self.sock, self.secret, REQUEST, message)
        return receive_message(self.sock, self.secret, REPLY)
