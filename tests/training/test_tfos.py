"""TensorFlowOnSpark end to end: ``tfbs train`` on a real ``local-cluster``
(one JVM per executor), through the same command line users run, and the
three strategies learning equally well from the same shards and examples.
The runs are ``netwatch.py``'s :func:`strategy_runs`, watched: what the
cluster runs listened on and wrote is checked here for all-reduce and in
``test_network_security.py`` for ps."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from netwatch import assert_no_secret_written, assert_nothing_beyond_loopback

from tfbs.launch import USE_OPTION

# TensorFlowOnSpark clusters on local-cluster Spark: minutes each.
pytestmark = [pytest.mark.spark, pytest.mark.cluster, pytest.mark.slow]

PLACEMENT = re.compile(r"tfbs placement: job=(\w+) task=(\d+) spark_executor=(\S+)")


def _model_dir(run_dir: Path) -> Path:
    """The run's one model version folder, ``<run_dir>/models/<version>`` (tfbs.lineage)."""
    (lineage,) = (run_dir / "models").glob("*/lineage.json")
    return lineage.parent


def _check_training(run_dir, output: str, strategy: str, roles: set[tuple[str, str]]) -> None:
    """One executor per node, an evaluation after each of the four epochs, an export made by ``strategy``."""
    placements = PLACEMENT.findall(output)
    assert {(job, task) for job, task, _ in placements} == roles
    executors = [executor for _, _, executor in placements]
    assert "None" not in executors and len(set(executors)) == len(roles)  # one executor each
    model_dir = _model_dir(run_dir)
    history = json.loads((model_dir / "history.json").read_text())
    steps = [h["step"] for h in history]
    assert len(steps) == 4 and steps == sorted(set(steps)) and steps[0] > 0, steps
    assert (model_dir / "export" / "saved_model.pb").exists()
    assert json.loads((model_dir / "export" / "tfbs_metadata.json").read_text())["strategy"] == strategy


def test_parameter_server_training_on_local_cluster(tfos_training):
    """The shared watched run (netwatch.py); test_network_security checks what it exposed."""
    run_dir, run = tfos_training
    assert run.returncode == 0, run.output[-4000:]
    _check_training(
        run_dir, run.output, "parameter_server", {("chief", "0"), ("ps", "0"), ("worker", "0"), ("worker", "1")}
    )
    # train.placement.node_cpus pinned each worker to its core once its TF server was up (the node's own log line).
    executor_logs = "".join(path.read_text(errors="replace") for path in run_dir.rglob("stderr"))
    assert "worker:0 pinned to CPUs 0" in executor_logs and "worker:1 pinned to CPUs 1" in executor_logs
    # ... and the chief sized the pool the workers run each step's ops in to their one core.
    assert "the ps and workers run each step's ops on 1 thread(s)" in executor_logs
    _check_executors_map_the_class_archive(run_dir)


def _check_executors_map_the_class_archive(run_dir: Path) -> None:
    """Each executor JVM was started on the driver's class archive, which its class path lets it map.

    A JVM that cannot map an archive quietly starts without it; ``-Xshare:on``
    on the executor's own ``java`` and class path refuses to start instead.
    """
    commands = []
    for log in run_dir.rglob("stderr"):
        first = log.read_text(errors="replace").partition("\n")[0]
        if first.startswith("Spark Executor Command: "):
            commands.append(shlex.split(first.removeprefix("Spark Executor Command: ")))
    assert len(commands) == 4, commands
    for command in commands:
        (archive,) = [option for option in command if option.startswith(USE_OPTION)]
        java, classpath = command[0], command[command.index("-cp") + 1]
        checked = subprocess.run(
            [java, "-Xshare:on", archive, "-cp", classpath, "-version"], capture_output=True, text=True
        )
        assert checked.returncode == 0 and "sharing" in checked.stderr, (archive, checked.stderr)


def test_all_reduce_training_on_local_cluster(strategy_runs):
    """MultiWorkerMirroredStrategy, watched like the ps run: 3 TF ports beyond loopback, no secret written."""
    run_dir, run = strategy_runs["multi_worker_mirrored"]
    assert run.returncode == 0, run.output[-4000:]
    _check_training(run_dir, run.output, "multi_worker_mirrored", {("chief", "0"), ("worker", "0"), ("worker", "1")})
    assert_nothing_beyond_loopback(run, num_nodes=3)
    assert_no_secret_written(run, [run_dir], num_nodes=3)


@pytest.fixture(scope="module")
def validation_by_strategy(strategy_runs) -> dict[str, list[float]]:
    """Validation auPRC after each epoch, per strategy, on the same shards and examples."""
    curves = {}
    for strategy, (run_dir, run) in strategy_runs.items():
        assert run.returncode == 0, run.output[-4000:]
        history = json.loads((_model_dir(run_dir) / "history.json").read_text())
        curves[strategy] = [h["valid_auprc"] for h in history]
    return curves


def test_strategies_learn_alike_at_equal_examples(validation_by_strategy):
    """ps/workers and all-reduce do no worse than one process, by 0.02 auPRC at most.

    Before the record files were dealt at random, each ps worker read its own
    mix of TFs among positives and among negatives and learnt its own TF
    prior; the ps model then trailed one process by 0.2-0.4 auPRC on the demo.
    That is the failure this guards against. After 4 epochs no run has
    converged, and runs differ by their data order: one CI run had ps ahead
    of one process by 0.027 (0.936 against 0.909), so a lead is bounded
    only loosely.
    """
    local = validation_by_strategy["local"]
    assert len(local) == 4 and local[-1] > 0.7, local  # the task is learnt at all
    for strategy in ("parameter_server", "multi_worker_mirrored"):
        curve = validation_by_strategy[strategy]
        assert len(curve) == 4
        assert curve[-1] >= local[-1] - 0.02, (strategy, curve, local)
        assert curve[-1] <= local[-1] + 0.05, (strategy, curve, local)
