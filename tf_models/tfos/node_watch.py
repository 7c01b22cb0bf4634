"""The driver following its TF nodes: each node's process, the nodes lost and the run's end.

:func:`await_nodes` waits until the chief and workers are done, acting on
each node lost (its process, its executor or its host) as the role's policy
says (:mod:`tf_models.tfos.lost_nodes`); :func:`stop_cluster` then waits
for the ps nodes to stop. A node the run cannot go on without ends the run
as :class:`~tf_models.tfos.failures.ClusterFailed`, the SparkContext left
usable (:func:`fail_cluster`).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tf_models.tfos.failures import (
    ClusterFailed,
    describe_failure,
    failure_message,
    node_label,
    nodes_on_lost_hosts,
)
from tf_models.tfos.lost_nodes import goes_on_note, goes_on_without, loss_reason, lost_node_failure
from tf_models.tfos.node import CHIEF, PS, WORKER
from tf_models.tfos.node_files import read_node_files
from tf_models.tfos.spark_status import live_hosts, removed_executors, succeeded_partitions

if TYPE_CHECKING:  # typing only: pyspark loads lazily
    from pyspark import SparkContext

logger = logging.getLogger(__name__)


def tfos_error() -> str | None:
    """The error TFoS's launcher thread recorded for the node job, if any."""
    from tensorflowonspark import TFCluster

    return TFCluster.tf_status.get("error")


def log_node_processes(node_dir: str | None, run_id: str, nodes: list[dict[str, Any]], logged: set[str]) -> None:
    """Log a "tfbs node process" line for each node whose process file has appeared.

    Nodes write the file once their TF process is forked (after the
    reservation the placement lines come from), so the driver picks them up
    while it waits.

    Parameters
    ----------
    node_dir : str or None
        The directory of the node files; ``None`` logs nothing.
    run_id : str
        This run's id.
    nodes : list of dict
        The placement records.
    logged : set of str
        The nodes (``"worker:1"``) already logged; updated in place.
    """
    if not node_dir or len(logged) == len(nodes):
        return
    for record in read_node_files(node_dir, run_id, nodes):
        name = f"{record['job_name']}:{record['task_index']}"
        if name not in logged:
            logged.add(name)
            logger.info(
                "tfbs node process: job=%s task=%s spark_executor=%s host=%s pid=%s",
                record["job_name"],
                record["task_index"],
                record.get("spark_executor"),
                record.get("host"),
                record.get("pid"),
            )


def fail_cluster(sc: SparkContext, cluster: Any, failure: str | ClusterFailed) -> ClusterFailed:
    """Cancel the node job, stop the reservation server and build the error to raise.

    After a node failure Spark has already aborted the node job and killed
    its tasks; cancelling again costs nothing and also covers jobs TFoS
    started around it. TFoS submits the node job from its own thread and
    exposes no job id, so every running job of the application is
    cancelled. Killed tasks take their TF processes with them (see
    :func:`tf_models.tfos.task.set_parent_death_signal`), so no node is
    left waiting on TFoS's shutdown timeout.
    """
    sc.cancelAllJobs()
    cluster.server.stop()
    logger.error("tfbs cluster: %s", failure)
    return failure if isinstance(failure, ClusterFailed) else ClusterFailed(failure)


