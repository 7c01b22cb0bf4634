"""TFoS's reservation exchange, sealed with a per-run secret and bound to one interface.

TFoS's own reservation server (``tensorflowonspark.reservation``) listens on
every interface of the driver, unpickles whatever it receives, and answers
any caller with every node's record, manager authkeys included. This module
keeps TFoS's message kinds and replaces the transport:

* :class:`ReservationServer` binds the one address it is given (the
  driver's ``spark.driver.host``, see :func:`tf_models.tfos.run_cluster`)
  and draws a fresh 256-bit secret for each run. It listens only until
  every node has the cluster's records: a few seconds at the start of a
  training, not the hours it runs.
* Every connection is sealed (:mod:`tf_models.tfos.sealed`): a handshake
  keyed by the secret and both ends' random bytes authenticates the two
  ends, then every message travels encrypted and authenticated
  (ChaCha20-Poly1305). A caller without the secret (TFoS's own client, a
  raw pickle, a wrong key, a recorded connection replayed) is refused
  before anything it sent is unpickled; the node records, with their
  manager authkeys, never cross the network in clear.
* Each connection is served by a thread of its own, and each message must
  arrive whole within :data:`MESSAGE_TIMEOUT_S`: a slow or hostile client
  holds up no one but itself.
* :class:`ReservationAddress`, the ``(host, port)`` TFoS ships to the node
  tasks inside the task closure, carries the secret to the executors. Its
  ``repr`` is TFoS's ``(host, port)``, so no log line shows the secret, and
  nothing writes it to a file or an environment variable. The driver's
  patches hand out a subclass whose unpickling on an executor installs the
  node side (:class:`tf_models.tfos.tfos_patches.NodeBoundAddress`).

Why not Spark's barrier mode (``BarrierTaskContext.allGather``): TFoS does
the exchange inline in its node task (``TFSparkNode.run``), so using it would
mean replacing TFoS's whole node task and shutdown, and barrier stages retry
or abort all nodes together, which changes the failure handling the
``tf_models.tfos`` package is built on (one dead node named within
seconds, no retries). Sealing TFoS's messages keeps TFoS as it is.
"""

from __future__ import annotations

import logging
import pickle
import secrets
import select
import socket
import threading
from typing import Any

from tensorflowonspark import reservation as tfos_reservation

from tf_models.tfos.sealed import SECRET_BYTES, HiddenBytes, Refused, SealedSocket, accept_sealed, connect_sealed

logger = logging.getLogger(__name__)

#: Seconds a client may take over the handshake, and over each whole message after it.
MESSAGE_TIMEOUT_S = 10.0
#: Keys of the reservation channel open no other channel's frames, and back.
CHANNEL = b"tfbs reservations"
#: What a node's client says in its handshake.
HELLO = b"tfbs reservation client"


def _request_kind(message: Any) -> str | None:
    return message.get("type") if isinstance(message, dict) else None


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
        return (type(self), (self[0], self[1], bytes(self.secret)))


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
    """TFoS's reservation server, bound to ``host`` and accepting only sealed connections.

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

    def __init__(self, count: int, host: str, address_type: type[ReservationAddress] = ReservationAddress) -> None:
        super().__init__(count)
        self.host = host
        #: What :meth:`start` returns: the node side's patches give their own (tfos_patches.NodeBoundAddress).
        self.address_type = address_type
        self.secret = HiddenBytes(secrets.token_bytes(SECRET_BYTES))
        #: Nodes that fetched the whole cluster's records: when all have, nothing more is asked.
        self.informed = 0
        self._lock = threading.Lock()

    def start(self) -> ReservationAddress:
        """Listen in a daemon thread; return the address (with the secret) nodes connect to.

        TFoS's ``TFOS_SERVER_PORT`` (a port or a range ``9997-9999``) still
        chooses the port; ``TFOS_SERVER_HOST`` is ignored in favour of ``host``.
        """
        server_sock = _bind(self.host, self.get_server_ports())
        port = server_sock.getsockname()[1]
        logger.info("tfbs reservations: listening on %s:%d (sealed connections only)", self.host, port)
        threading.Thread(target=self._listen, args=(server_sock,), name="tfbs-reservations", daemon=True).start()
        return self.address_type(self.host, port, self.secret)

    def _listen(self, server_sock: socket.socket) -> None:
        """Accept until :meth:`stop`, or until every node has the cluster's records; a thread per connection."""
        try:
            while not self.done:
                if select.select([server_sock], [], [], 1.0)[0]:
                    client, peer = server_sock.accept()
                    threading.Thread(
                        target=self._serve, args=(client, peer), name="tfbs-reservation", daemon=True
                    ).start()
        finally:
            server_sock.close()

    def _serve(self, sock: socket.socket, peer: Any) -> None:
        """Serve one connection: the handshake, then one reply per request, until it closes or stalls."""
        try:
            sealed, hello = accept_sealed(sock, self.secret, CHANNEL, within_s=MESSAGE_TIMEOUT_S)
            if hello != HELLO:
                raise Refused(f"an unknown hello {hello[:40]!r}")
            while not self.done or self._informing:
                message = pickle.loads(sealed.receive(within_s=MESSAGE_TIMEOUT_S))  # authenticated above
                sealed.send(pickle.dumps(self._reply(message)))
        except Refused as err:
            logger.warning("tfbs reservations: refused a connection from %s: %s", peer, err)
        except Exception:  # noqa: BLE001 - closed, reset or out of time: the client's to retry
            pass
        finally:
            sock.close()

    @property
    def _informing(self) -> bool:
        """Whether some node may still ask for the cluster's records."""
        return self.reservations.done() and self.informed < self.reservations.required

    def _reply(self, message: Any) -> Any:
        """TFoS's answers: ``REG`` registers a node, ``QUERY`` asks if all have, ``QINFO`` lists them."""
        kind = _request_kind(message)
        if kind == "REG":
            self.reservations.add(message["data"])
            return "OK"
        if kind == "QUERY":
            return self.reservations.done()
        if kind == "QINFO":
            if self.reservations.done():
                # A node asks once before it registers and once when all have:
                # after the last node's second ask, no node needs the server.
                with self._lock:
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
    """TFoS's reservation client over a sealed connection; built from a :class:`ReservationAddress`.

    TFoS's node task calls ``reservation.Client(cluster_meta['server_addr'])``
    and then ``register``, ``await_reservations``, ``get_reservations`` and
    ``close``, which the base class builds on :meth:`_request`.

    Raises
    ------
    tf_models.tfos.sealed.Refused
        If the server does not hold the secret.
    """

    def __init__(self, server_addr: ReservationAddress) -> None:
        secret = getattr(server_addr, "secret", None)
        if not secret:
            raise ValueError("the reservation address carries no secret")
        self.server_addr = (server_addr[0], server_addr[1])
        sock = socket.create_connection(self.server_addr, timeout=MESSAGE_TIMEOUT_S)
        self.sock = sock
        self.sealed: SealedSocket = connect_sealed(sock, secret, CHANNEL, HELLO, within_s=MESSAGE_TIMEOUT_S)
        logger.info("tfbs reservations: connected to %s:%d", *self.server_addr)

    def _request(self, msg_type: str, msg_data: Any = None) -> Any:
        message: dict[str, Any] = {"type": msg_type}
        if msg_data:
            message["data"] = msg_data
        self.sealed.send(pickle.dumps(message))
        return pickle.loads(self.sealed.receive(within_s=MESSAGE_TIMEOUT_S))  # authenticated: the server's
