"""Distributed TensorFlow on Spark executors, with TensorFlowOnSpark kept inside.

Only this package imports ``tensorflowonspark`` (TFoS 2.2.5, unmaintained
since 2022), and only inside functions, so TFoS can be replaced later without
touching the rest of the code. You write one function ``node_main(args,
info)`` that branches on ``info.job_name`` (``"chief"``, ``"ps"`` or
``"worker"``) and never sees the TFoS context. :func:`run_cluster` runs it
on the executors::

    TFoS node index 0 .. num_ps-1  -> ps:0 ..      start_server(); wait_for_chief()
    next                           -> chief:0      PSS coordinator / MWMS chief
    the rest                       -> worker:0 ..  start_server(); wait_for_chief()  (PSS)
                                                   or the same loop as the chief     (MWMS)

Modules:

:mod:`~tf_models.tfos.node`
    What ``node_main`` uses on a node: :class:`NodeInfo`, :class:`CpuPlan`
    (:func:`pin_to_cpus`, :func:`function_threads`), :func:`start_server`, :func:`wait_for_chief`, :func:`mark_chief_done`.
:mod:`~tf_models.tfos.task`
    The Spark task of a node: TFoS's entry function and the forked, watched
    process that runs the node's TensorFlow.
:mod:`~tf_models.tfos.node_files`
    The per-node JSON file recording the node's pid and how it ended.
:mod:`~tf_models.tfos.driver`
    :func:`run_cluster`, in the driver.
:mod:`~tf_models.tfos.spark_status`
    Executors, node stage and task placement, from Spark's status tracker.
:mod:`~tf_models.tfos.failures`
    :class:`ClusterFailed` and the one-line explanation of a failed node.
:mod:`~tf_models.tfos.lost_nodes`
    A lost node named with Spark's reason, and what the run does about it, per role.
:mod:`~tf_models.tfos.reservation`
    TFoS's reservation exchange, sealed with a per-run secret and bound to
    one interface.
:mod:`~tf_models.tfos.sealed`
    Connections sealed with a run's secret: the handshake, ChaCha20-Poly1305 frames.
:mod:`~tf_models.tfos.private_network`
    A node's TensorFlow in a network namespace of its own; the virtual cluster.
:mod:`~tf_models.tfos.tunnel`
    The watcher's tunnel agent: a node's TF connections, sealed, between private networks.
:mod:`~tf_models.tfos.tfos_patches`
    Every run-time change to TFoS: the sealed reservations, nodes' addresses
    from their route to the driver, ps managers on Unix sockets, authkeys
    that print as ``<redacted>``.

Each node task runs on its own Spark executor. TFoS uses ``InputMode.TENSORFLOW``
with ``master_node='chief'`` (TFoS exports ``TF_CONFIG`` only then).

What we saw with pyspark 4.3.0, tensorflow-cpu 2.21.0, Keras 3,
tensorflowonspark 2.2.5, Python 3.11 and Java 17 on ``local-cluster[4,1,1024]``,
and how it shaped this package:

* The TF cluster needs exactly one node task per executor. TFoS keys its
  state by executor. Two node tasks on one executor fail with "TFManager
  already started". An idle extra executor can pick up TFoS's shutdown task
  and fail with "No executor_id file found". So the application needs exactly
  ``num_ps + num_workers + 1`` executors, one task slot each, and no dynamic
  allocation. :func:`run_cluster` checks this.
* TFoS runs ps nodes in a forked daemon process. It runs chief and worker
  nodes inside the PySpark worker process, and PySpark reuses that process
  for later tasks. So TF state stayed behind: gRPC servers, coordinator
  threads and ~700 MB RSS per node. A second training in the same
  application then failed ("Collective ops must be configured at program
  startup"). Chief and worker nodes therefore run in a forked child process
  that exits when the node ends (:func:`tf_models.tfos.task.run_isolated`).
* A dead node stalled the run instead of failing it (SIGKILL of the TF
  process, measured). The PSS coordinator treats a lost worker as preempted
  and waits for it to come back; TFoS's ps task only polls TFoS's queues
  and never notices its ps process is gone. So every node's TF code, the ps
  included, runs in a forked child whose parent watches it: a death fails
  the node's Spark task at once, naming the node. With
  ``spark.task.maxFailures=1`` Spark aborts the node job and kills the other
  node tasks, whose TF processes die with them (parent-death signal), and
  :func:`run_cluster` raises :class:`ClusterFailed` ("TF node worker:1
  (Spark executor 3, host h, pid 42) died: its process was killed by
  SIGKILL"). Measured on 2 loaded cores: 7 s from killing a worker and
  13 s from killing the ps to the exit of ``tfbs train``. With elastic
  workers (``run_cluster(elastic_workers=True)``) a worker's death instead
  ends its task as done and the run goes on without it
  (:mod:`~tf_models.tfos.lost_nodes`).
* TFoS's shutdown waits until every non-ps task has returned. PSS workers
  therefore poll for a marker that the chief writes
  (:func:`mark_chief_done` / :func:`wait_for_chief`). ps nodes should wait
  the same way instead of calling ``server.join()``. A joined ps lived on as a
  ~400 MB process until the Spark application ended.
* ``TFCluster.shutdown(timeout=t)`` enforces ``t`` with ``SIGALRM`` and never
  disarms it. The alarm fired 50 s after ``shutdown()`` had returned: it
  stopped the SparkContext and raised ``SystemExit`` in unrelated driver
  code. TFoS also handles a failed node with ``sc.stop(); sys.exit(1)``.
  :func:`run_cluster` waits and enforces the timeout itself, then calls
  ``shutdown(timeout=-1)``. It raises :class:`ClusterFailed` and leaves the
  SparkContext usable.
* Spark retries failed tasks, and resubmits a lost executor's task without
  counting a failure; TFoS would re-run the node. A re-run node cannot
  rejoin the TF cluster, so retries fail at once, or return at once for an
  elastic worker (:class:`tf_models.tfos.tfos_patches.NodeTaskGuard`). A
  failed node then ends the run after Spark's ``spark.task.maxFailures``
  quick attempts. Each attempt still starts a Python worker that imports
  TF, about 30 s on 2 cores. Set ``spark.task.maxFailures=1`` for faster
  failure.
* ``import tensorflowonspark`` calls ``logging.basicConfig(level=INFO)`` and
  imports TensorFlow (``tensorflowonspark.compat``), so it is imported lazily.
  Importing this package loads neither TFoS, TensorFlow nor pyspark.
* TFoS's reservation server listened on every interface of the driver,
  unpickled whatever it received and gave any caller every node's manager
  authkey; ps managers listened on every interface; TFoS logged the
  authkeys at INFO into the executor logs; nodes registered a guessed
  address (127.0.1.1 on a Debian host without a default route).
  :mod:`~tf_models.tfos.tfos_patches` changes that, and is the only place
  TFoS is patched: reservations are sealed with a per-run secret (nothing
  unpickled before it opens) on ``spark.driver.host`` only, managers listen
  on Unix sockets, nodes register the address of their route to the
  driver, and authkeys print as ``<redacted>``. TensorFlow's own gRPC
  servers listen on every interface (TF hard-codes that bind) of a network
  namespace of their own (:mod:`~tf_models.tfos.private_network`), reached
  only through the nodes' sealed tunnels (:mod:`~tf_models.tfos.tunnel`).
* Where node output goes: Python workers write to their executor's stderr.
  On standalone / ``local-cluster`` that is
  ``$SPARK_HOME/work/<app-id>/<executor-id>/stderr``. With pip pyspark,
  ``SPARK_HOME`` is the installed ``pyspark`` package, so that directory is
  inside the virtualenv unless ``SPARK_HOME`` points elsewhere. On YARN it is
  the container's stderr. The driver log gets one "tfbs placement" line per
  node from :func:`run_cluster`.
"""

from tf_models.tfos.driver import run_cluster
from tf_models.tfos.failures import ClusterFailed
from tf_models.tfos.node import (
    CHIEF,
    NODE_DIR_ARG,
    PRIVATE_FOLDERS_ARG,
    PS,
    WORKER,
    NodeInfo,
    NodeMain,
    mark_chief_done,
    start_server,
    wait_for_chief,
)
from tf_models.tfos.pinning import CpuPlan, function_threads, pin_to_cpus, size_thread_pools

__all__ = [
    "CHIEF",
    "NODE_DIR_ARG",
    "PRIVATE_FOLDERS_ARG",
    "PS",
    "WORKER",
    "ClusterFailed",
    "CpuPlan",
    "NodeInfo",
    "NodeMain",
    "function_threads",
    "mark_chief_done",
    "pin_to_cpus",
    "run_cluster",
    "size_thread_pools",
    "start_server",
    "wait_for_chief",
]
