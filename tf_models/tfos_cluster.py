"""Distributed TensorFlow on Spark executors, with TensorFlowOnSpark kept inside.

Only this module imports ``tensorflowonspark`` (TFoS 2.2.5, unmaintained since
2022), so TFoS can be replaced later without touching the rest of the code. You write
one function ``node_main(args, info)`` that branches on ``info.job_name``
(``"chief"``, ``"ps"`` or ``"worker"``) and never sees the TFoS context.
:func:`run_cluster` runs it on the executors::

    TFoS node index 0 .. num_ps-1  -> ps:0 ..      start_server(); wait_for_chief()
    next                           -> chief:0      PSS coordinator / MWMS chief
    the rest                       -> worker:0 ..  start_server(); wait_for_chief()  (PSS)
                                                   or the same loop as the chief     (MWMS)

Each node task runs on its own Spark executor. TFoS uses ``InputMode.TENSORFLOW``
with ``master_node='chief'`` (TFoS exports ``TF_CONFIG`` only then).

What we saw with pyspark 4.3.0, tensorflow-cpu 2.21.0, Keras 3,
tensorflowonspark 2.2.5, Python 3.11 and Java 17 on ``local-cluster[4,1,1024]``,
and how it shaped this module:

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
  that exits when the node ends (:func:`_run_isolated`).
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
  13 s from killing the ps to the exit of ``tfbs train``.
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
* Spark retries failed tasks, and TFoS would re-run the node. A re-run node
  cannot rejoin the TF cluster, so retries fail at once (see
  :class:`_NodeEntry`). A failed node then ends the run after Spark's
  ``spark.task.maxFailures`` quick attempts. Each attempt still starts a
  Python worker that imports TF, about 30 s on 2 cores. Set
  ``spark.task.maxFailures=1`` for faster failure.
* ``import tensorflowonspark`` calls ``logging.basicConfig(level=INFO)`` and
  imports TensorFlow (``tensorflowonspark.compat``), so it is imported lazily.
* TFoS's reservation server accepts unauthenticated pickle on a driver TCP
  port. Run it only on a trusted cluster network.
* Where node output goes: Python workers write to their executor's stderr.
  On standalone / ``local-cluster`` that is
  ``$SPARK_HOME/work/<app-id>/<executor-id>/stderr``. With pip pyspark,
  ``SPARK_HOME`` is the installed ``pyspark`` package, so that directory is
  inside the virtualenv unless ``SPARK_HOME`` points elsewhere. On YARN it is
  the container's stderr. The driver log gets one "tfbs placement" line per
  node from :func:`run_cluster`.
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing
import os
import re
import signal
import socket
import sys
import time
import traceback
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # typing only: TensorFlow and pyspark load lazily
    import tensorflow as tf
    from pyspark import SparkContext

logger = logging.getLogger(__name__)

#: Job names as they appear in the TF cluster spec and ``TF_CONFIG``.
CHIEF, PS, WORKER = "chief", "ps", "worker"

#: Key of ``node_args`` under which :func:`run_cluster` passes ``node_dir``.
NODE_DIR_ARG = "node_dir"

NodeMain = Callable[[dict, "NodeInfo"], None]


class ClusterFailed(RuntimeError):
    """A TF node failed, or the cluster did not start or finish in time."""


@dataclass(frozen=True)
class NodeInfo:
    """Where one TensorFlow node runs (built from the TFoS context on the executor).

    Attributes
    ----------
    job_name : str
        ``"chief"``, ``"ps"`` or ``"worker"``.
    task_index : int
        Index within ``job_name`` (``worker:1`` has ``task_index == 1``).
    executor_id : int
        TFoS's node index, which is the partition of its node RDD, 0..N-1.
        This is *not* the Spark executor id (see ``spark_executor_id``).
    spark_executor_id : str or None
        Spark executor id if found. Standalone and ``local-cluster`` put it
        in ``SPARK_LOG_URL_STDERR``; on YARN this holds the container id.
    cluster_spec : dict of str to list of str
        ``{"chief": ["host:port"], "ps": [...], "worker": [...]}``, the
        cluster TFoS also wrote into ``TF_CONFIG``.
    hostname : str
        Host name of the executor.
    pid : int
        Process id of the PySpark worker hosting the node (for ps, TFoS's
        forked ps process). The node's TF code runs in a forked child; its
        pid is logged on a separate "tfbs node process" line.
    default_fs : str
        Spark's ``fs.defaultFS`` (``file://``, ``hdfs://namenode:8020`` ...).
    """

    job_name: str
    task_index: int
    executor_id: int
    spark_executor_id: str | None
    cluster_spec: dict[str, list[str]] = field(repr=False)
    hostname: str
    pid: int
    default_fs: str = "file://"

    @property
    def is_chief(self) -> bool:
        """True on the chief (the PSS coordinator, or the MWMS chief)."""
        return self.job_name == CHIEF

    @property
    def num_workers(self) -> int:
        """Number of ``worker`` tasks, not counting the chief."""
        return len(self.cluster_spec.get(WORKER, []))

    @property
    def address(self) -> str:
        """``host:port`` of this node in the cluster spec."""
        return self.cluster_spec[self.job_name][self.task_index]

    def tf_config(self) -> dict[str, Any]:
        """This node's ``TF_CONFIG`` as a dictionary."""
        return {
            "cluster": self.cluster_spec,
            "task": {"type": self.job_name, "index": self.task_index},
        }

    def describe(self) -> str:
        """The placement line every node logs when it starts."""
        return (
            f"tfbs node: job={self.job_name} task={self.task_index} "
            f"executor={self.spark_executor_id} tfos_index={self.executor_id} "
            f"host={self.hostname} pid={self.pid} addr={self.address}"
        )


