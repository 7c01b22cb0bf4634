"""A TF node that dies mid-training: a ps stops ``tfbs train`` fast, naming it; a worker is named and left behind.

A real ``SIGKILL`` of the OS process that runs a node's TensorFlow (its pid
comes from the driver's "tfbs node process" line), on a real
``local-cluster`` with one JVM per executor, through the command line users
run. Without a watchdog nothing in TensorFlowOnSpark notices a lost ps, and
the run would hang until TFoS's 3-day shutdown timeout; a lost worker's
steps go to the workers left (``train.placement.on_worker_loss``).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import tensorflow as tf
from conftest import DEMO_CONFIG, REPO, SMALL_OVERRIDES, StreamedProcess

from tf_models.tfos import NodeInfo
from tf_models.tfos.failures import describe_failure, failure_message
from tf_models.tfos.lost_nodes import loss_reason, lost_node_failure
from tf_models.tfos.node_files import write_node_file
from tf_models.tfos.task import run_isolated
from tfbs.storage import local_path

# TensorFlowOnSpark clusters on local-cluster Spark: minutes each.
pytestmark = [pytest.mark.spark, pytest.mark.cluster, pytest.mark.slow]

#: Long enough that the kill lands mid-training (it comes with the first
#: checkpoint, at step 100; ~60 steps/s on 2 idle cores, half that in the
#: suite), short enough that the resumed run finishes quickly.
STEPS = 800
CHECKPOINT_EVERY = 100
#: The killed ps's run: a ps's loss stops the run whatever the workers, so
#: one worker (two TF nodes fewer over the run and its rerun), and steps
#: enough that the kill lands mid-run with some left for the rerun.
PS_RUN_STEPS = 500
PS_RUN_WORKERS = 1
#: The issue's bound, from the kill to the command's exit.
FAIL_WITHIN_S = 120
#: Cluster start-up on 2 shared cores took 30-70 s.
START_TIMEOUT_S = 420

NODE_PROCESS = r"tfbs node process: job={job} task={task} spark_executor=(\S+) host=\S+ pid=(\d+)"
PLACEMENT = r"tfbs placement: job={job} task={task} spark_executor=(\S+)"


def _command(small_shards, run_dir: Path, steps: int = STEPS, workers: int = 2) -> list[str]:
    """``tfbs train`` (as ``python -m jobs.train``) on the shared shards, writing under ``run_dir``."""
    config, _ = small_shards
    overrides = [
        *SMALL_OVERRIDES,
        f"run_dir={run_dir}",
        f"data.root={local_path(config.data.root)}",
        f"shards_dir={config.shards_uri}",
        "train.placement.strategy=parameter_server",
        f"train.placement.num_workers={workers}",
        f"train.steps={steps}",
        f"train.checkpoint_every_steps={CHECKPOINT_EVERY}",
        "train.steps_per_execution=10",
        # Every step is run: the test resumes to the end, not to an early stop.
        "train.early_stopping_patience=null",
    ]
    command = [sys.executable, "-m", "jobs.train", "--config", str(DEMO_CONFIG)]
    for override in overrides:
        command += ["--set", override]
    return command


def _run_processes(run_dir: Path) -> dict[int, str]:
    """Live processes started for this run: pid -> command line.

    The driver exports ``SPARK_HOME=<run_dir>/spark-home`` before its JVM
    starts, so every executor JVM, PySpark daemon and worker, and the TF
    processes forked from them, inherit an environment naming ``run_dir``.
    """
    marker = str(run_dir).encode()
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker in (entry / "environ").read_bytes():
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
                found[int(entry.name)] = cmdline.decode(errors="replace")[:160]
        except OSError:
            continue  # gone meanwhile, or not ours to read
    return found


def _model_dir(run_dir: Path) -> Path:
    """The run's one model version folder, ``<run_dir>/models/<version>`` (tfbs.lineage)."""
    (lineage,) = (run_dir / "models").glob("*/lineage.json")
    return lineage.parent


def _checkpoint_step(model_dir: Path) -> int:
    """The coordinator-counted step stored in the newest checkpoint."""
    latest = tf.train.latest_checkpoint(str(model_dir / "checkpoints"))
    assert latest is not None, f"no checkpoint under {model_dir}"
    return int(tf.train.load_variable(latest, "step/.ATTRIBUTES/VARIABLE_VALUE"))


