"""Where a TF node's threads run (``train.placement.node_cpus``), as one plan of two steps.

TensorFlow sizes its thread pools once, when its runtime starts, and
creates their threads then; pinning moves the threads a process has. So
the order is fixed, and :class:`CpuPlan` holds it:

1. :meth:`CpuPlan.before_tensorflow_starts`, before any TF server, strategy
   or device initialises the runtime (TensorFlow may be imported): the
   node's pools sized for the CPUs it will be pinned to, and on the chief of
   a ps cluster the threads each ps and worker runs the chief's functions
   on (the strategy sends them when it connects);
2. :meth:`CpuPlan.after_server_is_up`, once the node's server or strategy
   is up: every thread pinned. A worker started on one CPU hung, so it is
   started on all and pinned after.

An unpinned node's plan does nothing. The functions below are its parts.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass

from tf_models.tfos.node import CHIEF, WORKER, NodeInfo

log = logging.getLogger("tfbs.tfos")


@dataclass(frozen=True)
class CpuPlan:
    """The CPUs of one TF node and the steps that put its threads there.

    Attributes
    ----------
    info : NodeInfo
        The node.
    node_cpus : mapping of str to str
        ``train.placement.node_cpus``: a job, or ``job:index``, to a Linux CPU list.
    sends_functions : bool
        Whether this node is the chief of a ps cluster, whose context
        configuration the ps and workers run its functions under.
    """

    info: NodeInfo
    node_cpus: Mapping[str, str]
    sends_functions: bool = False

    @classmethod
    def of(cls, info: NodeInfo, node_cpus: Mapping[str, str], strategy: str) -> CpuPlan:
        """The plan of node ``info`` under ``strategy`` (``train.placement.strategy``)."""
        return cls(info, node_cpus, sends_functions=info.job_name == CHIEF and strategy == "parameter_server")

    def before_tensorflow_starts(self) -> None:
        """Size the thread pools: call it before any TF server, strategy or device starts TensorFlow's runtime."""
        size_thread_pools(self.info, self.node_cpus)
        threads = function_threads(self.node_cpus) if self.sends_functions else None
        if threads:
            import tensorflow as tf

            # Before the strategy connects, which sends this context's configuration
            # to the ps and workers (the chief's own ops run on as many threads).
            tf.config.threading.set_inter_op_parallelism_threads(threads)
            log.info("the ps and workers run each step's ops on %d thread(s) (train.placement.node_cpus)", threads)

    def after_server_is_up(self) -> set[int] | None:
        """Pin every thread of the process to the node's CPUs: call it once its server or strategy is up.

        Returns
        -------
        set of int or None
            The CPUs, or None when the node is not pinned.
        """
        return pin_to_cpus(self.info, self.node_cpus)


def node_cpu_set(info: NodeInfo, node_cpus: Mapping[str, str]) -> set[int] | None:
    """The CPUs ``train.placement.node_cpus`` names for this node (``job:index`` wins over ``job``), or None.

    Raises
    ------
    RuntimeError
        If the list names no CPU this process may use.
    """
    from tfbs.config import cpu_set

    cpus = node_cpus.get(f"{info.job_name}:{info.task_index}", node_cpus.get(info.job_name))
    if cpus is None:
        return None
    chosen = cpu_set(cpus) & os.sched_getaffinity(0)
    if not chosen:
        raise RuntimeError(
            f"{info.job_name}:{info.task_index}: train.placement.node_cpus {cpus!r} names no CPU of this host"
        )
    return chosen


def size_thread_pools(info: NodeInfo, node_cpus: Mapping[str, str]) -> None:
    """Size TensorFlow's thread pools for the CPUs this node will be pinned to.

    Call it before TensorFlow's runtime starts (TensorFlow may be imported):
    its pools are sized once, from ``TF_NUM_INTRAOP_THREADS`` and
    ``TF_NUM_INTEROP_THREADS`` or else from the CPUs the process may use.
    A worker started on two CPUs and pinned to one kept two compute threads
    there, which took turns on its core; one per CPU it is pinned to. The
    process's own op pool, which also serves the requests of the chief and
    the ps, stays at two at least: a worker with one hung (its one thread
    held by the request running a step, while the step's exchange with the
    ps waited for a thread). The steps' ops run in a pool the chief sizes
    (:func:`function_threads`).
    """
    chosen = node_cpu_set(info, node_cpus)
    if chosen is not None:
        os.environ["TF_NUM_INTRAOP_THREADS"] = str(len(chosen))
        os.environ["TF_NUM_INTEROP_THREADS"] = str(max(2, len(chosen)))


def function_threads(node_cpus: Mapping[str, str]) -> int | None:
    """Threads each ps and worker runs the chief's functions on: the most CPUs a pinned worker has, or None.

    Under ``ParameterServerStrategy`` the chief's context configuration
    becomes every ps's and worker's configuration for the functions the chief
    sends them, and its inter-op threads the pool that runs their ops. Left
    to each node, a worker pinned to one core ran the ops of a step on two
    threads that took turns there: 7 % fewer examples per second than one
    thread (a plain training process on one core: 947 against 1,024).
    None when no worker is pinned: TensorFlow's defaults.

    Examples
    --------
    >>> function_threads({"worker:0": "0", "worker:1": "1", "chief": "0-1"})
    1
    >>> function_threads({"worker": "0-3"}), function_threads({"ps": "0"})
    (4, None)
    """
    from tfbs.config import cpu_set

    counts = [len(cpu_set(cpus)) for node, cpus in node_cpus.items() if node.partition(":")[0] == WORKER]
    return max(counts, default=None)


def pin_to_cpus(info: NodeInfo, node_cpus: Mapping[str, str]) -> set[int] | None:
    """Restrict every thread of this node's process to the CPUs ``train.placement.node_cpus`` names for it.

    ``job:index`` wins over ``job``. Call it once TensorFlow's server or
    strategy is up, after :func:`size_thread_pools`: TensorFlow creates its
    pools' threads when its runtime starts, and a worker started on one CPU
    hung (closures scheduled, none run). Started on all, then pinned, every
    thread runs on the node's CPUs; threads made later (tf.data's) inherit
    the pinning.

    Returns
    -------
    set of int or None
        The CPUs, or None when the node is not pinned.
    """
    chosen = node_cpu_set(info, node_cpus)
    if chosen is None:
        return None
    # sched_setaffinity moves one thread: every thread the process has, one by one.
    for thread in os.listdir("/proc/self/task"):
        with contextlib.suppress(ProcessLookupError):  # a thread that ended meanwhile
            os.sched_setaffinity(int(thread), chosen)
    log.info("%s:%d pinned to CPUs %s", info.job_name, info.task_index, ",".join(map(str, sorted(chosen))))
    return chosen