# --------------------------------------------------------------------------
# Node side (runs on the executors)
# --------------------------------------------------------------------------


def start_server(info: NodeInfo) -> tf.distribute.Server:
    """Start this node's in-process TF gRPC server (ps and PSS workers).

    Do not call this on the chief under ParameterServerStrategy, or on any
    node under MultiWorkerMirroredStrategy. Those strategies start the server
    themselves, on the same cluster-spec port.

    Parameters
    ----------
    info : NodeInfo
        This node.

    Returns
    -------
    tf.distribute.Server
        The started server. Keep the node alive with :func:`wait_for_chief`.
        ``server.join()`` never returns, and a joined ps stays alive until the
        Spark application ends.
    """
    import tensorflow as tf

    return tf.distribute.Server(
        tf.train.ClusterSpec(info.cluster_spec),
        job_name=info.job_name,
        task_index=info.task_index,
        protocol="grpc",
        start=True,
    )


def mark_chief_done(done_marker_uri: str, run_id: str, status: str = "ok") -> None:
    """Write the marker that releases the waiting ps and worker nodes.

    Call this on the chief after the final ``coordinator.join()`` and after the
    model has been saved (saving reads variables from the ps). Put it in a
    ``finally:`` block so a failing chief also releases the workers at once.
    Write it from a function that has already returned from training. While
    the training ``tf.function`` objects were still alive, the released workers
    went away first, and the chief logged "Failed to remove function remotely
    ... Connection refused".

    Parameters
    ----------
    done_marker_uri : str
        Any path or URI ``tf.io.gfile`` can write (local, ``file://``,
        ``hdfs://``...), visible to every node.
    run_id : str
        ``args["run_id"]``, which :func:`run_cluster` provides. It tags the
        marker so that a marker left by an earlier run is ignored.
    status : str
        ``"ok"`` or a short failure description.
    """
    import tensorflow as tf

    with tf.io.gfile.GFile(done_marker_uri, "w") as f:
        f.write(json.dumps({"run_id": run_id, "status": status}))


def wait_for_chief(
    done_marker_uri: str,
    poll_seconds: float = 2.0,
    timeout_seconds: float = 3600.0,
    run_id: str | None = None,
) -> str:
    """Block a ps or worker node until the chief writes its done marker.

    TFoS's shutdown waits for every non-ps node task to return. A worker that
    only serves gRPC never returns, so shutdown would wait for its timeout.
    Polling a marker in the shared model directory needs no extra service.

    Parameters
    ----------
    done_marker_uri : str
        The marker that :func:`mark_chief_done` writes.
    poll_seconds : float
        Seconds between ``tf.io.gfile.exists`` checks.
    timeout_seconds : float
        Give up after this many seconds.
    run_id : str or None
        Accept only a marker with this run id, ignoring markers from earlier
        runs. ``None`` accepts any marker.

    Returns
    -------
    str
        The status the chief wrote: ``"ok"`` on success, otherwise a failure
        description. Raise on a failure status so the run fails at once.

    Raises
    ------
    TimeoutError
        If no matching marker appears within ``timeout_seconds``.
    """
    import tensorflow as tf

    deadline = time.monotonic() + timeout_seconds
    while time.monotonic() < deadline:
        if tf.io.gfile.exists(done_marker_uri):
            try:
                with tf.io.gfile.GFile(done_marker_uri, "r") as f:
                    marker = json.loads(f.read())
            except (ValueError, tf.errors.OpError):
                marker = None  # partly written, or replaced while reading
            if marker is not None and (run_id is None or marker.get("run_id") == run_id):
                return str(marker.get("status", "ok"))
        time.sleep(poll_seconds)
    raise TimeoutError(f"chief did not write {done_marker_uri} within {timeout_seconds} s")


