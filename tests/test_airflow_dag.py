"""The Airflow DAG in ``dags/``, loaded and run by a real Airflow.

Airflow runs in subprocesses (its own ``AIRFLOW_HOME`` in a temporary folder,
a SQLite metadata database migrated there, example DAGs off), so its settings
and logging never leak into the rest of the test session:

- a DagBag over ``dags/`` has no import errors, and the DAG has the expected
  tasks, order, schedule and retries;
- ``airflow dags test`` runs the whole DAG (generate -> preprocess -> train on
  a TensorFlowOnSpark local-cluster -> evaluate) on the small configuration
  of ``conftest.py``, and the run's outputs and task states are checked;
- a training task that fails fails the DAG run at once: no retry, evaluation
  never starts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import REPO, SMALL_OVERRIDES, small_config
from tfbs.uri import local_path

DAGS = REPO / "dags"
DAG_ID = "tfbs_pipeline"
STAGES = ["generate", "preprocess", "train", "evaluate"]
#: The ``airflow`` command of the interpreter running the tests.
AIRFLOW = Path(sys.executable).parent / "airflow"


@pytest.fixture(scope="module")
def airflow_env(tmp_path_factory) -> dict[str, str]:
    """Environment of an Airflow installation in a temporary folder, its DB migrated."""
    home = tmp_path_factory.mktemp("airflow-home")
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        # The DAG's deployment Variable, as a deployment sets it: the tfbs
        # command of this interpreter's environment. tfbs_project_dir keeps
        # its default, the folder above dags/.
        "AIRFLOW_VAR_TFBS_BIN_DIR": str(Path(sys.executable).parent),
    }
    env.pop("AIRFLOW_VAR_TFBS_PROJECT_DIR", None)
    _airflow(env, "db", "migrate")
    return env


def _airflow(env: dict[str, str], *args: str, timeout: float = 120, check: bool = True):
    """Run ``airflow ARGS`` (from /tmp, so nothing depends on the test's cwd).

    Returns stdout; with ``check=False`` the completed process instead.
    """
    done = subprocess.run([str(AIRFLOW), *args], env=env, cwd="/tmp", capture_output=True, text=True, timeout=timeout)
    if not check:
        return done
    assert done.returncode == 0, (
        f"airflow {' '.join(args)} exited {done.returncode}\n{done.stdout[-6000:]}\n{done.stderr[-6000:]}"
    )
    return done.stdout


def _task_states(env: dict[str, str], logical_date: str) -> dict[str, str]:
    """The state of each task instance of the DAG run at ``logical_date``, as Airflow recorded it."""
    runs = _json_tail(_airflow(env, "dags", "list-runs", DAG_ID, "-o", "json"))
    (run,) = [r for r in runs if r["logical_date"].startswith(logical_date)]
    states = _json_tail(_airflow(env, "tasks", "states-for-dag-run", DAG_ID, run["run_id"], "-o", "json"))
    return {"dag_run": run["state"], **{s["task_id"]: s["state"] for s in states}}


def _json_tail(stdout: str):
    """The JSON document an ``-o json`` command prints after any log lines."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(("[", "{")):
            return json.loads(line)
    raise AssertionError(f"no JSON in:\n{stdout[-3000:]}")


#: Loads the DagBag the way the DAG processor does and describes what it found.
_DESCRIBE = textwrap.dedent(
    """
    import json, sys
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(sys.argv[1])
    dag = bag.dags.get(sys.argv[2])
    print(json.dumps({
        "import_errors": {str(k): str(v) for k, v in bag.import_errors.items()},
        "dag_ids": sorted(bag.dags),
        "schedule": None if dag is None else str(dag.schedule),
        "catchup": None if dag is None else dag.catchup,
        "max_active_runs": None if dag is None else dag.max_active_runs,
        "params": None if dag is None else {k: dag.params[k] for k in dag.params},
        "tasks": None if dag is None else {
            t.task_id: {
                "type": type(t).__name__,
                "upstream": sorted(t.upstream_task_ids),
                "retries": t.retries,
                "bash_command": t.bash_command,
            }
            for t in dag.tasks
        },
    }))
    """
)


def test_dagbag_loads_the_dag_without_import_errors(airflow_env):
    done = subprocess.run(
        [sys.executable, "-c", _DESCRIBE, str(DAGS), DAG_ID],
        env=airflow_env, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr[-5000:]
    found = _json_tail(done.stdout)

    assert found["import_errors"] == {}
    assert found["dag_ids"] == [DAG_ID]
    assert found["schedule"] == "@weekly"
    assert found["catchup"] is False
    assert found["max_active_runs"] == 1
    assert found["params"] == {"config": "conf/demo.yaml", "overrides": []}

    tasks = found["tasks"]
    assert sorted(tasks) == sorted(STAGES)
    # A chain: each stage waits for the one before it, and only for it.
    for before, stage in zip([None, *STAGES], STAGES):
        assert tasks[stage]["upstream"] == ([before] if before else []), stage
    assert {t["type"] for t in tasks.values()} == {"BashOperator"}
    for stage in STAGES:
        assert f"/tfbs {stage} --config " in tasks[stage]["bash_command"]
    # A failed distributed training run surfaces; the other stages retry.
    assert tasks["train"]["retries"] == 0
    assert all(tasks[s]["retries"] > 0 for s in STAGES if s != "train")


def test_airflow_runs_the_pipeline_on_the_small_configuration(airflow_env, tmp_path):
    config = small_config(tmp_path)  # the same overrides, checked by the configuration loader
    run_conf = {
        "config": "conf/demo.yaml",
        "overrides": [f"run_dir={tmp_path / 'run'}", f"data.root={tmp_path / 'data'}", *SMALL_OVERRIDES],
    }
    _airflow(airflow_env, "dags", "test", DAG_ID, "2026-01-05", "--conf", json.dumps(run_conf), timeout=1800)

    # Every stage wrote what it is for, where the run's overrides said.
    for tf_name in ("CTCF", "FOXA1"):
        assert Path(local_path(config.data.labels_uri(tf_name))).stat().st_size > 0, tf_name

    manifest = json.loads(Path(local_path(config.shards_uri), "manifest.json").read_text())
    assert manifest["tfs"] == ["CTCF", "FOXA1"]
    for tf_name, cells in manifest["counts"].items():
        assert cells, f"no cells counted for {tf_name}"
        for cell, counts in cells.items():
            kept = counts["kept"]
            assert kept["train"]["B"] > 0 and kept["train"]["U"] > 0, (tf_name, cell, kept)
            assert kept["test"]["B"] > 0 and kept["test"]["U"] > 0, (tf_name, cell, kept)

    assert Path(local_path(config.model_uri), "export", "saved_model.pb").is_file()

    report_dir = Path(local_path(config.report_uri))
    report = json.loads((report_dir / "report.json").read_text())
    expected = {f"{tf_name}/{cell}" for tf_name, cells in manifest["counts"].items() for cell in cells}
    assert set(report["results"]) == expected
    for key, result in report["results"].items():
        tf_name, cell = key.split("/")
        kept = manifest["counts"][tf_name][cell]["kept"]["test"]
        assert (result["n_pos"], result["n_neg"]) == (kept["B"], kept["U"]), key
        for metric in ("auroc", "auprc", "recall_at_fdr_10", "recall_at_fdr_50"):
            assert 0.0 <= result[metric] <= 1.0, (key, metric)
    assert 0.0 <= report["mean_auroc"] <= 1.0 and 0.0 <= report["mean_auprc"] <= 1.0
    assert (report_dir / "curves.png").stat().st_size > 1000

    # And Airflow recorded the run: every task instance a success.
    assert _task_states(airflow_env, "2026-01-05") == {"dag_run": "success", **{stage: "success" for stage in STAGES}}


def test_a_failed_training_fails_the_run_without_retry(airflow_env, tmp_path):
    """Training on a run directory without shards: the stage stops with its
    one-line error, the run fails at once (no retry, no 5-minute wait) and
    evaluation never starts. generate and preprocess are marked successful,
    not run."""
    run_conf = {"config": "conf/demo.yaml", "overrides": [f"run_dir={tmp_path / 'empty-run'}"]}
    done = _airflow(
        airflow_env, "dags", "test", DAG_ID, "2026-01-12", "--conf", json.dumps(run_conf),
        "--mark-success-pattern", "generate|preprocess", timeout=600, check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode != 0, output[-6000:]
    assert "DagRun failed" in output
    # The stage's own one-line error reaches the task log.
    error_lines = [line for line in output.splitlines() if "error: " in line and "empty-run" in line]
    assert any("manifest" in line and "not found" in line for line in error_lines), output[-6000:]
    assert _task_states(airflow_env, "2026-01-12") == {
        "dag_run": "failed",
        "generate": "success",
        "preprocess": "success",
        "train": "failed",
        "evaluate": "upstream_failed",
    }
