"""Every change made to TensorFlowOnSpark, applied at run time, in one place.

TFoS 2.2.5 is unmaintained, so it is patched here rather than forked. Left
alone it listens on every interface with an unauthenticated pickle server
(reservations, in the driver) and a multiprocessing manager (ps nodes, so
that the driver can stop them), registers each node under its guess at the
host's address, and logs each node's manager authkey at INFO into the
executor logs. With these patches nothing of TFoS listens on the network
but the reservation server on the driver's address, every node registers
the address its host reaches the driver from, and no authkey or secret is
printed.

In the driver, around ``TFCluster.run`` (:func:`driver_reservations`):

* ``reservation.Server`` builds a
  :class:`~tf_models.tfos.reservation.ReservationServer`: bound to one
  host, signed messages only, a fresh secret per run.
* ``TFSparkNode.run`` wraps the node task it builds in a
  :class:`NodeTaskGuard`: a task Spark resubmits after its executor was
  lost does not start its node again.

In each node task, before TFoS's node code runs (:func:`install_node_patches`,
called when the task closure's
:class:`NodeBoundAddress` is unpickled):

* ``util.get_ip_address`` is :func:`node_address`: the address of this
  host's route to the driver. TFoS's own guess probes a route to 8.8.8.8
  and, on a host without a default route (a cluster's private network),
  falls back to the address the hostname resolves to, which is
  ``127.0.1.1`` on a Debian host without a fixed address: no other host
  reaches a TF server registered there.
* ``reservation.Client`` is :class:`NodeReservationClient`: signed
  messages with the secret from the address, the host name beside the
  address in the node's record, and the manager's authkey hidden.
* ``TFManager.TFManager`` is :class:`LocalManager`: the ps's manager,
  which TFoS makes "remote" (every interface) so that the driver can stop
  the ps, listens on a Unix socket like the chief's and the workers'. A ps
  stops itself once its node has returned
  (:class:`~tf_models.tfos.task.NodeEntry`); the driver never connects.
* The node records TFoS logs at INFO hold the manager authkeys. The
  record a node registers carries its authkey as a
  :class:`~tf_models.tfos.reservation.HiddenBytes`, so every copy of it
  (the driver's cluster info, the records other nodes fetch) prints as
  ``<redacted>``; :class:`RedactAuthkeys`, a filter on TFoS's
  ``TFSparkNode`` logger, redacts the one line TFoS logs before
  registering (``TFSparkNode.reserve: {...}``).

A patch of ``TFSparkNode.uuid`` (where the keys are drawn) would not do:
the node task is TFoS's closure, which cloudpickle ships with its own copy
of the module globals it uses, ``uuid`` among them. Module attributes looked
up at call time (``reservation.Client``, ``util.get_ip_address``, the
``TFManager`` class that ``TFManager.start`` builds) are what can be patched.

The authkeys still travel in the node records, inside signed reservation
messages; no manager they open listens beyond its host.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import socket
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from tensorflowonspark import TFManager as tfos_manager
from tensorflowonspark import TFSparkNode as tfos_node
from tensorflowonspark import reservation as tfos_reservation
from tensorflowonspark import util as tfos_util

from tf_models.tfos.lost_nodes import goes_on_without
from tf_models.tfos.reservation import HiddenBytes, ReservationAddress, ReservationClient, ReservationServer


def node_address(driver_host: str) -> str:
    """The address TFoS registers this node under, and the TF cluster spec names.

    ``SPARK_LOCAL_IP`` if set: the address Spark itself binds on this
    executor (``127.0.0.1`` in the one-machine profile, see
    :mod:`tfbs.launch`). Otherwise the address of this host's route to the
    driver, which every executor reaches: a UDP ``connect`` sends nothing,
    the kernel only picks the route and the source address.

    Parameters
    ----------
    driver_host : str
        The reservation server's address (``spark.driver.host``).
    """
    configured = os.environ.get("SPARK_LOCAL_IP")
    if configured:
        return configured
    family = socket.getaddrinfo(driver_host, None, type=socket.SOCK_DGRAM)[0][0]
    with socket.socket(family, socket.SOCK_DGRAM) as probe:
        probe.connect((driver_host, 9))
        return str(probe.getsockname()[0])


class LocalManager(tfos_manager.TFManager):
    """TFoS's manager, on a Unix socket where TFoS asked for every interface (its "remote" ps manager)."""

    def __init__(self, address: Any = None, authkey: bytes | None = None, *args: Any, **kwargs: Any) -> None:
        if isinstance(address, tuple):
            address = None  # multiprocessing picks a Unix socket of its own
        super().__init__(address, authkey, *args, **kwargs)