def _spark_executor_id() -> str | None:
    """Best-effort Spark executor id from inside a PySpark worker.

    ``TaskContext`` has no executor id. Standalone workers (used by
    ``local-cluster``) export ``SPARK_LOG_URL_STDERR=...&executorId=N&...``
    to the executor, and PySpark workers inherit it. YARN exports
    ``CONTAINER_ID``.
    """
    url = os.environ.get("SPARK_LOG_URL_STDERR", "")
    for part in url.replace("?", "&").split("&"):
        if part.startswith("executorId="):
            return part.split("=", 1)[1]
    return os.environ.get("CONTAINER_ID")


def _set_parent_death_signal() -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux).

    When Spark kills a node task (job cancelled, timeout, executor lost), it
    kills the PySpark worker but not that worker's children. Without this
    call a node process would live on and keep its TF port. Best effort:
    does nothing where ``prctl`` is missing.
    """
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # 1 == PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - not Linux, or no prctl
        pass


def _child_main(node_main: NodeMain, args: dict, info: NodeInfo, conn: Any, parent_pid: int) -> None:
    """Body of the forked node process: run the node, report, then ``os._exit``."""
    _set_parent_death_signal()
    if os.getppid() != parent_pid:
        # The parent died between fork() and prctl(): the death signal was
        # armed too late to fire, so leave now rather than run unwatched.
        os._exit(1)
    code = 0
    try:
        node_main(args, info)
        conn.send(None)
    except BaseException:  # noqa: BLE001 - every failure goes to the parent
        code = 1
        conn.send(traceback.format_exc())
    finally:
        conn.close()
        sys.stdout.flush()
        sys.stderr.flush()
        # os._exit rather than a normal exit, because (1) the fork shares the
        # PySpark worker's socket to the JVM, and interpreter teardown could
        # flush stray bytes into it; (2) TF's gRPC server and coordinator
        # threads have no clean shutdown and can hang teardown.
        os._exit(code)


def _exit_reason(wait_status: int) -> str:
    """``"was killed by SIGKILL"`` or ``"exited with code 3"``, from an ``os.waitpid`` status."""
    code = os.waitstatus_to_exitcode(wait_status)
    if code >= 0:
        return f"exited with code {code}"
    try:
        return f"was killed by {signal.Signals(-code).name}"
    except ValueError:
        return f"was killed by signal {-code}"


def _node_file(node_dir: str, job_name: str, task_index: int) -> str:
    """Where a node records its process and how it ended (see :func:`_write_node_file`)."""
    return f"{node_dir.rstrip('/')}/{job_name}-{task_index}.json"


def _node_label(job_name: str, task_index: int, spark_executor: str | None, host: str, pid: int) -> str:
    """``TF node worker:1 (Spark executor 3, host h, pid 42)``: how errors name a node."""
    return f"TF node {job_name}:{task_index} (Spark executor {spark_executor}, host {host}, pid {pid})"


def _write_node_file(node_dir: str, info: NodeInfo, pid: int, run_id: str,
                     state: str = "running", reason: str = "") -> None:
    """Record which OS process runs this node's TensorFlow, and how it ended.

    The driver logs the pid as a "tfbs node process" line, and after a
    failure names the node that died first (``state == "died"``), even when
    a peer's failure reached Spark before the dead node's own task did.
    Best effort: a node that cannot write the file still trains.

    Parameters
    ----------
    state : str
        ``"running"``, ``"done"``, ``"failed"`` (an exception) or ``"died"``
        (the process ended without reporting: killed, crashed).
    reason : str
        Why it failed or died, e.g. ``"its process was killed by SIGKILL"``.
    """
    import tensorflow as tf

    record = {"run_id": run_id, "job_name": info.job_name, "task_index": info.task_index,
              "spark_executor": info.spark_executor_id, "host": info.hostname, "pid": pid,
              "state": state, "reason": reason, "time": time.time()}
    try:
        tf.io.gfile.makedirs(node_dir)
        with tf.io.gfile.GFile(_node_file(node_dir, info.job_name, info.task_index), "w") as f:
            f.write(json.dumps(record))
    except Exception as exc:  # noqa: BLE001 - diagnostics only
        print(f"tfbs node: cannot write its process file under {node_dir}: {exc}",
              file=sys.stderr, flush=True)


def _run_isolated(node_main: NodeMain, args: dict, info: NodeInfo, node_dir: str | None = None) -> None:
    """Run ``node_main`` in a forked child process, watch it, and fail here when it fails or dies.

    Why a child process: TFoS runs chief and worker nodes inside the PySpark
    worker, which PySpark reuses for later tasks. A child process takes every
    piece of TF state with it when it exits: the gRPC server, coordinator
    threads, the collective-ops configuration and the memory. Measured
    without it: MWMS after PSS in the same application failed in the reused
    worker, and the old coordinator kept logging gRPC errors.

    Why the parent waits: it is the watchdog that makes a dead node fail
    fast. A ParameterServerStrategy coordinator treats a lost worker as
    preempted and waits for it to come back, and nothing in TFoS notices a
    lost ps, so a killed TF process alone stalls the run until TFoS's
    3-day shutdown timeout. The parent sees the death at once (end of file
    on the pipe) and raises a :class:`RuntimeError` naming the node; that
    fails the node's Spark task, and with ``spark.task.maxFailures=1`` Spark
    aborts the node job, which :func:`run_cluster` reports.

    ``os.fork`` rather than ``multiprocessing``: TFoS runs ps nodes in a
    daemonic ``multiprocessing`` process, which may not start
    ``multiprocessing`` children. ``fork`` rather than ``spawn``, because
    ``node_main`` may live in a driver script's ``__main__``. TFoS already
    imported TensorFlow into the parent but has not started its runtime.
    """
    recv_end, send_end = multiprocessing.Pipe(duplex=False)
    sys.stdout.flush()  # or the child would print the parent's buffered output again
    sys.stderr.flush()
    parent_pid = os.getpid()
    pid = os.fork()
    if pid == 0:
        recv_end.close()
        _child_main(node_main, args, info, send_end, parent_pid)  # never returns
    send_end.close()
    print(f"tfbs node process: job={info.job_name} task={info.task_index} pid={pid}",
          file=sys.stderr, flush=True)
    if node_dir:
        _write_node_file(node_dir, info, pid, str(args.get("run_id")))
    try:
        error = recv_end.recv()
    except EOFError:  # the child died without reporting (killed, crashed)
        error = None
    _, status = os.waitpid(pid, 0)
    label = _node_label(info.job_name, info.task_index, info.spark_executor_id, info.hostname, pid)
    if error is not None:
        state, reason = "failed", _exception_line(error)
    elif status != 0:
        state, reason = "died", f"its process {_exit_reason(status)}"
    else:
        state, reason = "done", ""
    if node_dir:
        # Before raising: Spark may kill this task at once when a peer's
        # failure reaches it first, and the driver must still learn who died.
        _write_node_file(node_dir, info, pid, str(args.get("run_id")), state, reason)
    if state == "failed":
        raise RuntimeError(f"{label} failed:\n{error}")
    if state == "died":
        raise RuntimeError(f"{label} died: {reason}")


class _NodeEntry:
    """The ``fn(tf_args, ctx)`` that TFoS runs on each executor.

    This is a module-level class rather than a closure, so cloudpickle
    sends it by reference (the executor imports this module), while
    ``node_main`` may be pickled by value.
    """

    def __init__(self, node_main: NodeMain) -> None:
        self.node_main = node_main

    def __call__(self, tf_args: argparse.Namespace, ctx: Any) -> None:
        info = NodeInfo(
            job_name=ctx.job_name,
            task_index=int(ctx.task_index),
            executor_id=int(ctx.executor_id),
            spark_executor_id=_spark_executor_id(),
            cluster_spec={k: list(v) for k, v in ctx.cluster_spec.items()},
            hostname=socket.gethostname(),
            pid=os.getpid(),
            default_fs=ctx.defaultFS,
        )
        # Spark retries a failed task, and TFoS would re-run the node on its
        # old port, but the TF cluster cannot take the node back: a restarted
        # MWMS member cannot rejoin the collectives, and a restarted chief
        # would start training again. Fail every retry at once, so Spark
        # aborts the job and the driver reports the first attempt's error.
        from pyspark import TaskContext

        task = TaskContext.get()
        if task is not None and task.attemptNumber() > 0:
            raise RuntimeError(
                f"TF node {info.job_name}:{info.task_index} is not retried "
                f"(attempt {task.attemptNumber()}); see the first attempt's error")
        # Report unreachable peers at once instead of retrying gRPC calls
        # (the TF ParameterServerStrategy tutorial sets the same value).
        os.environ.setdefault("GRPC_FAIL_FAST", "use_caller")
        args = dict(vars(tf_args))
        # print + flush to stderr: it reaches the executor's stderr file
        # whatever the worker's logging setup (see the module docstring).
        print(info.describe(), file=sys.stderr, flush=True)
        if info.job_name == PS:
            # TFoS runs ps nodes in a forked daemon process, and its task only
            # polls TFoS's queues: a dead ps process would go unnoticed. So
            # this daemon forks once more and watches the ps like the other
            # nodes; TFoS passes the watcher's error on and fails the task.
            # The death signal stops the watcher outliving a killed task.
            _set_parent_death_signal()
        _run_isolated(self.node_main, args, info, node_dir=args.get(NODE_DIR_ARG))
        print(f"tfbs node done: job={info.job_name} task={info.task_index} "
              f"executor={info.spark_executor_id}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# Driver side
# --------------------------------------------------------------------------


def _await_executors(sc: SparkContext, count: int, timeout: float) -> int:
    """Wait until ``count`` executors have registered, then return the number registered.

    Executors register a few seconds after the SparkContext starts. TFoS's
    reservation step would also wait, but checking here gives a clear error
    instead of a reservation timeout.
    """
    deadline = time.monotonic() + timeout
    while True:
        registered = len(sc.statusTracker().getExecutorInfos()) - 1  # minus the driver
        if registered >= count or time.monotonic() > deadline:
            return registered
        time.sleep(1)


def _node_stage_id(sc: SparkContext, num_nodes: int) -> int | None:
    """Id of the running stage of TFoS's node job (the stage with one task per node)."""
    tracker = sc.statusTracker()
    for stage_id in tracker.getActiveStageIds():
        stage = tracker.getStageInfo(stage_id)
        if stage is not None and stage.numTasks == num_nodes:
            return stage_id
    return None