def _kill_mid_training(
    training: StreamedProcess, run_dir: Path, job: str, task: int, steps: int = STEPS
) -> tuple[int, str, float]:
    """Wait for a checkpoint and the chief's progress, then SIGKILL ``job:task``'s TF process.

    Returns
    -------
    tuple
        The killed pid, the Spark executor the driver placed the node on,
        and the ``time.monotonic()`` of the kill.
    """
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        assert training.proc.poll() is None, f"training ended before the kill:\n{training.output[-4000:]}"
        output = training.output
        node = re.search(NODE_PROCESS.format(job=job, task=task), output)
        checkpointed = any((run_dir / "models").glob("*/checkpoints/checkpoint"))
        if node and re.search(r"chief: step \d+/", output) and checkpointed:
            placed = re.search(PLACEMENT.format(job=job, task=task), output)
            assert placed is not None and placed.group(1) == node.group(1)
            assert not re.search(rf"chief: step {steps}/", output), "the kill would come too late"
            pid = int(node.group(2))
            assert pid in _run_processes(run_dir), "the logged pid is not a process of this run"
            os.kill(pid, signal.SIGKILL)
            return pid, node.group(1), time.monotonic()
        time.sleep(0.2)
    training.kill()
    pytest.fail(f"no checkpoint and progress within {START_TIMEOUT_S} s:\n{training.output[-4000:]}")


def _assert_no_processes_left(run_dir: Path, grace_s: float = 30.0) -> None:
    """Every process of the run ends soon after the command exits (no orphaned TF node)."""
    deadline = time.monotonic() + grace_s
    left = _run_processes(run_dir)
    while left and time.monotonic() < deadline:
        time.sleep(1)
        left = _run_processes(run_dir)
    assert not left, f"processes left {grace_s:.0f} s after the command exited: {left}"


def _fail_fast(small_shards, run_dir: Path, job: str, task: int, steps: int, workers: int) -> tuple[str, float]:
    """Kill ``job:task`` mid-training; check the exit, the error and the clean-up.

    Returns the command's output and the seconds from the kill to its exit.
    """
    training = StreamedProcess(_command(small_shards, run_dir, steps, workers))
    try:
        pid, executor, killed_at = _kill_mid_training(training, run_dir, job, task, steps)
        code = training.wait(timeout=FAIL_WITHIN_S + 60)
        seconds = time.monotonic() - killed_at
    finally:
        training.kill()
    output = training.output
    assert code != 0, output[-4000:]
    assert seconds < FAIL_WITHIN_S, f"exit {seconds:.0f} s after the kill"
    # The driver's own error, as the command's last word: node, executor, pid, cause.
    named = (
        rf"ClusterFailed: TF node {job}:{task} \(Spark executor {executor}, host \S+, "
        rf"pid {pid}\) died: its process was killed by SIGKILL"
    )
    assert re.search(named, output), output[-4000:]
    _assert_no_processes_left(run_dir)
    return output, seconds


# The driver's naming of the failed node, on the error texts Spark produced
# in the runs below (no cluster needed).

NODES = [
    {"job_name": "ps", "task_index": 0, "tfos_index": 0, "spark_executor": "2", "host": "10.0.0.5", "port": 1},
    {"job_name": "chief", "task_index": 0, "tfos_index": 1, "spark_executor": "0", "host": "10.0.0.5", "port": 2},
    {"job_name": "worker", "task_index": 0, "tfos_index": 2, "spark_executor": "1", "host": "10.0.0.5", "port": 3},
]

CHIEF_FAILED = """Job aborted due to stage failure: Task 1 in stage 0.0 failed 1 times, most recent failure: \
Lost task 1.0 in stage 0.0 (TID 1) (10.0.0.5 executor 0): org.apache.spark.api.python.PythonException: \
[PYTHON_EXCEPTION] An exception was thrown from the Python worker: Traceback (most recent call last):
  File "/opt/tfbs/tf_models/tfos/task.py", line 176, in run_isolated
    raise RuntimeError(f"{label} failed:\\n{error}")
RuntimeError: TF node chief:0 (Spark executor 0, host vm, pid 3225) failed:
Traceback (most recent call last):
  File "/venv/tensorflow/python/distribute/coordinator/cluster_coordinator.py", line 443, in _raise_if_error
    raise self._error  # pylint: disable=raising-bad-type
tensorflow.python.framework.errors_impl.UnavailableError: failed to connect to all addresses
Additional GRPC error information from remote target /job:ps/replica:0/task:0:
:UNKNOWN:Error received from peer  {grpc_status:14}

\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator.handlePythonException(PythonRunner.scala:600)
"""


