"""The driver side: start the TF cluster through TFoS, follow its nodes, shut it down.

:func:`run_cluster` checks the executor layout, reserves the cluster, logs
one "tfbs placement" line per node, logs each node's TF process as it
appears, and turns a failed or dead node or a timeout into
:class:`~tf_models.tfos.failures.ClusterFailed` while leaving the
SparkContext usable.
"""

from __future__ import annotations

import argparse
import functools
import logging
import secrets
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tf_models.tfos.failures import (
    ClusterFailed,
    ClusterSetupError,
    ClusterSizeError,
    describe_failure,
    failure_message,
    node_label,
    nodes_on_lost_hosts,
    reservation_failure,
)
from tf_models.tfos.lost_nodes import goes_on_note, goes_on_without, loss_reason, lost_node_failure
from tf_models.tfos.node import CHIEF, ELASTIC_WORKERS_ARG, NODE_DIR_ARG, PS, TF_NETWORK_SECRET_ARG, WORKER, NodeMain
from tf_models.tfos.node_files import read_node_files
from tf_models.tfos.sealed import SECRET_BYTES, HiddenBytes
from tf_models.tfos.spark_status import (
    await_executors,
    live_hosts,
    node_stage_id,
    removed_executors,
    spark_placement,
    succeeded_partitions,
)
from tf_models.tfos.task import NodeEntry

if TYPE_CHECKING:  # typing only: pyspark loads lazily
    from pyspark import SparkContext

logger = logging.getLogger(__name__)


def _tfos_error() -> str | None:
    """The error TFoS's launcher thread recorded for the node job, if any."""
    from tensorflowonspark import TFCluster

    return TFCluster.tf_status.get("error")


def _log_node_processes(node_dir: str | None, run_id: str, nodes: list[dict[str, Any]], logged: set[str]) -> None:
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


def _check_executors(sc: SparkContext, num_ps: int, num_workers: int, timeout: float) -> None:
    """Wait for one single-task executor per TF node; a layout that cannot run is the user's to fix.

    Raises
    ------
    ClusterSizeError
        Fewer executors than nodes by ``timeout`` (the cluster has no room,
        or the master does not size the application: see
        :func:`tf_models.training_launch.training_needs`), more than nodes,
        or executors that run several tasks at once.
    """
    num_nodes = num_ps + num_workers + 1
    nodes = f"1 chief + {num_ps} ps + {num_workers} workers"
    found = await_executors(sc, num_nodes, timeout=timeout)
    if found < num_nodes:
        raise ClusterSizeError(
            f"training needs {num_nodes} Spark executors, one per TF node ({nodes}); {sc.master} gave "
            f"{found} within {timeout:.0f} s (train.placement.executors_timeout_s): give the cluster room for "
            f"{num_nodes - found} more, or train with fewer workers (train.placement.num_workers)"
        )
    if found > num_nodes:
        raise ClusterSizeError(
            f"training needs exactly {num_nodes} Spark executors, one per TF node ({nodes}); found {found}: "
            "leave spark.executor.instances and spark.cores.max to the training job"
        )
    cores = sc.getConf().get("spark.executor.cores")
    task_cpus = int(sc.getConf().get("spark.task.cpus", "1"))
    if cores is not None and int(cores) > task_cpus:
        raise ClusterSizeError(
            f"one TF node per executor needs spark.task.cpus == spark.executor.cores (got {task_cpus} and {cores})"
        )


def reservation_host(sc: SparkContext) -> str:
    """The address TFoS's reservation server listens on: the driver's ``spark.driver.host``.

    That is the address the executors already reach the driver at
    (``127.0.0.1`` in the one-machine profile of :mod:`tfbs.launch`; on
    YARN the driver host's cluster address). Spark always sets it once the
    context runs; set ``spark.driver.host`` to choose another interface.
    """
    host = sc.getConf().get("spark.driver.host")
    if not host:
        raise ClusterSetupError("spark.driver.host is not set: no interface for the TF cluster's reservations")
    return host


def _fail(sc: SparkContext, cluster: Any, failure: str | ClusterFailed) -> ClusterFailed:
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
class _NodeJob:
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
        """Cancel the node job and build the error to raise (:func:`_fail`)."""
        return _fail(self.sc, self.cluster, failure)

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


def _look_for_lost_nodes(job: _NodeJob) -> None:
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