def _spark_placement(sc: SparkContext, stage_id: int | None, num_nodes: int) -> dict[int, str]:
    """Map each TFoS node index to its Spark executor id, using the Spark UI REST API.

    TFoS's ``cluster_info`` has the node index, host and port, but not the
    Spark executor. In the node stage, a task's ``index`` is the TFoS node
    index. Best effort: returns ``{}`` if the UI is disabled or does not
    answer.
    """
    url = sc.uiWebUrl
    stage = sc.statusTracker().getStageInfo(stage_id) if stage_id is not None else None
    if not url or stage is None:
        return {}
    api = (f"{url}/api/v1/applications/{sc.applicationId}/stages/"
           f"{stage_id}/{stage.currentAttemptId}/taskList?length={num_nodes * 4}")
    placement: dict[int, str] = {}
    try:
        # The first REST call took ~5 s (the UI's REST layer starts lazily),
        # and longer while TF kept the cores busy. A 5 s timeout missed it.
        with urllib.request.urlopen(api, timeout=30) as resp:
            for task in json.load(resp):
                if task.get("status") in ("RUNNING", "SUCCESS"):
                    placement[int(task["index"])] = str(task["executorId"])
    except Exception as exc:  # noqa: BLE001 - diagnostics only
        logger.info("tfbs cluster: no task placement from the Spark UI: %s", exc)
    return placement


