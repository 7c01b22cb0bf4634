"""What the driver learns from Spark about the node job: executors, the node stage, task placement.

Read from the SparkContext's status tracker and the Spark UI's REST API;
nothing here knows TFoS.
"""

from __future__ import annotations

import json
import logging
import time
import urllib.request
from typing import TYPE_CHECKING

from tfbs.web_ui import request_headers

if TYPE_CHECKING:  # typing only: pyspark loads lazily
    from pyspark import SparkContext

logger = logging.getLogger(__name__)


def await_executors(sc: SparkContext, count: int, timeout: float) -> int:
    """Wait until ``count`` executors have registered, then return the number registered.

    Executors register a few seconds after the SparkContext starts. TFoS's
    reservation step would also wait, but checking here gives a clear error
    instead of a reservation timeout.

    Parameters
    ----------
    sc : SparkContext
        The application.
    count : int
        Executors wanted, not counting the driver.
    timeout : float
        Seconds to wait at most.

    Returns
    -------
    int
        The executors registered when ``count`` was reached or time ran out.
    """
    deadline = time.monotonic() + timeout
    while True:
        registered = len(sc.statusTracker().getExecutorInfos()) - 1  # minus the driver
        if registered >= count or time.monotonic() > deadline:
            return registered
        time.sleep(1)


def live_hosts(sc: SparkContext) -> set[str]:
    """The hosts of the application's live executors and driver, as Spark names them (a name or an address).

    Read from the block managers, not the status tracker: when an
    executor's connection closes, YARN's scheduler drops its block manager
    at once but keeps the executor listed until the ResourceManager gives
    a loss reason, which for a lost host waits for the NodeManager's expiry
    (the driver stopped 11 s after a host was lost with both its executors
    still listed).
    """
    keys = sc._jsc.sc().getExecutorMemoryStatus().keysIterator()  # "host:port" per block manager
    hosts: set[str] = set()
    while keys.hasNext():
        hosts.add(str(keys.next()).rsplit(":", 1)[0])
    return hosts


def removed_executors(sc: SparkContext) -> dict[str, tuple[str, str]]:
    """The executors Spark has removed, each with its host and Spark's reason: ``{id: (host, reason)}``.

    The reason is the cluster manager's account of the executor's end, as
    Spark's status store keeps it: YARN's container exit (``Container killed
    by YARN for exceeding physical memory limits``, a pre-emption, an exit
    code), a standalone worker's ``Command exited with code 137``. An
    executor on a host lost whole is removed only when the cluster manager
    declares the host lost (YARN: the NodeManager's expiry).
    """
    summaries = sc._jsc.sc().statusStore().executorList(False).iterator()
    removed: dict[str, tuple[str, str]] = {}
    while summaries.hasNext():
        summary = summaries.next()
        if not summary.isActive():
            reason = summary.removeReason()
            host = str(summary.hostPort()).rsplit(":", 1)[0]
            removed[str(summary.id())] = (host, str(reason.get()) if reason.isDefined() else "no reason given")
    return removed


def node_stage_id(sc: SparkContext, num_nodes: int) -> int | None:
    """Id of the running stage of TFoS's node job (the stage with one task per node).

    Parameters
    ----------
    sc : SparkContext
        The application.
    num_nodes : int
        Number of TF nodes, hence of tasks in the node stage.

    Returns
    -------
    int or None
        The stage id, or ``None`` if no active stage has ``num_nodes`` tasks.
    """
    tracker = sc.statusTracker()
    for stage_id in tracker.getActiveStageIds():
        stage = tracker.getStageInfo(stage_id)
        if stage is not None and stage.numTasks == num_nodes:
            return stage_id
    return None


def spark_placement(sc: SparkContext, stage_id: int | None, num_nodes: int) -> dict[int, str]:
    """Map each TFoS node index to its Spark executor id, using the Spark UI REST API.

    TFoS's ``cluster_info`` has the node index, host and port, but not the
    Spark executor. In the node stage, a task's ``index`` is the TFoS node
    index. Best effort.

    Parameters
    ----------
    sc : SparkContext
        The application.
    stage_id : int or None
        The node stage (see :func:`node_stage_id`).
    num_nodes : int
        Number of TF nodes.

    Returns
    -------
    dict of int to str
        TFoS node index -> Spark executor id; ``{}`` if the UI is disabled
        or does not answer.
    """
    url = sc.uiWebUrl
    stage = sc.statusTracker().getStageInfo(stage_id) if stage_id is not None else None
    if not url or stage is None:
        return {}
    api = (
        f"{url}/api/v1/applications/{sc.applicationId}/stages/"
        f"{stage_id}/{stage.currentAttemptId}/taskList?length={num_nodes * 4}"
    )
    placement: dict[int, str] = {}
    try:
        # The first REST call took ~5 s (the UI's REST layer starts lazily),
        # and longer while TF kept the cores busy. A 5 s timeout missed it.
        request = urllib.request.Request(api, headers=request_headers(sc.applicationId))
        with urllib.request.urlopen(request, timeout=30) as resp:
            for task in json.load(resp):
                if task.get("status") in ("RUNNING", "SUCCESS"):
                    placement[int(task["index"])] = str(task["executorId"])
    except Exception as exc:  # noqa: BLE001 - diagnostics only
        logger.info("tfbs cluster: no task placement from the Spark UI: %s", exc)
    return placement
