"""What a TF node's own code sees: where it runs, and how it serves and waits.

``node_main(args, info)`` gets a :class:`NodeInfo` instead of the TFoS
context. PSS ps and workers call :func:`start_server` and then
:func:`wait_for_chief`; the chief calls :func:`mark_chief_done` when
training is over. Everything here runs on the executors, inside the forked
process of :func:`tf_models.tfos.task.run_isolated`.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # typing only: TensorFlow loads lazily
    import tensorflow as tf

log = logging.getLogger("tfbs.tfos")

#: Job names as they appear in the TF cluster spec and ``TF_CONFIG``.
CHIEF, PS, WORKER = "chief", "ps", "worker"

#: Key of ``node_args`` under which :func:`tf_models.tfos.run_cluster` passes ``node_dir``.
NODE_DIR_ARG = "node_dir"
#: Key of ``node_args`` under which it passes the TF network's secret (nodes then run in private networks).
TF_NETWORK_SECRET_ARG = "tf_network_secret"
#: Key of ``node_args`` set when a lost worker leaves the run going (``train.placement.on_worker_loss``).
ELASTIC_WORKERS_ARG = "elastic_workers"
#: Key of ``node_args`` naming the folders each node keeps besides its temporary ones (``{user}``: its
#: own user): root's folders above them are noted before its private network
#: (:func:`tfbs.storage.private_dirs.note_root_folders`).
PRIVATE_FOLDERS_ARG = "private_folders"

NodeMain = Callable[[dict, "NodeInfo"], None]


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

    def describe(self) -> str:
        """The placement line every node logs when it starts."""
        return (
            f"tfbs node: job={self.job_name} task={self.task_index} "
            f"executor={self.spark_executor_id} tfos_index={self.executor_id} "
            f"host={self.hostname} pid={self.pid} addr={self.address}"
        )


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
        A URI :mod:`tfbs.storage` writes (``file://``, ``hdfs://``, ``gs://``),
        visible to every node.
    run_id : str
        ``args["run_id"]``, which :func:`tf_models.tfos.run_cluster`
        provides. It tags the marker so that a marker left by an earlier run
        is ignored.
    status : str
        ``"ok"`` or a short failure description.
    """
    from tfbs import storage

    storage.write_text(done_marker_uri, json.dumps({"run_id": run_id, "status": status}))


def wait_for_chief(
    done_marker_uri: str,
    poll_seconds: float = 0.5,
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
        Seconds between checks.
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
    from tfbs import storage

    deadline = time.monotonic() + timeout_seconds
    while time.monotonic() < deadline:
        if storage.exists(done_marker_uri):
            try:
                marker = json.loads(storage.read_text(done_marker_uri))
            except (ValueError, OSError):
                marker = None  # partly written, or replaced while reading
            if marker is not None and (run_id is None or marker.get("run_id") == run_id):
                return str(marker.get("status", "ok"))
        time.sleep(poll_seconds)
    raise TimeoutError(f"chief did not write {done_marker_uri} within {timeout_seconds} s")