@dataclass
class RunningNodes:
    """The running node job, as the driver follows it.

    Attributes
    ----------
    sc : SparkContext
        The application.
    cluster : TFCluster
        TFoS's cluster of the reserved nodes.
    stage_id : int or None
        The node stage (:func:`~tf_models.tfos.spark_status.node_stage_id`).
    nodes : list of dict
        The placement records.
    run_id : str
        This run's id.
    started_on : set of str
        The executors' hosts before the nodes started.
    node_dir : str or None
        The node files' directory.
    elastic_workers : bool
        A lost worker leaves the run going (:mod:`tf_models.tfos.lost_nodes`).
    lost_workers : set of str
        The workers lost so far (``"worker:1"``), the run gone on without them.
    """

    sc: SparkContext
    cluster: Any
    stage_id: int | None
    nodes: list[dict[str, Any]]
    run_id: str
    started_on: set[str]
    node_dir: str | None
    elastic_workers: bool
    lost_workers: set[str] = field(default_factory=set)

    def fail(self, failure: str | ClusterFailed) -> ClusterFailed:
        """Cancel the node job and build the error to raise (:func:`fail_cluster`)."""
        return fail_cluster(self.sc, self.cluster, failure)

    def lost_hosts(self) -> set[str]:
        """The hosts that ran executors before the nodes started and run none now."""
        return self.started_on - live_hosts(self.sc)

    def lose(self, node: dict[str, Any], loss: str | ClusterFailed | Callable[[], ClusterFailed]) -> None:
        """Go on without ``node`` if the policy lets the run (logged once), else stop it.

        ``loss`` says how the node was lost; a callable is asked only when the loss is news to the run.

        Raises
        ------
        ClusterFailed
            If ``node`` is a ps or chief, the run is not elastic, or no worker is left.
        """
        name = f"{node['job_name']}:{node['task_index']}"
        if name in self.lost_workers:
            return
        what = loss() if callable(loss) else loss
        if not goes_on_without(node["job_name"], self.elastic_workers):
            raise self.fail(what)
        self.lost_workers.add(name)
        left = sum(n["job_name"] == WORKER for n in self.nodes) - len(self.lost_workers)
        if left == 0:
            raise self.fail(f"{what}; no worker is left to train on")
        logger.warning("tfbs cluster: %s", goes_on_note(str(what), left))

    def others_succeeded(self, roles: set[str]) -> bool:
        """Whether every node of ``roles`` but the lost workers has a successful task."""
        wanted = {
            n["tfos_index"]
            for n in self.nodes
            if n["job_name"] in roles and f"{n['job_name']}:{n['task_index']}" not in self.lost_workers
        }
        return self.stage_id is not None and wanted <= succeeded_partitions(self.sc, self.stage_id)


#: How often the driver of an elastic run reads the node files and Spark's removed executors.
_LOOK_EVERY_S = 2.0


def _look_for_lost_nodes(job: RunningNodes) -> None:
    """Act on each node whose process died or failed (its node file says so) or whose executor Spark removed.

    An elastic run needs this look: Spark retries a node's task there
    (``spark.task.maxFailures`` 2: a lost executor's task may count as
    failed), so a node's end no longer aborts the node job at once, and a
    worker whose process died ends its task as done.

    Raises
    ------
    ClusterFailed
        If the node is one the run cannot go on without, or failed (an error every worker would meet).
    """
    for record in read_node_files(job.node_dir, job.run_id, job.nodes):
        if record.get("state") not in ("died", "failed"):
            continue
        node = next(
            n for n in job.nodes if (n["job_name"], n["task_index"]) == (record["job_name"], record["task_index"])
        )
        label = node_label(
            record["job_name"],
            record["task_index"],
            record.get("spark_executor"),
            record.get("host"),
            record.get("pid"),
        )
        ended = f"{label} {record['state']}: {record.get('reason')}"
        if record["state"] == "failed":
            raise job.fail(ended)
        job.lose(node, ended)
    removed = removed_executors(job.sc)
    for node in job.nodes:
        if node.get("spark_executor") in removed:
            job.lose(node, lost_node_failure(node, removed[node["spark_executor"]][1]))


def _host_loss(sc: SparkContext, node: dict[str, Any]) -> ClusterFailed:
    """How ``node`` was lost with its host: Spark's reason for removing its executor, if one comes soon."""
    return lost_node_failure(node, loss_reason(node, lambda: removed_executors(sc)))


