"""How a failed or dead TF node is explained in one line.

A node's watcher (:func:`tf_models.tfos.task.run_isolated`) names its
node when it fails its Spark task (``TF node worker:1 (Spark executor 3,
host vm, pid 28216) died: its process was killed by SIGKILL``, or
``... failed:`` and the traceback). After Spark aborts the node job, the
driver turns Spark's error and the node files into the message of
:class:`ClusterFailed`, naming the node that died first.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Callable
from typing import Any

from tf_models.tfos.node_files import read_node_files
from tfbs.errors import TfbsError


class ClusterFailed(RuntimeError):
    """A TF node failed, or the cluster did not start or finish in time."""


class ClusterSetupError(ClusterFailed, TfbsError):
    """The application cannot host a TF cluster, found before any node ran: the cluster's or the configuration's to fix.

    A :class:`~tfbs.errors.TfbsError`, so a stage ends in one ``error:`` line
    with exit status 2 (:func:`jobs.common.run_stage`), not a traceback.
    """


class ClusterSizeError(ClusterSetupError):
    """The application's executors do not match the TF nodes: the cluster's or the configuration's to fix."""


class ReservationTimeoutError(ClusterSetupError):
    """The TF nodes did not all register within the reservation timeout: nothing trained, the timeout is to raise."""


#: How TensorFlowOnSpark's reservation server says its wait ran out (a bare ``Exception``).
_RESERVATION_TIMED_OUT = "timed out waiting for reservations"


def reservation_failure(error: BaseException, timeout_s: float) -> ClusterFailed:
    """The error to raise when TensorFlowOnSpark's reservation of the TF nodes ended in ``error``.

    A reservation that ran out of time is a setup error (one ``error:``
    line, exit 2, naming the setting): no node has trained, and on a busy
    host importing TensorFlow alone can take longer than a small timeout.
    Anything else is a failure of the cluster.

    Examples
    --------
    >>> type(reservation_failure(Exception("timed out waiting for reservations to complete"), 5)).__name__
    'ReservationTimeoutError'
    >>> str(reservation_failure(OSError("boom"), 5))
    'TF cluster did not start: boom'
    """
    if _RESERVATION_TIMED_OUT in str(error):
        return ReservationTimeoutError(
            f"train.placement.reservation_timeout_s: the TF nodes did not all register within {timeout_s:g} s "
            "(each node imports TensorFlow first, which on a busy host can take minutes); nothing was trained: "
            "raise it and run again"
        )
    return ClusterFailed(f"TF cluster did not start: {error}")


#: How :func:`tf_models.tfos.task.run_isolated` names a failed node:
#: ``TF node worker:1 (Spark executor 3, host h, pid 42) died: its process was
#: killed by SIGKILL``, or ``... failed:`` followed by the node's traceback.
_NODE_FAILURE = re.compile(r"TF node (?P<node>\w+:\d+) \((?P<where>[^)]*)\) (?P<what>died: [^\n]*|failed:)")
#: A node's task resubmitted after its executor was lost (tfos_patches.NodeReservationClient).
_RETRIED_TASK = re.compile(r"TF node task (?P<index>\d+) is not retried \(attempt \d+\): (?P<reason>[^\n]*)")
#: Spark's line for the task attempt that made it abort the job.
_LOST_TASK = re.compile(
    r"Lost task (?P<index>\d+)\.\d+ in stage \S+ \(TID \d+\) \((?P<where>[^)]*)\): (?P<reason>[^\n]*)"
)
#: In a node's error: a peer that stopped answering (a ps or worker whose host went away).
_UNREACHABLE = "UnavailableError"
#: How long an ``UnavailableError`` waits for Spark to notice a lost host: it
#: drops a lost host's block managers when their connections close, within seconds.
_LOST_HOST_WAIT_S = 5.0
#: A Python exception line: ``ValueError: ...``, ``tensorflow...UnavailableError: ...``.
_EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt)\b(?::.*)?$")


