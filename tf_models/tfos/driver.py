"""The driver side: start the TF cluster through TFoS, follow its nodes, shut it down.

:func:`run_cluster` checks the executor layout, reserves the cluster, logs
one "tfbs placement" line per node, then follows the nodes to their end
(:mod:`tf_models.tfos.node_watch`: each node's TF process as it appears, a
failed, dead or lost node, a timeout, each turned into
:class:`~tf_models.tfos.failures.ClusterFailed` while leaving the
SparkContext usable).
"""

from __future__ import annotations

import argparse
import logging
import secrets
import time
import uuid
from typing import TYPE_CHECKING, Any

from tf_models.tfos.failures import (
    ClusterFailed,
    ClusterSetupError,
    ClusterSizeError,
    reservation_failure,
)
from tf_models.tfos.node import CHIEF, ELASTIC_WORKERS_ARG, NODE_DIR_ARG, TF_NETWORK_SECRET_ARG, NodeMain
from tf_models.tfos.node_watch import RunningNodes, await_nodes, stop_cluster, tfos_error
from tf_models.tfos.sealed import SECRET_BYTES, HiddenBytes
from tf_models.tfos.spark_status import (
    await_executors,
    live_hosts,
    node_stage_id,
    spark_placement,
)
from tf_models.tfos.task import NodeEntry

if TYPE_CHECKING:  # typing only: pyspark loads lazily
    from pyspark import SparkContext

logger = logging.getLogger(__name__)


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
    """Run ``node_main`` on a TF cluster of one chief, ``num_ps`` ps and ``num_workers`` workers, until all end.

    The ps nodes are stopped after the chief and workers have returned.

    Parameters
    ----------
    sc : SparkContext
        With exactly ``num_ps + num_workers + 1`` single-task executors, dynamic allocation off.
    node_main : callable
        ``node_main(args, info)``, run on every node (branching on
        ``info.job_name``) in a forked child its Spark task watches;
        picklable by cloudpickle, importing TensorFlow inside. It returns
        when training is over (PSS ps and workers: :func:`~tf_models.tfos.node.wait_for_chief`).
    node_args : dict
        Picklable arguments for ``node_main``, given a ``"run_id"`` if missing
        (:func:`~tf_models.tfos.node.mark_chief_done`, ``wait_for_chief``).
    num_ps : int
        Number of parameter servers; 0 for MultiWorkerMirroredStrategy.
    num_workers : int
        Number of workers, not counting the chief.
    log_dir : str or None
        Passed to TFoS as its TensorBoard log dir (TensorBoard is not started).
    reservation_timeout : int
        Seconds to wait for all nodes to register.
    shutdown_timeout : int
        Seconds allowed from reservation to the end of training (TFoS's
        ``shutdown(timeout=...)`` span), sized to fit the training; then running
        jobs are cancelled and :class:`ClusterFailed` raised. Works from any driver thread
        (no ``SIGALRM``).
    node_dir : str or None
        A folder every node and the driver reach (any :mod:`tfbs.storage`
        URI), where each node writes ``<job>-<index>.json`` with the pid of
        its TensorFlow process (logged as a "tfbs node process" line); ``None``: none.
    executors_timeout : float
        Seconds to wait for one executor per node.
    private_network : bool
        Each node's TensorFlow in a private network behind sealed tunnels
        (:mod:`tf_models.tfos.private_network`); False: on the host's network.
    elastic_workers : bool
        A worker lost with its process, executor or host is logged and the
        run goes on with the workers left (parameter servers only: TF's
        coordinator runs the lost worker's steps on the others); the run
        still stops when no worker is left, or a ps or the chief is lost.

    Returns
    -------
    list of dict
        One record per node, in TFoS node order, also logged as "tfbs placement"
        lines: ``{"job_name", "task_index", "tfos_index", "spark_executor",
        "host", "hostname", "port"}`` (``host``: the address the node registered).

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
        If a node failed or died (reported within seconds, by name: ``TF node
        worker:1 (Spark executor 3, ...) died: its process was killed by
        SIGKILL``; its job is cancelled), or the run timed out. The SparkContext
        stays usable unless a node fails before all have registered (TFoS stops it).
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
    job = RunningNodes(sc, cluster, stage_id, nodes, args["run_id"], started_on, node_dir, elastic_workers)
    await_nodes(job, num_nodes - num_ps, deadline)
    stop_cluster(job, deadline=deadline)
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
        raise ClusterFailed(f"a TF node failed during reservation: {tfos_error()}") from exc
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