def await_nodes(job: RunningNodes, num_done: int, deadline: float) -> None:
    """Block until ``num_done`` node tasks (all but the ps) have succeeded, or every node but the lost workers.

    ps tasks run until :func:`stop_cluster` stops them, so "done" means
    that the node stage has ``num_done`` successful tasks. Counting running
    tasks was wrong: while Spark retried a failed node, the stage briefly ran
    fewer tasks, TFoS's shutdown started, met the failure and stopped the
    SparkContext.

    A node that fails or dies fails its Spark task at once (the watching
    parent of :func:`tf_models.tfos.task.run_isolated`), Spark aborts the
    node job, and TFoS's launcher thread records the error; this loop polls
    for it twice a second. A host lost whole is told by its executors'
    block managers, which Spark drops as their connections close: a node
    on a host with none left of ``started_on`` (the executors' hosts before
    the nodes started) is lost, named with Spark's reason when one comes.
    Whether the run stops or goes on without it is the role's policy
    (:mod:`tf_models.tfos.lost_nodes`); an elastic run also looks for
    nodes lost alone, their process or executor (:func:`_look_for_lost_nodes`).

    Raises
    ------
    ClusterFailed
        If the node job failed (the message names the node, its Spark
        executor and the cause), a node the run cannot go on without was
        lost, or ``deadline`` (on the ``time.monotonic()`` clock) passed.
        Running jobs are cancelled and the reservation server is stopped.
    """
    sc = job.sc
    tracker = sc.statusTracker()
    if job.stage_id is None:
        # The shutdown job's tasks then wait for the executors the nodes hold.
        logger.warning("tfbs cluster: node stage not found; the shutdown waits for the nodes' executors")
        return
    logged: set[str] = set()
    next_look = 0.0
    while True:
        log_node_processes(job.node_dir, job.run_id, job.nodes, logged)
        error = tfos_error()
        if error is not None:
            raise job.fail(failure_message(error, job.nodes, job.node_dir, job.run_id, job.lost_hosts))
        # Act as soon as a node's host is gone. Its task fails only when the
        # cluster manager gives the loss reason (YARN: the NodeManager's expiry),
        # and a ps strategy's chief trains on with the workers left meanwhile:
        # one run finished its 2,000 steps 36 s after losing worker:1's host.
        for node in nodes_on_lost_hosts(job.nodes, job.lost_hosts):
            job.lose(node, functools.partial(_host_loss, sc, node))
        if job.elastic_workers and time.monotonic() >= next_look:
            _look_for_lost_nodes(job)
            next_look = time.monotonic() + _LOOK_EVERY_S
        if time.monotonic() > deadline:
            raise job.fail("TF cluster did not finish within shutdown_timeout")
        stage = tracker.getStageInfo(job.stage_id)
        if stage is None or stage.numCompletedTasks >= num_done:
            return
        if job.lost_workers and job.others_succeeded({CHIEF, WORKER}):
            return
        if job.stage_id not in tracker.getActiveStageIds():
            # The stage ended. Spark writes a running stage's task counts at
            # most every spark.ui.liveUpdate.period and the final ones when it
            # ends, so the counts read above may predate its last task (an
            # all-reduce run was once stopped so, its three tasks done): read
            # them again. Short of done, it failed, and TFoS's launcher thread
            # records the error a moment later.
            time.sleep(2)
            error = tfos_error()
            stage = tracker.getStageInfo(job.stage_id)
            if error is None and (stage is None or stage.numCompletedTasks >= num_done):
                return
            failure = failure_message(error or "node stage failed", job.nodes, job.node_dir, job.run_id, job.lost_hosts)
            raise job.fail(failure)
        time.sleep(0.5)


def stop_cluster(job: RunningNodes, deadline: float, poll_seconds: float = 0.2) -> None:
    """Wait for the ps tasks to end, then stop the reservation server.

    :func:`await_nodes` has seen every other node's task succeed, so the
    chief is done and each ps, released by its marker, is stopping itself
    (:class:`~tf_models.tfos.task.NodeEntry`). TFoS's own shutdown instead
    connects to each ps's manager over the network, so that manager had to
    listen there; and it waits 5 s between its looks, about 20 s of every
    training run. A lost worker's task may wait for Spark to call its
    executor lost (YARN: the NodeManager's expiry, 10 minutes by default):
    once every other node's task has succeeded it is cancelled.

    Raises
    ------
    ClusterFailed
        If a ps failed on its way out, or had not stopped by ``deadline``.
    """
    tracker = job.sc.statusTracker()
    cancelled = False
    while tracker.getActiveJobsIds():
        if time.monotonic() > deadline:
            raise job.fail("the ps nodes did not stop within shutdown_timeout")
        if job.lost_workers and not cancelled and job.others_succeeded({PS, CHIEF, WORKER}):
            logger.info("tfbs cluster: training is over; the lost workers' tasks are cancelled")
            job.sc.cancelAllJobs()
            cancelled = True
        time.sleep(poll_seconds)
    error = tfos_error()
    if error is not None and not cancelled:
        raise job.fail(f"a TF node failed during shutdown: {describe_failure(error, [])}")
    job.cluster.server.stop()