def node_label(job_name: str, task_index: int, spark_executor: str | None, host: str | None, pid: int | None) -> str:
    """``TF node worker:1 (Spark executor 3, host h, pid 42)``: how errors name a node.

    Parameters
    ----------
    job_name : str
        ``"chief"``, ``"ps"`` or ``"worker"``.
    task_index : int
        Index within ``job_name``.
    spark_executor : str or None
        The Spark executor id.
    host : str or None
        Host name of the executor.
    pid : int or None
        The OS process that runs the node's TensorFlow.

    Returns
    -------
    str
        The label, without a trailing verb.
    """
    return f"TF node {job_name}:{task_index} (Spark executor {spark_executor}, host {host}, pid {pid})"


def exit_reason(wait_status: int) -> str:
    """How a process ended, from an ``os.waitpid`` status.

    Parameters
    ----------
    wait_status : int
        The status ``os.waitpid`` returned.

    Returns
    -------
    str
        ``"was killed by SIGKILL"`` or ``"exited with code 3"``.
    """
    code = os.waitstatus_to_exitcode(wait_status)
    if code >= 0:
        return f"exited with code {code}"
    try:
        return f"was killed by {signal.Signals(-code).name}"
    except ValueError:
        return f"was killed by signal {-code}"


def exception_line(traceback_text: str) -> str:
    """The ``ValueError: ...`` line of the first Python traceback in ``traceback_text``.

    Spark appends the Java stack (``\\tat org.apache...``) to the Python
    traceback of a failed task, so the traceback ends where that starts. Of
    chained exceptions the last one is taken. TF error messages run over
    several lines; only the first is kept.

    Parameters
    ----------
    traceback_text : str
        A Python traceback, possibly followed by Spark's Java stack.

    Returns
    -------
    str
        The exception line (at most 300 characters), or a pointer to the
        executor log if there is none.
    """
    found = ""
    for line in traceback_text.splitlines():
        if line.startswith("\tat ") or line.startswith("\t..."):
            break
        if _EXCEPTION_LINE.match(line.strip()):
            found = line.strip()
    return found[:300] or "see the node's executor log"


def placed_label(node: dict[str, Any], executor: str | None) -> str:
    """``TF node worker:1 (Spark executor 4, host node3 (10.0.0.13))``, from a placement record."""
    host = f"{node['hostname']} ({node['host']})" if node.get("hostname") else node["host"]
    where = f"Spark executor {executor}, host {host}" if executor is not None else f"host {host}"
    return f"TF node {node['job_name']}:{node['task_index']} ({where})"


def describe_failure(error: str, nodes: list[dict[str, Any]]) -> str:
    """One line naming the TF node that failed the node job, and why.

    Parameters
    ----------
    error : str
        The error TFoS's launcher thread recorded: Spark's job-abort message
        with the failed task's Python traceback and the Java stack.
    nodes : list of dict
        The placement records of :func:`tf_models.tfos.run_cluster`, to
        name a node that Spark reports only by task index (e.g. its executor
        was lost).

    Returns
    -------
    str
        ``TF node chief:0 (...) failed: ...``, or ``the TF node job failed:
        ...`` when no node can be named.
    """
    match = _NODE_FAILURE.search(error)
    if match is not None:
        if match["what"].startswith("died"):
            return f"TF node {match['node']} ({match['where']}) {match['what']}"
        return f"TF node {match['node']} ({match['where']}) failed: {exception_line(error[match.end() :])}"
    retried = _RETRIED_TASK.search(error)
    if retried is not None:
        for node in nodes:
            if node["tfos_index"] == int(retried["index"]):
                return f"{placed_label(node, node['spark_executor'])} lost: {retried['reason']}"
    lost = _LOST_TASK.search(error)
    if lost is not None:
        for node in nodes:
            if node["tfos_index"] == int(lost["index"]):
                # Spark says where the task ran: "node3 executor 4".
                executor = node["spark_executor"] or lost["where"].rpartition(" ")[2]
                return f"{placed_label(node, executor)} failed: {lost['reason']}"
    first = error.strip().splitlines()[0] if error.strip() else "no error recorded"
    return f"the TF node job failed: {first}"


