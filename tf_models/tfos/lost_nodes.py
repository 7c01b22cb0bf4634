"""A lost TF node: named with the cause Spark gives, and what the run does about it, per role.

A node is lost when its host has no Spark executor left: the host died or
was cut off, or the node's executor, the only one there, ended (a YARN
memory kill, a pre-emption, a JVM crash). Spark drops a closed executor's
block manager at once (how the driver notices, within half a second), but
gives the cluster manager's reason a moment later (YARN: when the
ResourceManager reports the container's exit to the application master,
seconds) or, for a host lost whole, only when the cluster manager declares
the host lost (YARN: the NodeManager's expiry, 10 minutes by default). So
the driver waits up to :data:`LOSS_REASON_WAIT_S` for that reason before
calling the host lost.

What the run does when a node is lost, per role (this module is the one
place to change it):

========  ==================================  =============================================
role      the run                             because
========  ==================================  =============================================
ps        stops; the same command resumes     the variables it holds are nowhere else
          from the last checkpoint
chief     stops; resumes so                   it runs the training loop and writes the
                                              checkpoints
worker    goes on with the workers left       TF's ``ClusterCoordinator`` runs a lost
          (elastic workers: ps strategy,      worker's steps on the others; the run stops
          ``on_worker_loss: continue``);      once no worker is left. Under all-reduce
          else stops and resumes so           every member holds the collective
========  ==================================  =============================================

A worker is lost three ways: its TF process dies (its watcher then ends
the node's task as done, :func:`tf_models.tfos.task.run_isolated`), its
executor ends (Spark resubmits the task, which then returns at once,
:class:`tf_models.tfos.tfos_patches.NodeTaskGuard`) or its host goes (the
driver sees the host's block managers gone). It does not come back: TF's
coordinator takes a worker back only at the address its cluster was built
with, and the replacement executor YARN may start is elsewhere.

An executor killed for its memory would be killed again at the same
point: the advice then names the settings to raise before resuming.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tf_models.tfos.failures import ClusterFailed, lost_node_message, placed_label
from tf_models.tfos.node import WORKER

#: How long the driver waits for Spark's reason once a node's host has no
#: executor left (YARN's container report reaches Spark within seconds).
LOSS_REASON_WAIT_S = 10.0

#: What to change before resuming a node whose executor was killed for its memory (it would be again).
MEMORY_ADVICE = (
    "give the executors more memory (spark.executor.memoryOverhead, spark.executor.memory) before running again"
)

#: Executors removed by Spark: ``{executor id: (host, reason)}`` (:func:`tf_models.tfos.spark_status.removed_executors`).
Removed = Callable[[], dict[str, tuple[str, str]]]


def loss_reason(node: dict[str, Any], removed: Removed, wait_s: float = LOSS_REASON_WAIT_S) -> str | None:
    """Spark's reason for removing ``node``'s executor, asked again for up to ``wait_s``; ``None`` if none came.

    Parameters
    ----------
    node : dict
        The node's placement record (:func:`tf_models.tfos.run_cluster`):
        its executor is found by id, or by host when the id is unknown.
    removed : callable
        The executors Spark has removed so far, with host and reason.
    wait_s : float
        Seconds to keep asking.

    Examples
    --------
    >>> node = {"job_name": "worker", "task_index": 1, "spark_executor": "3", "host": "10.0.0.13"}
    >>> loss_reason(node, lambda: {"3": ("node3", "Container killed by YARN for exceeding physical memory limits")})
    'Container killed by YARN for exceeding physical memory limits'
    >>> loss_reason(node, lambda: {"2": ("node2", "Command exited with code 137")}, wait_s=0) is None
    True
    """
    deadline = time.monotonic() + wait_s
    executor, hosts = node.get("spark_executor"), {node.get("host"), node.get("hostname")}
    while True:
        for removed_id, (host, reason) in removed().items():
            if removed_id == executor or (executor is None and host in hosts):
                return reason
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.5)


def goes_on_without(job_name: str | None, elastic_workers: bool) -> bool:
    """Whether the run goes on when ``node`` is lost (the table above).

    Examples
    --------
    >>> [goes_on_without(job, True) for job in ("ps", "chief", "worker")]
    [False, False, True]
    >>> goes_on_without("worker", False)
    False
    """
    return elastic_workers and job_name == WORKER


def goes_on_note(loss: str, workers_left: int) -> str:
    """The line the driver logs when a worker is lost (``loss`` says how) and training goes on.

    Examples
    --------
    >>> node = {"job_name": "worker", "task_index": 1, "spark_executor": "3", "host": "10.0.0.13", "hostname": "node3"}
    >>> goes_on_note(str(lost_node_failure(node, None)), 1)
    'TF node worker:1 (Spark executor 3, host node3 (10.0.0.13)) lost: no Spark executor left on its host; training goes on with the 1 worker left'
    """
    return f"{loss}; training goes on with the {workers_left} worker{'s' if workers_left != 1 else ''} left"


def lost_node_failure(node: dict[str, Any], reason: str | None) -> ClusterFailed:
    """The error that stops the run when ``node`` is lost (the table above says which roles stop it).

    Parameters
    ----------
    node : dict
        The lost node's placement record.
    reason : str or None
        Spark's reason for removing its executor (:func:`loss_reason`);
        ``None`` when none came: the host is down or cut off.

    Examples
    --------
    >>> node = {"job_name": "ps", "task_index": 0, "spark_executor": "2", "host": "10.0.0.12", "hostname": "node2"}
    >>> str(lost_node_failure(node, None))
    'TF node ps:0 (Spark executor 2, host node2 (10.0.0.12)) lost: no Spark executor left on its host'
    >>> str(lost_node_failure(node, "Container preempted by scheduler"))
    'TF node ps:0 (Spark executor 2, host node2 (10.0.0.12)) lost: Spark removed its executor: Container preempted by scheduler'
    """
    if reason is None:
        return ClusterFailed(lost_node_message(node))
    reason = " ".join(reason.split())  # one line: YARN's diagnostics run over several
    message = (
        f"{placed_label(node, node.get('spark_executor'))} lost: Spark removed its executor: {reason.rstrip('. ')}"
    )
    if "memory" in reason.lower():
        message += f"; {MEMORY_ADVICE}"
    return ClusterFailed(message)