def _tfos_error() -> str | None:
    """The error TFoS's launcher thread recorded for the node job, if any."""
    from tensorflowonspark import TFCluster

    return TFCluster.tf_status.get("error")


#: How :func:`_run_isolated` names a failed node: ``TF node worker:1 (Spark
#: executor 3, host h, pid 42) died: its process was killed by SIGKILL``, or
#: ``... failed:`` followed by the node's traceback.
_NODE_FAILURE = re.compile(r"TF node (?P<node>\w+:\d+) \((?P<where>[^)]*)\) (?P<what>died: [^\n]*|failed:)")
#: Spark's line for the task attempt that made it abort the job.
_LOST_TASK = re.compile(
    r"Lost task (?P<index>\d+)\.\d+ in stage \S+ \(TID \d+\) \([^)]*\): (?P<reason>[^\n]*)")


#: A Python exception line: ``ValueError: ...``, ``tensorflow...UnavailableError: ...``.
_EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt)\b(?::.*)?$")


def _exception_line(traceback_text: str) -> str:
    """The ``ValueError: ...`` line of the first Python traceback in ``traceback_text``.

    Spark appends the Java stack (``\tat org.apache...``) to the Python
    traceback of a failed task, so the traceback ends where that starts. Of
    chained exceptions the last one is taken. TF error messages run over
    several lines; only the first is kept.
    """
    found = ""
    for line in traceback_text.splitlines():
        if line.startswith("\tat ") or line.startswith("\t..."):
            break
        if _EXCEPTION_LINE.match(line.strip()):
            found = line.strip()
    return found[:300] or "see the node's executor log"