def failure_message(
    error: str,
    nodes: list[dict[str, Any]],
    node_dir: str | None,
    run_id: str,
    lost_hosts: Callable[[], set[str]] | None = None,
) -> str:
    """Name the node that caused a failed node job: the first that died, else one on a lost host, else Spark's failed task.

    When a ps dies, the chief's coordinator fails at the same moment, and
    whichever task reaches Spark first aborts the job. So a node that died
    (from its node file) is named first, and the task Spark stopped on is
    added when it is another node. A host lost whole leaves no node file
    (its watchers go with it): a node whose host has no live Spark executor
    left is named then (``lost_hosts``), and the chief's failure to reach it added.

    Parameters
    ----------
    error : str
        The error TFoS's launcher thread recorded (see :func:`describe_failure`).
    nodes : list of dict
        The placement records of :func:`tf_models.tfos.run_cluster`.
    node_dir : str or None
        The directory of the node files, if the run has one.
    run_id : str
        This run's id.
    lost_hosts : callable, optional
        The hosts (names or addresses) that ran Spark executors when the
        nodes started and run none now.

    Returns
    -------
    str
        The message for :class:`ClusterFailed`.
    """
    # The watcher of a node that died at the same moment writes within
    # milliseconds; give it a moment before reading.
    time.sleep(1)
    spark_side = describe_failure(error, nodes)
    dead = sorted(
        (r for r in read_node_files(node_dir, run_id, nodes) if r.get("state") == "died"),
        key=lambda r: r.get("time", 0.0),
    )
    if dead:
        first = dead[0]
        label = node_label(
            first["job_name"], first["task_index"], first.get("spark_executor"), first.get("host"), first.get("pid")
        )
        return _then(f"{label} died: {first.get('reason')}", first, spark_side)
    lost = nodes_on_lost_hosts(nodes, lost_hosts, wait_s=_LOST_HOST_WAIT_S if _UNREACHABLE in error else 0.0)
    if lost:
        return _then(lost_node_message(lost[0]), lost[0], spark_side)
    return spark_side


def lost_node_message(node: dict[str, Any]) -> str:
    """``TF node worker:1 (host node3 (10.0.0.13)) lost: no Spark executor left on its host``.

    Parameters
    ----------
    node : dict
        The node's placement record (see :func:`tf_models.tfos.run_cluster`).

    Returns
    -------
    str
        The message for :class:`ClusterFailed`.
    """
    return f"{placed_label(node, node.get('spark_executor'))} lost: no Spark executor left on its host"


def nodes_on_lost_hosts(
    nodes: list[dict[str, Any]], lost_hosts: Callable[[], set[str]] | None, wait_s: float = 0.0
) -> list[dict[str, Any]]:
    """The nodes (in placement order) on ``lost_hosts()``, asked again for up to ``wait_s`` until there is one.

    Examples
    --------
    >>> nodes = [{"job_name": "ps", "task_index": 0, "host": "10.0.0.12", "hostname": "node2"},
    ...          {"job_name": "chief", "task_index": 0, "host": "10.0.0.11", "hostname": "node1"}]
    >>> [n["job_name"] for n in nodes_on_lost_hosts(nodes, lambda: {"node2"})]
    ['ps']
    >>> nodes_on_lost_hosts(nodes, None)
    []
    """
    if lost_hosts is None:
        return []
    deadline = time.monotonic() + wait_s
    while True:
        gone = lost_hosts()
        lost = [node for node in nodes if {node.get("host"), node.get("hostname")} & gone]
        if lost or time.monotonic() >= deadline:
            return lost
        time.sleep(0.5)


def _then(message: str, first: dict[str, Any], spark_side: str) -> str:
    """``message``, with the task Spark stopped on added when it is another node."""
    if not spark_side.startswith(f"TF node {first['job_name']}:{first['task_index']} "):
        message += f" (then {spark_side.removeprefix('TF node ')})"
    return message
