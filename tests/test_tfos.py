"""TensorFlowOnSpark end to end: ``tfbs train`` on a real ``local-cluster``
(one JVM per executor), through the same command line users run."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from conftest import DEMO_CONFIG, REPO, SMALL_OVERRIDES
from tfbs.uri import local_path

PLACEMENT = re.compile(r"tfbs placement: job=(\w+) task=(\d+) spark_executor=(\S+)")


def _train(small_shards, run_dir, *extra: str) -> subprocess.CompletedProcess:
    config, _ = small_shards
    overrides = [
        *SMALL_OVERRIDES,
        f"run_dir={run_dir}",
        f"data.root={local_path(config.data.root)}",
        f"shards_dir={config.shards_uri}",
        *extra,
    ]
    command = [sys.executable, "-m", "jobs.train", "--config", str(DEMO_CONFIG)]
    for override in overrides:
        command += ["--set", override]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=1200)


@pytest.mark.parametrize(
    "strategy, roles",
    [
        ("parameter_server", {("chief", "0"), ("ps", "0"), ("worker", "0"), ("worker", "1")}),
        ("multi_worker_mirrored", {("chief", "0"), ("worker", "0"), ("worker", "1")}),
    ],
)
def test_training_on_local_cluster(small_shards, tmp_path, strategy, roles):
    n_nodes = len(roles)
    run = _train(
        small_shards,
        tmp_path / "run",
        f"train.strategy={strategy}",
        f"train.master=local-cluster[{n_nodes},1,1024]",
    )
    assert run.returncode == 0, run.stderr[-4000:]
    placements = PLACEMENT.findall(run.stderr)
    assert {(job, task) for job, task, _ in placements} == roles
    executors = [executor for _, _, executor in placements]
    assert "None" not in executors and len(set(executors)) == n_nodes  # one executor each
    model_dir = tmp_path / "run" / "model"
    history = json.loads((model_dir / "history.json").read_text())
    assert [h["step"] for h in history] == [30, 60]
    assert (model_dir / "export" / "saved_model.pb").exists()
    assert json.loads((model_dir / "export" / "tfbs_metadata.json").read_text())["strategy"] == strategy
