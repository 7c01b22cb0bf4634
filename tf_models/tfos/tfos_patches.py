"""Every change made to TensorFlowOnSpark, applied at run time, in one place.

TFoS 2.2.5 is unmaintained, so it is patched here rather than forked. Left
alone it listens on every interface with an unauthenticated pickle server
(reservations, in the driver) and a multiprocessing manager (ps nodes), and
logs each node's manager authkey at INFO into the executor logs. With
these patches nothing of TFoS listens beyond the configured interface
(loopback on one machine) and no authkey or secret is printed.

In the driver, around ``TFCluster.run`` (:func:`driver_reservations`):

* ``reservation.Server`` builds a
  :class:`~tf_models.tfos.reservation.ReservationServer`: bound to one
  host, signed messages only, a fresh secret per run.

In each node task, before TFoS's node code runs (:func:`install_node_patches`,
called when the task closure's
:class:`~tf_models.tfos.reservation.ReservationAddress` is unpickled):

* ``reservation.Client`` is :class:`NodeReservationClient`: signed messages
  with the secret from the address, and the ps manager's address as bound.
* ``TFManager.TFManager`` is :class:`BoundManager`: a "remote" manager
  (ps nodes; the driver connects to it to stop them) listens on
  :func:`node_address` instead of every interface. Chief and worker
  managers stay on their Unix socket.
* The node records TFoS logs at INFO hold the manager authkeys. The
  record a node registers carries its authkey as a
  :class:`~tf_models.tfos.reservation.HiddenBytes`, so every copy of it
  (the driver's cluster info, the records other nodes fetch, TFoS's
  shutdown closures) prints as ``<redacted>``; :class:`RedactAuthkeys`, a
  filter on TFoS's ``TFSparkNode`` logger, redacts the one line TFoS logs
  before registering (``TFSparkNode.reserve: {...}``).

A patch of ``TFSparkNode.uuid`` (where the keys are drawn) would not do:
the node task is TFoS's closure, which cloudpickle ships with its own copy
of the module globals it uses, ``uuid`` among them. Module attributes looked
up at call time (``reservation.Client``, the ``TFManager`` class that
``TFManager.start`` builds) are what can be patched.

The authkeys still travel in the node records, but only inside signed
reservation messages and inside the task closures of TFoS's shutdown.
"""

from __future__ import annotations

import functools
import logging
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tensorflowonspark import TFManager as tfos_manager
from tensorflowonspark import TFSparkNode as tfos_node
from tensorflowonspark import reservation as tfos_reservation
from tensorflowonspark import util as tfos_util

from tf_models.tfos.reservation import HiddenBytes, ReservationClient, ReservationServer

_WILDCARDS = ("", "0.0.0.0", "::")


def node_address() -> str:
    """The address this node's TFoS manager listens on.

    ``SPARK_LOCAL_IP`` if set: the address Spark itself binds on this
    executor (``127.0.0.1`` in the one-machine profile, see
    :mod:`tfbs.session`). Otherwise TFoS's own guess at the host's address,
    the one it registers the node under.
    """
    return os.environ.get("SPARK_LOCAL_IP") or tfos_util.get_ip_address()


class BoundManager(tfos_manager.TFManager):
    """TFoS's manager, listening on :func:`node_address` where TFoS asked for every interface."""

    def __init__(self, address: Any = None, authkey: bytes | None = None, *args: Any, **kwargs: Any) -> None:
        if isinstance(address, tuple) and address[0] in _WILDCARDS:
            address = (node_address(), address[1])
        super().__init__(address, authkey, *args, **kwargs)


class NodeReservationClient(ReservationClient):
    """The node's reservation client: registers the ps manager as bound, and the authkey hidden.

    TFoS records a remote (ps) manager as ``(its guess at the host, port)``
    and the driver connects there to stop the ps. :class:`BoundManager`
    listens on :func:`node_address` instead, so the record says so.
    Chief and worker managers are Unix socket paths and stay as they are.
    The authkey is registered as :class:`HiddenBytes`, which prints as
    ``<redacted>`` in every later copy of the record.
    """

    def register(self, reservation: dict) -> Any:
        node = dict(reservation)
        if isinstance(node.get("addr"), tuple):
            node["addr"] = (node_address(), node["addr"][1])
        if node.get("authkey") is not None:
            node["authkey"] = HiddenBytes(node["authkey"])
        return super().register(node)


#: An authkey in a logged node record: ``'authkey': b'...'`` or ``b"..."``, escapes included.
_AUTHKEY_REPR = re.compile(r"""('authkey': )b(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")""")


class RedactAuthkeys(logging.Filter):
    """Replaces the authkey in a logged TFoS node record by ``<redacted>``.

    TFoS formats its messages before logging them, so the key is in the
    message text as Python's ``repr`` of bytes.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and "'authkey': b" in record.msg:
            record.msg = _AUTHKEY_REPR.sub(r"\1<redacted>", record.msg)
        return True


def install_node_patches() -> None:
    """Patch TFoS's node side in this process (idempotent).

    Runs in each PySpark worker that unpickles a node task closure, before
    TFoS's node code starts its manager and registers.
    """
    tfos_reservation.Client = NodeReservationClient
    tfos_manager.TFManager = BoundManager
    node_logger = logging.getLogger(tfos_node.__name__)
    if not any(isinstance(f, RedactAuthkeys) for f in node_logger.filters):
        node_logger.addFilter(RedactAuthkeys())


@contextmanager
def driver_reservations(host: str) -> Iterator[None]:
    """Within the block, TFoS's ``reservation.Server(count)`` is a :class:`ReservationServer` on ``host``.

    Wrap ``TFCluster.run`` in it; the server it starts keeps running after
    the block.

    Parameters
    ----------
    host : str
        The address to listen on, reachable by every executor: the
        driver's ``spark.driver.host``.
    """
    original = tfos_reservation.Server
    tfos_reservation.Server = functools.partial(ReservationServer, host=host)
    try:
        yield
    finally:
        tfos_reservation.Server = original