def _await_nodes(job: _NodeJob, num_done: int, deadline: float) -> None:
    """Block until ``num_done`` node tasks (all but the ps) have succeeded, or every node but the lost workers.

    ps tasks run until :func:`_stop_cluster` stops them, so "done" means
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
        _log_node_processes(job.node_dir, job.run_id, job.nodes, logged)
        error = _tfos_error()
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
            error = _tfos_error()
            stage = tracker.getStageInfo(job.stage_id)
            if error is None and (stage is None or stage.numCompletedTasks >= num_done):
                return
            failure = failure_message(error or "node stage failed", job.nodes, job.node_dir, job.run_id, job.lost_hosts)
            raise job.fail(failure)
        time.sleep(0.5)


def run_cluster(
    sc: SparkContext,
    node_main: NodeMain,
    node_args: dict,
    num_ps: int,
    num_workers: int,
    log_dir: str | None = None,
    reservation_timeout: int = 120,
    shutdown_timeout: int = 300,
    node_dir: str | None = None,
    executors_timeout: float = 120,
    private_network: bool = True,
    elastic_workers: bool = False,
) -> list[dict[str, Any]]:
    """Run ``node_main`` on a TF cluster of one chief, ``num_ps`` ps and ``num_workers`` workers.

    Blocks until every node has finished. The ps nodes are stopped after the
    chief and workers have returned.

    Parameters
    ----------
    sc : SparkContext
        Needs exactly ``num_ps + num_workers + 1`` executors, each running one
        task at a time, with dynamic allocation off.
    node_main : callable
        ``node_main(args, info)``, run on every node and branching on
        ``info.job_name``. cloudpickle must be able to pickle it. Import
        TensorFlow inside it or in an importable module. Every node runs
        it in a forked child that its Spark task watches. Every node must
        return when training is over; PSS ps and workers use
        :func:`~tf_models.tfos.node.wait_for_chief` for that.
    node_args : dict
        Picklable arguments for ``node_main``. A ``"run_id"`` entry is added if
        missing, for :func:`~tf_models.tfos.node.mark_chief_done` and
        :func:`~tf_models.tfos.node.wait_for_chief`.
    num_ps : int
        Number of parameter servers; 0 for MultiWorkerMirroredStrategy.
    num_workers : int
        Number of workers, not counting the chief.
    log_dir : str or None
        Passed to TFoS as its TensorBoard log dir (TensorBoard is not started).
    reservation_timeout : int
        Seconds to wait for all nodes to register.
    shutdown_timeout : int
        Seconds allowed from reservation to the end of training, the same span
        TFoS's ``shutdown(timeout=...)`` covers. Size it to fit the training.
        When it runs out, running jobs are cancelled and
        :class:`ClusterFailed` is raised. Works from any driver thread
        (no ``SIGALRM``).
    node_dir : str or None
        A directory every node and the driver can reach (any
        :mod:`tfbs.storage` URI). Each node writes
        ``<job>-<index>.json`` there with the pid of the OS process that runs
        its TensorFlow, and the driver logs it as a "tfbs node process"
        line. ``None`` writes nothing.
    elastic_workers : bool
        A worker lost with its process, executor or host is logged and the
        run goes on with the workers left (parameter servers only: TF's
        coordinator runs the lost worker's steps on the others); the run
        still stops when no worker is left, or a ps or the chief is lost.

    Returns
    -------
    list of dict
        One record per node, in TFoS node order: ``{"job_name",
        "task_index", "tfos_index", "spark_executor", "host", "hostname",
        "port"}`` (``host`` is the address the node registered, which the
        TF cluster spec names).
        These are also logged as "tfbs placement" lines.

    Raises
    ------
    ClusterSizeError
        If the application has fewer (or more) executors than TF nodes, or
        executors that run several tasks at once.
    ClusterSetupError
        If ``spark.driver.host`` is not set (no address for the reservations),
        or the nodes did not all register within ``reservation_timeout``
        (:class:`~tf_models.tfos.failures.ReservationTimeoutError`).
    ClusterFailed
        If a node failed or died, or the run timed out. A dead node is reported within seconds, by name
        (``TF node worker:1 (Spark executor 3, ...) died: its process was
        killed by SIGKILL``), and the node job is cancelled. The
        SparkContext remains usable, except when a node fails before all
        nodes have registered: TFoS then stops the SparkContext itself.
    """
    # Imported first, as always (_reserve_nodes uses it): importing it configures root logging and loads TF.
    from tensorflowonspark import TFCluster  # noqa: F401

    num_nodes = num_ps + num_workers + 1
    _check_executors(sc, num_ps, num_workers, executors_timeout)
    # A host lost whole takes its executors and their watchers with it: it is
    # told by the hosts that ran executors now and run none later.
    started_on = live_hosts(sc)
    args = _node_args(node_args, private_network, node_dir, elastic_workers)
    t0 = time.monotonic()
    cluster = _reserve_nodes(sc, node_main, args, num_nodes, num_ps, log_dir, reservation_timeout)
    logger.info("tfbs cluster: %d nodes reserved in %.1f s", num_nodes, time.monotonic() - t0)
    stage_id = node_stage_id(sc, num_nodes)
    nodes = _placement_records(sc, cluster, stage_id, num_nodes)
    deadline = t0 + shutdown_timeout
    job = _NodeJob(sc, cluster, stage_id, nodes, args["run_id"], started_on, node_dir, elastic_workers)
    _await_nodes(job, num_nodes - num_ps, deadline)
    _stop_cluster(job, deadline=deadline)
    logger.info("tfbs cluster: finished in %.1f s", time.monotonic() - t0)
    return nodes


def _node_args(node_args: dict, private_network: bool, node_dir: str | None, elastic_workers: bool) -> dict[str, Any]:
    """``node_args`` and what :func:`run_cluster` adds for every node: a run id, the TF network's secret, the node
    dir, whether workers are elastic.

    Returns
    -------
    dict
        A copy of ``node_args``; ``"run_id"`` is always set.
    """
    args = dict(node_args)
    args.setdefault("run_id", uuid.uuid4().hex)
    if private_network:
        # To the nodes inside the task closures, over Spark's own (authenticated, encrypted) channel.
        args[TF_NETWORK_SECRET_ARG] = HiddenBytes(secrets.token_bytes(SECRET_BYTES))
    else:
        logger.warning(
            "tfbs cluster: the TF network is open (train.placement.tf_network: open): each node's gRPC server answers "
            "anyone who reaches its host, on the port of its placement line"
        )
    if node_dir:
        args[NODE_DIR_ARG] = node_dir
    args[ELASTIC_WORKERS_ARG] = elastic_workers
    return args


def _reserve_nodes(
    sc: SparkContext,
    node_main: NodeMain,
    args: dict[str, Any],
    num_nodes: int,
    num_ps: int,
    log_dir: str | None,
    reservation_timeout: int,
) -> Any:
    """Start TFoS's node tasks and wait until every node has registered with the reservation server.

    Returns
    -------
    TFCluster
        TFoS's cluster of the reserved nodes.

    Raises
    ------
    ClusterFailed
        If a node failed during reservation (TFoS has then stopped the
        SparkContext), or the reservation timed out (the node job is cancelled).
    """
    # Imported here: importing it configures root logging and loads TF.
    from tensorflowonspark import TFCluster

    from tf_models.tfos.tfos_patches import driver_reservations

    # A Namespace, not a dict: TFoS checks `'num_gpus' in tf_args` and then
    # reads `tf_args.num_gpus` as an attribute.
    tf_args = argparse.Namespace(**args)

    # TFoS keeps the error in a module-level dict that nothing resets.
    TFCluster.tf_status.clear()
    try:
        with driver_reservations(reservation_host(sc), elastic_workers=bool(args.get(ELASTIC_WORKERS_ARG))):
            cluster = TFCluster.run(
                sc,
                NodeEntry(node_main),
                tf_args,
                num_executors=num_nodes,
                num_ps=num_ps,
                tensorboard=False,
                input_mode=TFCluster.InputMode.TENSORFLOW,
                log_dir=log_dir,
                master_node=CHIEF,
                reservation_timeout=reservation_timeout,
            )
    except SystemExit as exc:  # TFoS: sc.stop(); sys.exit(1)
        raise ClusterFailed(f"a TF node failed during reservation: {_tfos_error()}") from exc
    except Exception as exc:  # reservation timed out; node tasks still running
        sc.cancelAllJobs()
        raise reservation_failure(exc, reservation_timeout) from exc
    return cluster


def _placement_records(sc: SparkContext, cluster: Any, stage_id: int | None, num_nodes: int) -> list[dict[str, Any]]:
    """One record per reserved node, in TFoS node order, each logged as a "tfbs placement" line (see :func:`run_cluster`)."""
    placement = spark_placement(sc, stage_id)
    nodes = []
    for node in sorted(cluster.cluster_info, key=lambda n: n["executor_id"]):
        record = {
            "job_name": node["job_name"],
            "task_index": node["task_index"],
            "tfos_index": node["executor_id"],
            "spark_executor": placement.get(node["executor_id"]),
            "host": node["host"],
            "hostname": node.get("hostname"),
            "port": node["port"],
        }
        nodes.append(record)
        logger.info(
            "tfbs placement: job=%(job_name)s task=%(task_index)s "
            "spark_executor=%(spark_executor)s tfos_index=%(tfos_index)s "
            "host=%(host)s hostname=%(hostname)s port=%(port)s",
            record,
        )

    return nodes


def _stop_cluster(job: _NodeJob, deadline: float, poll_seconds: float = 0.2) -> None:
    """Wait for the ps tasks to end, then stop the reservation server.

    :func:`_await_nodes` has seen every other node's task succeed, so the
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
    error = _tfos_error()
    if error is not None and not cancelled:
        raise job.fail(f"a TF node failed during shutdown: {describe_failure(error, [])}")
    job.cluster.server.stop()
