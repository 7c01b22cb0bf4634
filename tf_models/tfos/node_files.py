"""The node files: how each node tells the driver which OS process runs it, and how it ended.

Every node writes ``<node_dir>/<job>-<index>.json`` when its TF process is
forked and again when it ends (:func:`write_node_file`, on the executor).
The driver reads them (:func:`read_node_files`) to log a "tfbs node
process" line per node and, after a failure, to name the node that died
first. ``node_dir`` is any :mod:`tfbs.storage` URI every node and the driver
can reach.
"""

from __future__ import annotations

import json
import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tf_models.tfos.node import NodeInfo


def node_file(node_dir: str, job_name: str, task_index: int) -> str:
    """Where a node records its process and how it ended (see :func:`write_node_file`).

    Parameters
    ----------
    node_dir : str
        The directory of the node files.
    job_name : str
        ``"chief"``, ``"ps"`` or ``"worker"``.
    task_index : int
        Index within ``job_name``.

    Returns
    -------
    str
        ``<node_dir>/<job_name>-<task_index>.json``.
    """
    return f"{node_dir.rstrip('/')}/{job_name}-{task_index}.json"


def write_node_file(
    node_dir: str, info: NodeInfo, pid: int, run_id: str, state: str = "running", reason: str = ""
) -> None:
    """Record which OS process runs this node's TensorFlow, and how it ended.

    The driver logs the pid as a "tfbs node process" line, and after a
    failure names the node that died first (``state == "died"``), even when
    a peer's failure reached Spark before the dead node's own task did.
    Best effort: a node that cannot write the file still trains.

    Parameters
    ----------
    node_dir : str
        The directory of the node files.
    info : NodeInfo
        This node.
    pid : int
        The OS process that runs the node's TensorFlow.
    run_id : str
        This run's id; the driver ignores files from other runs.
    state : str
        ``"running"``, ``"done"``, ``"failed"`` (an exception) or ``"died"``
        (the process ended without reporting: killed, crashed).
    reason : str
        Why it failed or died, e.g. ``"its process was killed by SIGKILL"``.
    """
    from tfbs import storage

    record = {
        "run_id": run_id,
        "job_name": info.job_name,
        "task_index": info.task_index,
        "spark_executor": info.spark_executor_id,
        "host": info.hostname,
        "pid": pid,
        "state": state,
        "reason": reason,
        "time": time.time(),
    }
    try:
        storage.write_text(node_file(node_dir, info.job_name, info.task_index), json.dumps(record))
    except Exception as exc:  # noqa: BLE001 - diagnostics only
        print(f"tfbs node: cannot write its process file under {node_dir}: {exc}", file=sys.stderr, flush=True)


def read_node_files(node_dir: str | None, run_id: str, nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The node files this run's nodes have written so far.

    Files left by an earlier run (another ``run_id``) and files being
    written are skipped.

    Parameters
    ----------
    node_dir : str or None
        The directory of the node files; ``None`` or ``""`` reads nothing.
    run_id : str
        This run's id.
    nodes : list of dict
        The placement records of :func:`tf_models.tfos.run_cluster`.

    Returns
    -------
    list of dict
        The records :func:`write_node_file` wrote, in the order of ``nodes``.
    """
    if not node_dir:
        return []
    from tfbs import storage

    records = []
    for node in nodes:
        path = node_file(node_dir, node["job_name"], node["task_index"])
        try:
            record = json.loads(storage.read_text(path))
        except (ValueError, OSError):
            continue  # not there yet, or being written
        if record.get("run_id") == run_id:
            records.append(record)
    return records