def _node_info(job_name: str, task_index: int, executor: str) -> NodeInfo:
    return NodeInfo(
        job_name=job_name,
        task_index=task_index,
        executor_id=0,
        spark_executor_id=executor,
        cluster_spec={},
        hostname="vm",
        pid=1,
    )


def test_the_node_that_died_is_named_before_the_peer_spark_stopped_on(tmp_path):
    node_dir = str(tmp_path / "_nodes")
    # The ps died first; the chief's coordinator failed on it, and its task
    # reached Spark first. A node file from an earlier run must not count.
    write_node_file(node_dir, _node_info("ps", 0, "2"), 7, "run-b", "died", "its process was killed by SIGKILL")
    write_node_file(node_dir, _node_info("chief", 0, "0"), 3225, "run-b", "failed", "UnavailableError: ...")
    write_node_file(node_dir, _node_info("worker", 0, "1"), 9, "run-a", "died", "its process was killed by SIGKILL")
    message = failure_message(CHIEF_FAILED, NODES, node_dir, "run-b")
    assert message == (
        "TF node ps:0 (Spark executor 2, host vm, pid 7) died: its process was killed by SIGKILL "
        "(then chief:0 (Spark executor 0, host vm, pid 3225) failed: "
        "tensorflow.python.framework.errors_impl.UnavailableError: failed to connect to all addresses)"
    )


def test_a_node_on_a_lost_host_is_named_before_the_chief_that_could_not_reach_it(tmp_path):
    """A host lost whole leaves no node file; Spark has removed its executors: the node there is named first."""
    on_hosts = [
        {**NODES[0], "host": "10.0.0.12", "hostname": "node2"},
        {**NODES[1], "host": "10.0.0.11", "hostname": "node1"},
        {**NODES[2], "host": "10.0.0.13", "hostname": "node3"},
    ]
    asked = []

    def lost_hosts() -> set[str]:
        asked.append(1)
        return {"node2"} if len(asked) > 2 else set()  # Spark removes the executors a moment later

    message = failure_message(CHIEF_FAILED, on_hosts, str(tmp_path / "_nodes"), "run-b", lost_hosts)
    assert message == (
        "TF node ps:0 (Spark executor 2, host node2 (10.0.0.12)) lost: no Spark executor left on its host "
        "(then chief:0 (Spark executor 0, host vm, pid 3225) failed: "
        "tensorflow.python.framework.errors_impl.UnavailableError: failed to connect to all addresses)"
    )
    # No host lost: Spark's failed task, once the wait for one is over.
    assert failure_message(CHIEF_FAILED, on_hosts, None, "run-b", set).startswith("TF node chief:0 ")


def test_the_run_goes_on_without_a_lost_worker_only_while_one_is_left_and_never_without_a_ps(caplog):
    """The driver's policy per role (tf_models.tfos.lost_nodes), on a node job of stand-ins."""
    import types

    from tf_models.tfos.failures import ClusterFailed
    from tf_models.tfos.node_watch import RunningNodes

    nodes = [*NODES, {**NODES[2], "task_index": 1, "tfos_index": 3, "spark_executor": "3"}]
    cancelled: list[bool] = []
    sc = types.SimpleNamespace(cancelAllJobs=lambda: cancelled.append(True))
    cluster = types.SimpleNamespace(server=types.SimpleNamespace(stop=lambda: None))

    def job(elastic: bool) -> RunningNodes:
        return RunningNodes(sc, cluster, 0, nodes, "run-a", set(), None, elastic)

    elastic = job(True)
    elastic.lose(nodes[2], lambda: "TF node worker:0 (...) lost: gone")
    elastic.lose(nodes[2], lambda: pytest.fail("a loss already known is not asked again"))
    assert elastic.lost_workers == {"worker:0"} and not cancelled
    assert "TF node worker:0 (...) lost: gone; training goes on with the 1 worker left" in caplog.text
    with pytest.raises(ClusterFailed, match="worker:1 .* lost: gone; no worker is left to train on"):
        elastic.lose(nodes[3], lambda: "TF node worker:1 (...) lost: gone")
    with pytest.raises(ClusterFailed, match=r"^TF node ps:0 \(Spark executor 2, host 10.0.0.5\) lost"):
        job(True).lose(nodes[0], lambda: lost_node_failure(nodes[0], None))
    with pytest.raises(ClusterFailed, match="worker:0"):  # on_worker_loss: stop
        job(False).lose(nodes[2], lambda: "TF node worker:0 (...) lost: gone")
    assert cancelled == [True, True, True]