def _describe_failure(error: str, nodes: list[dict[str, Any]]) -> str:
    """One line naming the TF node that failed the node job, and why.

    Parameters
    ----------
    error : str
        The error TFoS's launcher thread recorded: Spark's job-abort message
        with the failed task's Python traceback and the Java stack.
    nodes : list of dict
        The placement records of :func:`run_cluster`, to name a node that
        Spark reports only by task index (e.g. its executor was lost).
    """
    match = _NODE_FAILURE.search(error)
    if match is not None:
        if match["what"].startswith("died"):
            return f"TF node {match['node']} ({match['where']}) {match['what']}"
        return (f"TF node {match['node']} ({match['where']}) failed: "
                f"{_exception_line(error[match.end():])}")
    lost = _LOST_TASK.search(error)
    if lost is not None:
        for node in nodes:
            if node["tfos_index"] == int(lost["index"]):
                return (f"TF node {node['job_name']}:{node['task_index']} (Spark executor "
                        f"{node['spark_executor']}, host {node['host']}) failed: {lost['reason']}")
    first = error.strip().splitlines()[0] if error.strip() else "no error recorded"
    return f"the TF node job failed: {first}"


def _read_node_files(node_dir: str | None, run_id: str, nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The node files (see :func:`_write_node_file`) this run's nodes have written so far.

    Files left by an earlier run (another ``run_id``) and files being
    written are skipped.
    """
    if not node_dir:
        return []
    import tensorflow as tf

    records = []
    for node in nodes:
        path = _node_file(node_dir, node["job_name"], node["task_index"])
        try:
            with tf.io.gfile.GFile(path) as f:
                record = json.loads(f.read())
        except (ValueError, tf.errors.OpError):
            continue  # not there yet, or being written
        if record.get("run_id") == run_id:
            records.append(record)
    return records


def _log_node_processes(node_dir: str | None, run_id: str, nodes: list[dict[str, Any]],
                        logged: set[str]) -> None:
    """Log a "tfbs node process" line for each node whose process file has appeared.

    Nodes write the file once their TF process is forked (after the
    reservation the placement lines come from), so the driver picks them up
    while it waits. ``logged`` holds the nodes already logged.
    """
    if not node_dir or len(logged) == len(nodes):
        return
    for record in _read_node_files(node_dir, run_id, nodes):
        name = f"{record['job_name']}:{record['task_index']}"
        if name not in logged:
            logged.add(name)
            logger.info("tfbs node process: job=%s task=%s spark_executor=%s host=%s pid=%s",
                        record["job_name"], record["task_index"], record.get("spark_executor"),
                        record.get("host"), record.get("pid"))


def _failure_message(error: str, nodes: list[dict[str, Any]], node_dir: str | None,
                     run_id: str) -> str:
    """Name the node that caused a failed node job: the first that died, else Spark's failed task.

    When a ps dies, the chief's coordinator fails at the same moment, and
    whichever task reaches Spark first aborts the job. So a node that died
    (from its node file) is named first, and the task Spark stopped on is
    added when it is another node.
    """
    # The watcher of a node that died at the same moment writes within
    # milliseconds; give it a moment before reading.
    time.sleep(1)
    spark_side = _describe_failure(error, nodes)
    dead = sorted((r for r in _read_node_files(node_dir, run_id, nodes) if r.get("state") == "died"),
                  key=lambda r: r.get("time", 0.0))
    if not dead:
        return spark_side
    first = dead[0]
    label = _node_label(first["job_name"], first["task_index"], first.get("spark_executor"),
                        first.get("host"), first.get("pid"))
    message = f"{label} died: {first.get('reason')}"
    if not spark_side.startswith(f"TF node {first['job_name']}:{first['task_index']} "):
        message += f" (then {spark_side.removeprefix('TF node ')})"
    return message


def _fail(sc: SparkContext, cluster: Any, message: str) -> ClusterFailed:
    """Cancel the node job, stop the reservation server and build the error to raise.

    After a node failure Spark has already aborted the node job and killed
    its tasks; cancelling again costs nothing and also covers jobs TFoS
    started around it. TFoS submits the node job from its own thread and
    exposes no job id, so every running job of the application is
    cancelled. Killed tasks take their TF processes with them (see
    :func:`_set_parent_death_signal`), so no node is left waiting on TFoS's
    shutdown timeout.
    """
    sc.cancelAllJobs()
    cluster.server.stop()
    logger.error("tfbs cluster: %s", message)
    return ClusterFailed(message)


def _await_nodes(sc: SparkContext, cluster: Any, stage_id: int | None, num_done: int,
                 deadline: float, nodes: list[dict[str, Any]], run_id: str,
                 node_dir: str | None = None) -> None:
    """Block until ``num_done`` node tasks (all but the ps) have succeeded.

    ps tasks run until TFoS's shutdown stops them, so "done" means that the
    node stage has ``num_done`` successful tasks. Counting running tasks was
    wrong: while Spark retried a failed node, the stage briefly ran fewer
    tasks, TFoS's shutdown started, met the failure and stopped the
    SparkContext.

    A node that fails or dies fails its Spark task at once (the watching
    parent of :func:`_run_isolated`), Spark aborts the node job, and TFoS's
    launcher thread records the error; this loop polls for it every second.

    Raises
    ------
    ClusterFailed
        If the node job failed (the message names the node, its Spark
        executor and the cause) or ``deadline`` (on the ``time.monotonic()``
        clock) passed. Running jobs are cancelled and the reservation server
        is stopped.
    """
    tracker = sc.statusTracker()
    if stage_id is None:
        logger.warning("tfbs cluster: node stage not found; relying on TFoS's shutdown")
        return
    logged: set[str] = set()
    while True:
        _log_node_processes(node_dir, run_id, nodes, logged)
        error = _tfos_error()
        if error is not None:
            raise _fail(sc, cluster, _failure_message(error, nodes, node_dir, run_id))
        if time.monotonic() > deadline:
            raise _fail(sc, cluster, "TF cluster did not finish within shutdown_timeout")
        stage = tracker.getStageInfo(stage_id)
        if stage is None or stage.numCompletedTasks >= num_done:
            return
        if stage_id not in tracker.getActiveStageIds():
            # The stage ended early, so it failed. TFoS's launcher thread
            # records the error a moment later.
            time.sleep(2)
            error = _tfos_error() or "node stage failed"
            raise _fail(sc, cluster, _failure_message(error, nodes, node_dir, run_id))
        time.sleep(1)


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
) -> list[dict[str, Any]]:
    """Run ``node_main`` on a TF cluster of one chief, ``num_ps`` ps and ``num_workers`` workers.

    Blocks until every node has finished. TFoS stops the ps nodes after the
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
        :func:`wait_for_chief` for that.
    node_args : dict
        Picklable arguments for ``node_main``. A ``"run_id"`` entry is added if
        missing, for :func:`mark_chief_done` and :func:`wait_for_chief`.
    num_ps : int
        Number of parameter servers; 0 for MultiWorkerMirroredStrategy.
    num_workers : int
        Number of workers, not counting the chief.
    log_dir : str or None
        Passed to TFoS as its TensorBoard log dir (TensorBoard is not started).
    reservation_timeout : int
        Seconds to wait for the executors, then for all nodes to register.
    shutdown_timeout : int
        Seconds allowed from reservation to the end of training, the same span
        TFoS's ``shutdown(timeout=...)`` covers. Size it to fit the training.
        When it runs out, running jobs are cancelled and
        :class:`ClusterFailed` is raised. Works from any driver thread
        (no ``SIGALRM``).
    node_dir : str or None
        A directory every node and the driver can reach (any
        ``tf.io.gfile`` path or URI). Each node writes
        ``<job>-<index>.json`` there with the pid of the OS process that runs
        its TensorFlow, and the driver logs it as a "tfbs node process"
        line. ``None`` writes nothing.

    Returns
    -------
    list of dict
        One record per node, in TFoS node order: ``{"job_name",
        "task_index", "tfos_index", "spark_executor", "host", "port"}``.
        These are also logged as "tfbs placement" lines.

    Raises
    ------
    ClusterFailed
        If the executor layout is wrong, a node failed or died, or the run
        timed out. A dead node is reported within seconds, by name
        (``TF node worker:1 (Spark executor 3, ...) died: its process was
        killed by SIGKILL``), and the node job is cancelled. The
        SparkContext remains usable, except when a node fails before all
        nodes have registered: TFoS then stops the SparkContext itself.
    """
    # Imported here: importing it configures root logging and loads TF.
    from tensorflowonspark import TFCluster

    num_nodes = num_ps + num_workers + 1
    found = _await_executors(sc, num_nodes, timeout=reservation_timeout)
    if found != num_nodes:
        raise ClusterFailed(
            f"TF cluster needs exactly {num_nodes} Spark executors "
            f"(1 chief + {num_ps} ps + {num_workers} workers), found {found}")
    cores = sc.getConf().get("spark.executor.cores")
    task_cpus = int(sc.getConf().get("spark.task.cpus", "1"))
    if cores is not None and int(cores) > task_cpus:
        raise ClusterFailed(
            "one TF node per executor needs spark.task.cpus == spark.executor.cores "
            f"(got {task_cpus} and {cores})")

    args = dict(node_args)
    args.setdefault("run_id", uuid.uuid4().hex)
    if node_dir:
        args[NODE_DIR_ARG] = node_dir
    # A Namespace, not a dict: TFoS checks `'num_gpus' in tf_args` and then
    # reads `tf_args.num_gpus` as an attribute.
    tf_args = argparse.Namespace(**args)

    # TFoS keeps the error in a module-level dict that nothing resets.
    TFCluster.tf_status.clear()
    t0 = time.monotonic()
    try:
        cluster = TFCluster.run(
            sc, _NodeEntry(node_main), tf_args,
            num_executors=num_nodes, num_ps=num_ps, tensorboard=False,
            input_mode=TFCluster.InputMode.TENSORFLOW, log_dir=log_dir,
            master_node=CHIEF, reservation_timeout=reservation_timeout,
        )
    except SystemExit as exc:  # TFoS: sc.stop(); sys.exit(1)
        raise ClusterFailed(f"a TF node failed during reservation: {_tfos_error()}") from exc
    except Exception as exc:  # reservation timed out; node tasks still running
        sc.cancelAllJobs()
        raise ClusterFailed(f"TF cluster did not start: {exc}") from exc
    logger.info("tfbs cluster: %d nodes reserved in %.1f s", num_nodes, time.monotonic() - t0)

    stage_id = _node_stage_id(sc, num_nodes)
    placement = _spark_placement(sc, stage_id, num_nodes)
    nodes = []
    for node in sorted(cluster.cluster_info, key=lambda n: n["executor_id"]):
        record = {
            "job_name": node["job_name"],
            "task_index": node["task_index"],
            "tfos_index": node["executor_id"],
            "spark_executor": placement.get(node["executor_id"]),
            "host": node["host"],
            "port": node["port"],
        }
        nodes.append(record)
        logger.info("tfbs placement: job=%(job_name)s task=%(task_index)s "
                    "spark_executor=%(spark_executor)s tfos_index=%(tfos_index)s "
                    "host=%(host)s port=%(port)s", record)

    _await_nodes(sc, cluster, stage_id, num_done=num_nodes - num_ps,
                 deadline=t0 + shutdown_timeout, nodes=nodes, run_id=args["run_id"],
                 node_dir=node_dir)
    try:
        # Only ps tasks are left now. TFoS stops the worker-side managers and
        # tells the ps tasks to end. Its fixed polling (5 s sleeps, three
        # confirmations) adds ~20 s. timeout=-1 means no SIGALRM.
        cluster.shutdown(timeout=-1)
    except SystemExit as exc:  # TFoS: sc.stop(); sys.exit(1)
        raise ClusterFailed(f"a TF node failed during shutdown: {_tfos_error()}") from exc
    logger.info("tfbs cluster: finished in %.1f s", time.monotonic() - t0)
    return nodes
