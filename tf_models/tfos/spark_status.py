"""What the driver learns from Spark about the node job: executors, the node stage, task placement.

Read from the SparkContext's status tracker and status store (the web UI
may be off); nothing here knows TFoS.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # typing only: pyspark loads lazily
    from pyspark import SparkContext


def await_executors(sc: SparkContext, count: int, timeout: float) -> int:
    """Wait until ``count`` executors have registered, then return the number registered.

    Executors register a few seconds after the SparkContext starts. TFoS's
    reservation step would also wait, but checking here gives a clear error
    instead of a reservation timeout.

    Parameters
    ----------
    sc : SparkContext
        The application.
    count : int
        Executors wanted, not counting the driver.
    timeout : float
        Seconds to wait at most.

    Returns
    -------
    int
        The executors registered when ``count`` was reached or time ran out.
    """
    deadline = time.monotonic() + timeout
    while True:
        registered = len(sc.statusTracker().getExecutorInfos()) - 1  # minus the driver
        if registered >= count or time.monotonic() > deadline:
            return registered
        time.sleep(1)


def live_hosts(sc: SparkContext) -> set[str]:
    """The hosts of the application's live executors and driver, as Spark names them (a name or an address).

    Read from the block managers, not the status tracker: when an
    executor's connection closes, YARN's scheduler drops its block manager
    at once but keeps the executor listed until the ResourceManager gives
    a loss reason, which for a lost host waits for the NodeManager's expiry
    (the driver stopped 11 s after a host was lost with both its executors
    still listed).
    """
    keys = sc._jsc.sc().getExecutorMemoryStatus().keysIterator()  # "host:port" per block manager
    hosts: set[str] = set()
    while keys.hasNext():
        hosts.add(str(keys.next()).rsplit(":", 1)[0])
    return hosts


def removed_executors(sc: SparkContext) -> dict[str, tuple[str, str]]:
    """The executors Spark has removed, each with its host and Spark's reason: ``{id: (host, reason)}``.

    The reason is the cluster manager's account of the executor's end, as
    Spark's status store keeps it: YARN's container exit (``Container killed
    by YARN for exceeding physical memory limits``, a pre-emption, an exit
    code), a standalone worker's ``Command exited with code 137``. An
    executor on a host lost whole is removed only when the cluster manager
    declares the host lost (YARN: the NodeManager's expiry).
    """
    summaries = sc._jsc.sc().statusStore().executorList(False).iterator()
    removed: dict[str, tuple[str, str]] = {}
    while summaries.hasNext():
        summary = summaries.next()
        if not summary.isActive():
            reason = summary.removeReason()
            host = str(summary.hostPort()).rsplit(":", 1)[0]
            removed[str(summary.id())] = (host, str(reason.get()) if reason.isDefined() else "no reason given")
    return removed


def _stage_tasks(sc: SparkContext, stage_id: int) -> list[tuple[int, str, str]]:
    """``(partition, status, executor id)`` of every task attempt of ``stage_id``'s current attempt.

    Read from Spark's status store, which the driver keeps whether or not
    the web UI runs.
    """
    stage = sc.statusTracker().getStageInfo(stage_id)
    if stage is None:
        return []
    tasks = sc._jsc.sc().statusStore().taskList(stage_id, stage.currentAttemptId, stage.numTasks * 8).iterator()
    found = []
    while tasks.hasNext():
        task = tasks.next()
        found.append((int(task.index()), str(task.status()), str(task.executorId())))
    return found


def succeeded_partitions(sc: SparkContext, stage_id: int) -> set[int]:
    """The partitions of ``stage_id`` with a successful task.

    The status tracker counts successes; the driver needs to know whose
    (a lost worker's task may never end, or end later than the others).
    """
    return {partition for partition, status, _ in _stage_tasks(sc, stage_id) if status == "SUCCESS"}


def node_stage_id(sc: SparkContext, num_nodes: int) -> int | None:
    """Id of the running stage of TFoS's node job (the stage with one task per node).

    Parameters
    ----------
    sc : SparkContext
        The application.
    num_nodes : int
        Number of TF nodes, hence of tasks in the node stage.

    Returns
    -------
    int or None
        The stage id, or ``None`` if no active stage has ``num_nodes`` tasks.
    """
    tracker = sc.statusTracker()
    for stage_id in tracker.getActiveStageIds():
        stage = tracker.getStageInfo(stage_id)
        if stage is not None and stage.numTasks == num_nodes:
            return stage_id
    return None


def spark_placement(sc: SparkContext, stage_id: int | None) -> dict[int, str]:
    """Map each TFoS node index to its Spark executor id.

    TFoS's ``cluster_info`` has the node index, host and port, but not the
    Spark executor. In the node stage, a task's ``index`` is the TFoS node
    index.

    Parameters
    ----------
    sc : SparkContext
        The application.
    stage_id : int or None
        The node stage (see :func:`node_stage_id`).

    Returns
    -------
    dict of int to str
        TFoS node index -> Spark executor id of its running or finished task.
    """
    if stage_id is None:
        return {}
    return {
        partition: executor
        for partition, status, executor in _stage_tasks(sc, stage_id)
        if status in ("RUNNING", "SUCCESS")
    }