def test_a_lost_host_waits_for_spark_s_reason_and_names_the_cause_it_gives():
    """A node's only executor on its host ended: its reason names the cause, not a lost host."""
    worker = {**NODES[2], "host": "10.0.0.13", "hostname": "node3"}
    asked = []

    def removed() -> dict[str, tuple[str, str]]:
        asked.append(time.monotonic())
        # YARN's report of the container reaches Spark a few polls later.
        memory = "Container killed by YARN for exceeding physical memory limits. 1.2 GB of 1.1 GB physical memory used."
        return {worker["spark_executor"]: ("node3", memory)} if len(asked) > 3 else {}

    failure = lost_node_failure(worker, loss_reason(worker, removed, wait_s=30))
    assert len(asked) == 4 and asked[-1] - asked[0] < 5
    # Resuming as it is would be killed again at the same point: the advice says what to raise first.
    assert str(failure) == (
        f"TF node worker:0 (Spark executor {worker['spark_executor']}, host node3 (10.0.0.13)) lost: "
        "Spark removed its executor: Container killed by YARN for exceeding physical memory limits. "
        "1.2 GB of 1.1 GB physical memory used; give the executors more memory "
        "(spark.executor.memoryOverhead, spark.executor.memory) before running again"
    )
    # A host lost whole: no reason within the wait; no executor known, the host's removals count.
    polls: list[float] = []

    def other_hosts_removals() -> dict[str, tuple[str, str]]:
        polls.append(time.monotonic())
        return {"9": ("node1", "Command exited with code 1")}

    assert loss_reason(worker, other_hosts_removals, wait_s=1.0) is None
    # It kept asking until its wait was out (the last ask after it), not one look and done.
    assert len(polls) >= 3 and polls[-1] - polls[0] >= 1.0
    assert str(lost_node_failure(worker, None)).endswith("lost: no Spark executor left on its host")
    unplaced = {**worker, "spark_executor": None}
    assert loss_reason(unplaced, lambda: {"7": ("10.0.0.13", "Container preempted")}, wait_s=0) == "Container preempted"


#: Run in a process of its own (one SparkContext a process): a local-cluster of
#: two executors, the JVM of executor 1 killed, Spark's removals read before and after.
REMOVED_EXECUTORS_PROBE = """
import json, sys, time
import psutil
from tfbs.config import load_config
from tfbs.launch.session import build_session
from tf_models.tfos.spark_status import removed_executors

spark = build_session(load_config(sys.argv[1]).spark, master="local-cluster[2,1,1024]", app_suffix="-probe")
sc = spark.sparkContext
assert sc.parallelize(range(8), 4).map(lambda x: x * x).sum() == 140
before = removed_executors(sc)
executors = [
    p for p in psutil.process_iter(["cmdline"])
    if "CoarseGrainedExecutorBackend" in " ".join(p.info["cmdline"] or [])
    and sc.applicationId in p.info["cmdline"] and "1" == p.info["cmdline"][p.info["cmdline"].index("--executor-id") + 1]
]
assert len(executors) == 1, executors
executors[0].kill()
deadline = time.monotonic() + 60
while "1" not in removed_executors(sc) and time.monotonic() < deadline:
    time.sleep(0.5)
print(json.dumps({"before": before, "after": removed_executors(sc)}))
spark.stop()
"""