class NodeTaskGuard:
    """TFoS's node task, run on a task's first attempt only.

    Spark resubmits the task of an executor it lost (without counting a
    failure, or counting one when the cluster manager reports the
    container killed by a signal) and retries a failed one while
    ``spark.task.maxFailures`` allows; TFoS would start the node again, but
    the TF cluster cannot take it back (its spec is fixed, the reservations
    are closed, a second chief would start training again). So a retried
    ps or chief fails at once, naming its task (Spark then aborts the node
    job and the driver names the loss), and a retried worker of an elastic
    run returns at once: the run goes on without it
    (:mod:`tf_models.tfos.lost_nodes`; a worker that raised stops the run
    all the same, from its node file).

    Parameters
    ----------
    node_task : callable
        TFoS's function of a node's partition (its ``TFSparkNode.run``).
    cluster_template : dict of str to list of int
        TFoS's job name per node index (its ``cluster_meta``).
    elastic_workers : bool
        A retried worker returns instead of failing.
    """

    def __init__(self, node_task: Any, cluster_template: dict[str, list[int]], elastic_workers: bool) -> None:
        self.node_task = node_task
        self.cluster_template = cluster_template
        self.elastic_workers = elastic_workers

    def __call__(self, partition: Iterable[int]) -> Any:
        from pyspark import TaskContext

        node_indexes = list(partition)  # one: the TFoS node index
        task = TaskContext.get()
        if task is None or task.attemptNumber() == 0:
            return self.node_task(iter(node_indexes))
        attempt = f"TF node task {task.partitionId()} is not retried (attempt {task.attemptNumber()})"
        job = next((job for job, indexes in self.cluster_template.items() if node_indexes[-1] in indexes), None)
        if goes_on_without(job, self.elastic_workers):
            print(f"{attempt}: a lost worker; the run goes on without it", file=sys.stderr, flush=True)
            return None
        raise RuntimeError(f"{attempt}: its first attempt was lost with its executor")


def guarded_node_run(run: Any, elastic_workers: bool) -> Any:
    """TFoS's ``TFSparkNode.run``, its node task wrapped in a :class:`NodeTaskGuard`."""

    def node_run(fn: Any, tf_args: Any, cluster_meta: dict, *args: Any, **kwargs: Any) -> NodeTaskGuard:
        task = run(fn, tf_args, cluster_meta, *args, **kwargs)
        return NodeTaskGuard(task, cluster_meta["cluster_template"], elastic_workers)

    return node_run


class NodeReservationClient(ReservationClient):
    """The node's reservation client: the host name in the record, the manager local, the authkey hidden.

    TFoS records a "remote" (ps) manager as ``(host, port)``;
    :class:`LocalManager` listens on a Unix socket instead, so the record
    names that. The authkey is registered as :class:`HiddenBytes`, which
    prints as ``<redacted>`` in every later copy of the record.
    """

    def register(self, reservation: dict) -> Any:
        node = dict(reservation)
        node["hostname"] = socket.gethostname()
        if isinstance(node.get("addr"), tuple) and tfos_node.TFSparkNode.mgr is not None:
            node["addr"] = tfos_node.TFSparkNode.mgr.address
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


def install_node_patches(driver_host: str) -> None:
    """Patch TFoS's node side in this process (idempotent).

    Runs in each PySpark worker that unpickles a node task closure, before
    TFoS's node code starts its manager and registers.

    Parameters
    ----------
    driver_host : str
        The reservation server's address, to which :func:`node_address` finds the route.
    """
    tfos_util.get_ip_address = functools.partial(node_address, driver_host)
    tfos_reservation.Client = NodeReservationClient
    tfos_manager.TFManager = LocalManager
    node_logger = logging.getLogger(tfos_node.__name__)
    if not any(isinstance(f, RedactAuthkeys) for f in node_logger.filters):
        node_logger.addFilter(RedactAuthkeys())


def _restore_address(host: str, port: int, secret: bytes) -> NodeBoundAddress:
    """Unpickle a :class:`NodeBoundAddress`, installing the node side of the patches first."""
    install_node_patches(host)
    return NodeBoundAddress(host, port, secret)


class NodeBoundAddress(ReservationAddress):
    """The reservation server's address as the driver hands it to node tasks.

    Unpickled in a PySpark worker (the node task's closure carries it), it
    installs the node side of the patches before TFoS's node code runs.
    """

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore_address, (self[0], self[1], bytes(self.secret)))


@contextmanager
def driver_reservations(host: str, elastic_workers: bool = False) -> Iterator[None]:
    """Within the block, TFoS's ``reservation.Server(count)`` is a :class:`ReservationServer` on ``host``,
    and its node tasks are guarded (:class:`NodeTaskGuard`).

    Wrap ``TFCluster.run`` in it; the server it starts keeps running after
    the block.

    Parameters
    ----------
    host : str
        The address to listen on, reachable by every executor: the
        driver's ``spark.driver.host``.
    elastic_workers : bool
        A lost worker's resubmitted task returns instead of failing.
    """
    server, run = tfos_reservation.Server, tfos_node.run
    tfos_reservation.Server = functools.partial(ReservationServer, host=host, address_type=NodeBoundAddress)
    tfos_node.run = guarded_node_run(run, elastic_workers)
    try:
        yield
    finally:
        tfos_reservation.Server, tfos_node.run = server, run