def test_spark_s_removed_executors_carry_the_cluster_manager_s_reason(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", REMOVED_EXECUTORS_PROBE, str(DEMO_CONFIG)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["before"] == {}
    # The standalone worker's report of the killed JVM, with its host.
    host, reason = found["after"]["1"]
    assert reason == "Command exited with code 137" and host, found


def test_without_node_files_the_failed_task_is_named_from_spark():
    assert describe_failure(CHIEF_FAILED, NODES) == (
        "TF node chief:0 (Spark executor 0, host vm, pid 3225) failed: "
        "tensorflow.python.framework.errors_impl.UnavailableError: failed to connect to all addresses"
    )
    # A lost executor leaves no Python traceback: the task index names the node.
    lost = (
        "Job aborted due to stage failure: Task 2 in stage 0.0 failed 1 times, most recent failure: "
        "Lost task 2.0 in stage 0.0 (TID 2) (10.0.0.5 executor 1): ExecutorLostFailure (executor 1 "
        "exited caused by one of the running tasks) Reason: Command exited with code 137\n"
    )
    assert describe_failure(lost, NODES) == (
        "TF node worker:0 (Spark executor 1, host 10.0.0.5) failed: ExecutorLostFailure (executor 1 "
        "exited caused by one of the running tasks) Reason: Command exited with code 137"
    )
    # On YARN without Spark's UI the placement knows no executor: Spark's message does;
    # the node registered its host's name beside its address.
    on_yarn = [{**node, "spark_executor": None, "hostname": "node3"} for node in NODES]
    assert describe_failure(lost, on_yarn).startswith(
        "TF node worker:0 (Spark executor 1, host node3 (10.0.0.5)) failed:"
    )


class _Closure:
    """A scheduled step's result, as ``RemoteValue.fetch`` gives it."""

    def __init__(self, loss: float | None, error: Exception | None = None) -> None:
        self.loss, self.error = loss, error

    def fetch(self) -> float | None:
        if self.error is not None:
            raise self.error
        return self.loss


class _Coordinator:
    """Runs each closure as it is scheduled. A stream past its ``ends_after``-th read has ended, as a worker's
    does after a lost connection cancelled its read: that step ends in "End of sequence", which the next
    ``join`` raises, and the steps after it are cancelled."""

    def __init__(self) -> None:
        self.error: Exception | None = None

    def schedule(self, train_steps, args: tuple) -> _Closure:
        (stream,) = args
        stream["read"] += 1
        if stream["read"] <= stream["ends_after"]:
            return _Closure(train_steps(stream))
        if self.error is None:
            self.error = tf.errors.OutOfRangeError(None, None, "End of sequence\n\t [[{{node IteratorGetNext}}]]")
            return _Closure(None, self.error)
        return _Closure(None, tf.errors.CancelledError(None, None, "cancelled"))

    def join(self) -> None:
        error, self.error = self.error, None
        if error is not None:
            raise error


def test_a_worker_stream_ended_by_a_lost_connection_is_built_anew_and_the_steps_left_run(caplog):
    from tf_models.train_loop import STREAM_REBUILDS, _run_closures

    rebuilt_at: list[int] = []

    def streams_from(step: int, ends_after: float = float("inf")) -> dict:
        rebuilt_at.append(step)
        return {"read": 0, "ends_after": ends_after}

    def train_steps(stream: dict) -> float:
        return 1.0 / stream["read"]

    # Two steps per closure, from step 4 to 24: the first stream ends after 3 closures.
    step, losses, stream = _run_closures(train_steps, streams_from(4, 3), _Coordinator(), 4, 24, 2, streams_from)
    assert step == 24 and len(losses) == 10 and rebuilt_at == [4, 10]
    assert losses == [1.0, 0.5, 1 / 3, *(1.0 / n for n in range(1, 8))] and stream["read"] == 7
    assert "a worker's stream ended at step 10 (End of sequence): every worker's stream built anew" in caplog.text

    # A stream that truly ends, however often it is built anew: the error, after STREAM_REBUILDS tries.
    rebuilt_at.clear()
    with pytest.raises(tf.errors.OutOfRangeError, match="End of sequence"):
        _run_closures(train_steps, streams_from(0, 1), _Coordinator(), 0, 24, 2, lambda step: streams_from(step, 1))
    assert rebuilt_at == [2 * n for n in range(STREAM_REBUILDS + 1)]  # one closure ran on each stream


def test_a_worker_that_dies_ends_as_done_only_where_the_run_goes_on_without_it():
    """The watcher of a node whose process was killed: a lost elastic worker's task succeeds, any other fails."""

    def killed(args: dict, info: NodeInfo) -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    worker = _node_info("worker", 1, "3")
    assert run_isolated(killed, {"run_id": "r"}, worker, survive_death=True) is None
    with pytest.raises(
        RuntimeError, match=r"TF node worker:1 \(Spark executor 3, host vm, pid \d+\) died: its process"
    ):
        run_isolated(killed, {"run_id": "r"}, worker)

    def failed(args: dict, info: NodeInfo) -> None:
        raise ValueError("a bug, not a loss")

    with pytest.raises(RuntimeError, match="failed:"):  # every worker would meet it: the run stops
        run_isolated(failed, {"run_id": "r"}, worker, survive_death=True)


# With the one-machine tests, as the killed ps below: the hosts' session is the longer of make test's two.
def test_a_killed_worker_is_named_and_the_run_finishes_with_the_workers_left(small_shards, tmp_path):
    run_dir = tmp_path / "run"
    training = StreamedProcess(_command(small_shards, run_dir))
    try:
        pid, executor, _ = _kill_mid_training(training, run_dir, "worker", 1)
        code = training.wait(timeout=600)
    finally:
        training.kill()
    output = training.output
    assert code == 0, output[-4000:]
    lost = (
        rf"tfbs cluster: TF node worker:1 \(Spark executor {executor}, host \S+, pid {pid}\) died: its process was killed by "
        r"SIGKILL; training goes on with the 1 worker left"
    )
    assert re.search(lost, output), output[-4000:]
    model_dir = _model_dir(run_dir)
    assert _checkpoint_step(model_dir) == STEPS
    history = json.loads((model_dir / "history.json").read_text())
    assert [h["step"] for h in history] == list(range(CHECKPOINT_EVERY, STEPS + 1, CHECKPOINT_EVERY))
    assert (model_dir / "export" / "saved_model.pb").exists()
    _assert_no_processes_left(run_dir)


def test_a_killed_ps_stops_the_run_fast_and_the_rerun_resumes(small_shards, tmp_path):
    run_dir = tmp_path / "run"
    output, seconds = _fail_fast(small_shards, run_dir, "ps", 0, PS_RUN_STEPS, PS_RUN_WORKERS)
    model_dir = _model_dir(run_dir)
    print(f"ps:0 killed: the command exited {seconds:.1f} s later")

    # Read once every process of the run is gone: the chief may still have
    # checkpointed while Spark was killing it, after the driver's hint.
    stopped_at = _checkpoint_step(model_dir)
    assert 0 < stopped_at < PS_RUN_STEPS
    hint = re.search(r"Run the same command again to resume from the checkpoint at step (\d+)", output)
    assert hint is not None and 0 < int(hint.group(1)) <= stopped_at, output[-4000:]
    history_before = json.loads((model_dir / "history.json").read_text())

    started = time.monotonic()
    rerun_command = _command(small_shards, run_dir, PS_RUN_STEPS, PS_RUN_WORKERS)
    rerun = subprocess.run(rerun_command, cwd=REPO, capture_output=True, text=True, timeout=900)
    print(f"resumed run: {time.monotonic() - started:.1f} s")
    assert rerun.returncode == 0, rerun.stderr[-4000:]
    assert f"resuming from the checkpoint at step {stopped_at} of {PS_RUN_STEPS}" in rerun.stderr
    # The chief itself restored the step counter (its executor log, not the driver's).
    chief_logs = "".join(
        p.read_text(errors="replace") for p in (run_dir / "spark-home" / "work").glob("app-*/*/stderr")
    )
    assert re.search(rf"resumed from \S+ckpt-{stopped_at} at step {stopped_at}\b", chief_logs)
    assert _checkpoint_step(model_dir) == PS_RUN_STEPS
    history = json.loads((model_dir / "history.json").read_text())
    assert [h["step"] for h in history] == list(range(CHECKPOINT_EVERY, PS_RUN_STEPS + 1, CHECKPOINT_EVERY))
    # Entries up to the checkpoint are carried over unchanged, not retrained:
    # a restart from step 0 would have measured new losses and rates.
    kept = [h for h in history_before if h["step"] <= stopped_at]
    assert history[: len(kept)] == kept
    assert (model_dir / "export" / "saved_model.pb").exists()
    _assert_no_processes_left(run_dir)
