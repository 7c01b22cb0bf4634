"""The Airflow DAG in ``airflow_dags/``, loaded and run by a real Airflow.

Airflow runs in subprocesses (its own ``AIRFLOW_HOME`` in a temporary folder,
a SQLite metadata database migrated there, example DAGs off), so its settings
and logging never leak into the rest of the test session:

- a DagBag over ``airflow_dags/`` has no import errors and loads no pipeline
  code; the DAG has the expected tasks, operators, order, schedule, params and
  retries, and builds the expected ``spark-submit`` commands for YARN with a
  packed environment;
- ``airflow dags test`` runs the whole DAG (wait for labels -> preprocess ->
  train -> evaluate -> predict, each stage a spark-submit on ``local[2]``) on
  the small generated data set of ``conftest.py``, and the run's outputs and
  task states are checked;
- the sensor waits while a label file is missing, succeeds once it appears,
  and fails the run when it never does;
- a training task that fails fails the DAG run at once: no retry, evaluation
  never starts;
- the same DAG runs across hosts (``hadoop/hosts.py``): Airflow and the
  drivers on a gateway host, every stage submitted to YARN, whose
  containers run on three other hosts; data and run on HDFS.
"""

from __future__ import annotations

import gzip
import importlib.metadata
import importlib.util
import json
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from airflow_runs import (
    AIRFLOW,
    BIN,
    CHANGES,
    DAG_ID,
    DAGS,
    REGIONS,
    SENSOR,
    STAGES,
    TASKS,
    connection,
    dags_test,
    json_tail,
    task_states,
)
from blake3 import blake3
from conftest import DEMO_CONFIG, PIPELINE_OVERRIDES, REPO
from hostnet import placement_hosts

from tfbs.config import DEFAULT_GPU_DISCOVERY_SCRIPT
from tfbs.launch import QUICK_JVM_OPTIONS

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module")
def small_data(tmp_path_factory) -> Path:
    """The end-to-end runs' data set, written by ``tfbs generate`` as a user would."""
    root = tmp_path_factory.mktemp("airflow-data")
    command = [str(BIN / "tfbs"), "generate", "--config", str(DEMO_CONFIG)]
    for override in [f"data.root={root}", f"run_dir={root / 'unused-run'}", *PIPELINE_OVERRIDES]:
        command += ["--set", override]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return root


def _small_run_conf(data: Path, run_dir: str, root: Path, *extra: str) -> dict:
    """Params of a run over the small data set, predict scoring ``REGIONS`` for CTCF in K562."""
    regions = root / "regions.bed"
    regions.write_text(REGIONS)
    return {
        "config": "conf/demo.yaml",
        "overrides": [f"run_dir={run_dir}", f"data.root={data}", *PIPELINE_OVERRIDES, *extra],
        "predict": {"regions": str(regions), "tf": "CTCF", "cell": "K562", "out": str(root / "F.CTCF.K562.tab.gz")},
    }


def _check_outputs(run: Path, submission: Path) -> None:
    """What preprocess, train, evaluate and predict wrote, in the local folder ``run``."""
    manifest = json.loads((run / "shards" / "manifest.json").read_text())
    assert manifest["tfs"] == ["CTCF", "FOXA1"]
    for tf_name, cells in manifest["counts"].items():
        assert cells, f"no cells counted for {tf_name}"
        for cell, counts in cells.items():
            kept = counts["kept"]
            assert kept["train"]["B"] > 0 and kept["train"]["U"] > 0, (tf_name, cell, kept)
            assert kept["test"]["B"] > 0 and kept["test"]["U"] > 0, (tf_name, cell, kept)

    latest = json.loads((run / "models" / "LATEST").read_text())
    assert (run / "models" / latest["version"] / "export" / "saved_model.pb").is_file()

    report = json.loads((run / "report" / "report.json").read_text())
    assert report["version"] == latest["version"]
    expected = {f"{tf_name}/{cell}" for tf_name, cells in manifest["counts"].items() for cell in cells}
    assert set(report["results"]) == expected
    for key, result in report["results"].items():
        tf_name, cell = key.split("/")
        kept = manifest["counts"][tf_name][cell]["kept"]["test"]
        assert (result["n_pos"], result["n_neg"]) == (kept["B"], kept["U"]), key
        for metric in ("auroc", "auprc", "recall_at_fdr_10", "recall_at_fdr_50"):
            assert 0.0 <= result[metric] <= 1.0, (key, metric)
        # A model that learned: above the motif scan of the TF's own motif, on every TF/cell.
        assert result["auprc"] > report["baselines"][key]["motif_scan"]["auprc"], (key, report["baselines"][key])
    assert report["below_motif_scan"] == []
    assert report["mean_auroc"] > 0.9
    assert (run / "report" / "curves.png").stat().st_size > 1000

    # The DREAM submission: one probability per region, in the regions' order.
    with gzip.open(submission, "rt") as handle:
        rows = [line.split("\t") for line in handle.read().splitlines()]
    assert [row[:3] for row in rows] == [line.split("\t") for line in REGIONS.splitlines()]
    assert all(0.0 <= float(row[3]) <= 1.0 for row in rows)


# --------------------------------------------------------------------------
# The DAG as the DAG processor sees it
# --------------------------------------------------------------------------

#: Loads the DagBag the way the DAG processor does and describes what it found,
#: including the spark-submit command of each stage for a YARN connection and a
#: packed environment (argv[3], argv[4]), built as the operator builds it.
_DESCRIBE = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from airflow.dag_processing.dagbag import DagBag
    from airflow.sdk.definitions.param import ParamsDict

    bag = DagBag(sys.argv[1])
    dag = bag.dags.get(sys.argv[2])
    pipeline_modules = sorted(
        name for name in sys.modules
        if name.split(".")[0] in ("tensorflow", "tensorflowonspark", "pyspark", "tfbs", "preprocess",
                                  "tf_models", "synthetic", "jobs")
    )
    found = {
        "import_errors": {str(k): str(v) for k, v in bag.import_errors.items()},
        "dag_ids": sorted(bag.dags),
        "pipeline_modules": pipeline_modules,
    }
    if dag is not None:
        found |= {
            "schedule": str(dag.schedule),
            "catchup": dag.catchup,
            "max_active_runs": dag.max_active_runs,
            "params": {k: dag.params[k] for k in dag.params},
            "tasks": {
                t.task_id: {
                    "type": type(t).__name__,
                    "upstream": sorted(t.upstream_task_ids),
                    "retries": t.retries,
                    "conn_id": getattr(t, "conn_id", None),
                    "mode": getattr(t, "mode", None),
                }
                for t in dag.tasks
            },
        }
        # Params the trigger form would refuse: a regions file without its TF and cell.
        try:
            ParamsDict(dag.params)["predict"] = {"regions": "r.bed", "tf": "", "cell": ""}
            found["predict_without_tf"] = "accepted"
        except Exception as err:
            found["predict_without_tf"] = type(err).__name__
        try:
            ParamsDict(dag.params)["predict"] = {"regions": "", "tf": "CTCF", "cell": ""}
            found["predict_tf_without_cell"] = "accepted"
        except Exception as err:
            found["predict_tf_without_cell"] = type(err).__name__

        module = sys.modules[type(dag.get_task("train")).__module__]
        deployment = module.Deployment(
            project_dir=Path(sys.argv[3]),
            bin_dir=Path(sys.argv[3]) / "env" / "bin",
            env_archive=sys.argv[4],
            spark_conf={"spark.executor.memory": "2g"},
            hadoop_conf_dir="/etc/hadoop/conf",
        )
        params = {k: dag.params[k] for k in dag.params}
        params |= {"num_ps": 2, "num_workers": 3, "predict": {"regions": "r.bed", "tf": "CTCF", "cell": "K562"}}
        commands = {}
        for stage in ("preprocess", "train", "evaluate", "predict"):
            hook, submission = dag.get_task(stage).hook(deployment, params)
            commands[stage] = {"argv": hook._build_spark_submit_command(submission.application), "env": submission.env}
        found["yarn_commands"] = commands
        # No regions file: every bin of the genome, for two TFs.
        params |= {"predict": {"regions": "", "tf": "CTCF,FOXA1", "cell": "K562"}}
        hook, submission = dag.get_task("predict").hook(deployment, params)
        found["genome_predict_argv"] = hook._build_spark_submit_command(submission.application)
        # The master as the tasks read it from the public connection, beside the hook's own reading.
        from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
        found["masters"] = {
            conn_id: [module.connection_master(conn_id), SparkSubmitHook(conn_id=conn_id)._connection["master"]]
            for conn_id in sys.argv[5:]
        }
    print(json.dumps(found))
    """
)


def test_the_spark_provider_left_pyspark_alone():
    """The provider's 6.x line would bring pyspark-client, which installs over pyspark's files."""
    provider = importlib.metadata.version("apache-airflow-providers-apache-spark")
    assert provider.startswith("5."), provider
    assert importlib.metadata.version("pyspark") == "4.3.0"
    with pytest.raises(importlib.metadata.PackageNotFoundError):
        importlib.metadata.version("pyspark-client")


#: Connections of every shape the provider's hook reads: the tasks must find the master it submits to.
_MASTERS = {
    "spark_default": connection("yarn", **{"deploy-mode": "client", "queue": "q"}),
    "local_two": connection("local[2]"),
    "standalone_url": connection("spark://node1:7077"),
    "standalone_port": json.dumps({"conn_type": "spark", "host": "spark://node1", "port": 7077}),
    "uri_form": "spark://node2:7078",
}


def test_dagbag_loads_the_dag_without_import_errors(airflow_env, tmp_path):
    env = {**airflow_env, **{f"AIRFLOW_CONN_{conn_id.upper()}": value for conn_id, value in _MASTERS.items()}}
    archive = "hdfs:///envs/tfbs-env.tar.gz"
    # A deployment's project: its interpreter (this one) reads the configuration's launch profile (tfbs.launch).
    python = tmp_path / "env" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    (tmp_path / "conf").mkdir()
    shutil.copy(DEMO_CONFIG, tmp_path / "conf" / "demo.yaml")
    done = subprocess.run(
        [sys.executable, "-c", _DESCRIBE, str(DAGS), DAG_ID, str(tmp_path), archive, *_MASTERS],
        env=env,
        cwd="/tmp",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-5000:]
    found = json_tail(done.stdout)

    assert found["import_errors"] == {}
    assert found["dag_ids"] == [DAG_ID]
    # The DAG submits jobs: parsing it loads no TensorFlow, Spark or pipeline code.
    assert found["pipeline_modules"] == []
    assert found["schedule"] == "@weekly"
    assert found["catchup"] is False
    assert found["max_active_runs"] == 1
    assert found["params"] == {
        "config": "conf/demo.yaml",
        "overrides": [],
        "labels": [],
        "labels_poke_interval": 600,
        "labels_timeout": 6 * 24 * 3600,
        "force": False,
        "num_ps": 1,
        "num_workers": 2,
        "predict": {"regions": "", "tf": "", "cell": "", "out": ""},
    }
    assert found["predict_without_tf"] == found["predict_tf_without_cell"] == "ParamValidationError"

    tasks = found["tasks"]
    assert sorted(tasks) == sorted(TASKS)
    # A chain: each task waits for the one before it, and only for it.
    for before, task in zip([None, *TASKS], TASKS):
        assert tasks[task]["upstream"] == ([before] if before else []), task
    assert tasks[SENSOR]["type"] == "LabelFilesSensor" and tasks[SENSOR]["mode"] == "reschedule"
    assert tasks[CHANGES]["type"] == "InputChangesOperator"
    for stage in STAGES:
        assert tasks[stage]["type"] == "StageSubmitOperator" and tasks[stage]["conn_id"] == "spark_default"
    # A failed distributed training run surfaces; the other tasks retry.
    assert tasks["train"]["retries"] == 0
    assert all(tasks[t]["retries"] > 0 for t in TASKS if t != "train")

    # The commands for YARN: the project's spark-submit, the packed environment
    # for executors, the driver on the project's python, one single-core
    # executor per TF node for training, the connection's queue and deploy mode.
    commands = found["yarn_commands"]
    for stage, command in commands.items():
        argv = command["argv"]
        assert argv[0] == str(tmp_path / "env" / "bin" / "spark-submit")
        pairs = list(zip(argv, argv[1:]))
        assert ("--master", "yarn") in pairs and ("--deploy-mode", "client") in pairs and ("--queue", "q") in pairs
        assert ("--archives", f"{archive}#environment") in pairs
        for setting in (
            "spark.pyspark.python=./environment/bin/python",
            f"spark.pyspark.driver.python={tmp_path / 'env' / 'bin' / 'python'}",
            "spark.executor.memory=2g",
            "spark.executorEnv.HADOOP_CONF_DIR=./__spark_conf__/__hadoop_conf__",
            # The configuration's launch profile on YARN (tfbs.launch): Spark's protection, demo's quick JVMs.
            "spark.authenticate=true",
            "spark.network.crypto.enabled=true",
            "spark.network.crypto.cipher=AES/GCM/NoPadding",
            "spark.io.encryption.enabled=true",
            f"spark.driver.extraJavaOptions={QUICK_JVM_OPTIONS}",
        ):
            assert ("--conf", setting) in pairs, (stage, setting)
        application = argv.index(str(tmp_path / "jobs" / f"{stage}.py"))
        assert argv[application + 1 : application + 3] == ["--config", str(tmp_path / "conf" / "demo.yaml")]
        assert command["env"] == {
            "PYSPARK_PYTHON": str(tmp_path / "env" / "bin" / "python"),
            "HADOOP_CONF_DIR": "/etc/hadoop/conf",
            "YARN_CONF_DIR": "/etc/hadoop/conf",
        }, stage
        # The training job sizes its own executors (one per TF node): no stage's command does.
        assert not {"--num-executors", "--executor-cores"} & set(argv), stage
        # The launch profile ships the GPU discovery script with every YARN submission (DEFAULT_GPU_DISCOVERY_SCRIPT).
        assert ("--files", DEFAULT_GPU_DISCOVERY_SCRIPT) in pairs, stage
    train = commands["train"]["argv"]
    assert train[-4:] == ["--set", "train.placement.num_ps=2", "--set", "train.placement.num_workers=3"]
    predict = commands["predict"]["argv"]
    assert predict[-6:] == ["--regions", "r.bed", "--tf", "CTCF", "--cell", "K562"]
    genome = found["genome_predict_argv"]
    assert "--regions" not in genome and genome[-4:] == ["--tf", "CTCF,FOXA1", "--cell", "K562"]
    masters = found["masters"]
    assert {conn_id: ours for conn_id, (ours, _) in masters.items()} == {
        "spark_default": "yarn",
        "local_two": "local[2]",
        "standalone_url": "spark://node1:7077",
        "standalone_port": "spark://node1:7077",
        "uri_form": "spark://node2:7078",
    }
    assert all(ours == the_hooks for ours, the_hooks in masters.values()), masters


# --------------------------------------------------------------------------
# Runs on local Spark
# --------------------------------------------------------------------------


def test_airflow_runs_the_pipeline_then_only_on_new_data(airflow_env, small_data, tmp_path):
    """Three weekly runs on one run directory: the first trains and evaluates
    a model version; the second, on the same files, ends at the change check
    and trains nothing; the third, after one label file changed, preprocesses
    again and trains a new version whose lineage names the new file's digest.
    The third run's evaluate and predict, checked in the first run, are marked
    done instead of run, so LATEST stays on the first version: only an
    evaluation that passes moves it (test_lineage.py)."""
    run, models, data = tmp_path / "run", tmp_path / "run" / "models", tmp_path / "data"
    shutil.copytree(small_data, data)  # its own copy: a label file changes below
    run_conf = _small_run_conf(data, str(run), tmp_path, "train.placement.strategy=local")
    started = time.monotonic()
    done = dags_test(airflow_env, "2026-01-05", run_conf, timeout=1200)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-8000:]
    print(f"local DAG run: {time.monotonic() - started:.0f} s")

    # Each stage was a spark-submit of its job file, with the project's spark-submit.
    for stage in STAGES:
        assert f"{BIN / 'spark-submit'} --master local[2]" in output and f"jobs/{stage}.py --config" in output, stage
    # The sensor found the configuration's label files; nothing had been evaluated before.
    assert "all 2 label files are there" in output
    assert "no model version has passed evaluation yet" in output
    _check_outputs(run, tmp_path / "F.CTCF.K562.tab.gz")
    # And Airflow recorded the run: every task instance a success.
    assert task_states(airflow_env, "2026-01-05") == {"dag_run": "success", **{task: "success" for task in TASKS}}
    first = json.loads((models / "LATEST").read_text())["version"]

    # The next week, the same files: the check says so and the rest is skipped.
    started = time.monotonic()
    done = dags_test(airflow_env, "2026-03-02", run_conf, timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-8000:]
    print(f"DAG run with nothing new: {time.monotonic() - started:.0f} s")
    assert f"nothing new since model version {first}" in output
    assert not any(f"jobs/{stage}.py --config" in output for stage in STAGES)
    assert task_states(airflow_env, "2026-03-02") == {
        "dag_run": "success",
        SENSOR: "success",
        **{task: "skipped" for task in [CHANGES, *STAGES]},
    }
    assert [p.name for p in models.iterdir() if p.is_dir()] == [first]

    # Then one label changes (a U bin of CTCF becomes B): a new version.
    labels = data / "labels" / "CTCF.train.labels.tsv.gz"
    lines = gzip.decompress(labels.read_bytes()).decode().splitlines(keepends=True)
    row = next(i for i, line in enumerate(lines[1:], 1) if line.rstrip("\n").endswith("\tU"))
    lines[row] = lines[row].rstrip("\n")[:-1] + "B\n"
    labels.write_bytes(gzip.compress("".join(lines).encode()))
    new_digest = blake3(labels.read_bytes()).hexdigest()
    done = dags_test(
        airflow_env, "2026-03-09", run_conf, "--mark-success-pattern", "^(evaluate|predict)$", timeout=1200
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-8000:]
    assert f"new since model version {first}: labels/CTCF" in output
    ran = [stage for stage in STAGES if f"jobs/{stage}.py --config" in output]
    assert ran == ["preprocess", "train"], ran
    assert task_states(airflow_env, "2026-03-09") == {"dag_run": "success", **{task: "success" for task in TASKS}}
    (new_version,) = [p.name for p in models.iterdir() if p.is_dir() and p.name != first]
    assert json.loads((models / "LATEST").read_text())["version"] == first
    lineage = json.loads((models / new_version / "lineage.json").read_text())
    assert lineage["input_fingerprint"]["inputs"]["labels/CTCF"]["digest"] == new_digest
    old_lineage = json.loads((models / first / "lineage.json").read_text())
    assert old_lineage["input_fingerprint"]["inputs"]["labels/CTCF"]["digest"] != new_digest


@pytest.mark.waits
def test_a_version_that_failed_its_floors_fails_every_scheduled_run(airflow_env, small_data, tmp_path):
    """A version of exactly these inputs below the floors: the change check fails the run with the reason,
    at once (no retry), and no stage starts; a skip would look like a healthy week. The run folder is
    built directly (a lineage and its floor failure), as in test_changes.py: no model is trained."""
    from preprocess.fingerprint import input_fingerprint
    from tf_models import MODEL_FORMAT
    from tf_models.model_format import recorded_model_code
    from tfbs import lineage
    from tfbs.config import load_config

    run_conf = _small_run_conf(small_data, str(tmp_path / "run"), tmp_path, "evaluate.min_mean_auprc=0.99")
    config = load_config(DEMO_CONFIG, run_conf["overrides"])
    manifest = {"fingerprint": input_fingerprint(config), "created_at": "2026-02-02T00:00:00Z"}
    failed = lineage.Lineage.of(config, manifest, MODEL_FORMAT, recorded_model_code())
    lineage.write_lineage(config.run_dir, failed)
    reason = "mean auPRC 0.410 is below evaluate.min_mean_auprc 0.99"
    floors = (config.evaluate.min_mean_auroc, config.evaluate.min_mean_auprc)
    lineage.write_floor_failure(config.run_dir, failed, floors, (0.9, 0.41), [reason])

    done = dags_test(airflow_env, "2026-02-02", run_conf, "--mark-success-pattern", SENSOR, timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode != 0, output[-6000:]
    assert f"model version {failed.version} failed its floors on these inputs and settings ({reason})" in output
    assert not any(f"jobs/{stage}.py --config" in output for stage in STAGES)
    assert task_states(airflow_env, "2026-02-02") == {
        "dag_run": "failed",
        SENSOR: "success",
        CHANGES: "failed",
        **{task: "upstream_failed" for task in STAGES},
    }


@pytest.mark.waits
def test_the_sensor_waits_for_the_labels_then_lets_the_run_go_on(airflow_env, tmp_path):
    """One label file appears only once the sensor has reported it missing;
    the stages are marked successful, not run. The sensor looks every second
    and lets the run go on once both files are there."""
    present, late = tmp_path / "CTCF.train.labels.tsv.gz", tmp_path / "labels" / "FOXA1.train.labels.tsv.gz"
    present.write_bytes(gzip.compress(b"chr\tstart\tstop\tK562\n"))
    run_conf = {"labels": [str(present), late.as_uri()], "labels_poke_interval": 1, "labels_timeout": 300}
    waiting = f"waiting for 1 of 2 label files: {late.as_uri()}"
    args = ["dags", "test", DAG_ID, "2026-01-19", "--conf", json.dumps(run_conf)]
    args += ["--mark-success-pattern", "|".join([CHANGES, *STAGES])]
    run = subprocess.Popen(
        [str(AIRFLOW), *args], env=airflow_env, cwd="/tmp", stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines: list[str] = []
    try:
        for line in run.stdout:
            lines.append(line)
            if waiting in line and not late.exists():
                late.parent.mkdir()
                late.write_bytes(gzip.compress(b"chr\tstart\tstop\tK562\n"))
        code = run.wait(timeout=300)
    finally:
        if run.poll() is None:
            run.kill()
    output = "".join(lines)
    assert code == 0, output[-6000:]
    assert late.exists(), f"the sensor never reported the missing file:\n{output[-6000:]}"
    assert "all 2 label files are there" in output
    assert task_states(airflow_env, "2026-01-19") == {"dag_run": "success", **{task: "success" for task in TASKS}}


@pytest.mark.waits
def test_the_sensor_fails_the_run_when_the_labels_never_come(airflow_env, tmp_path):
    run_conf = {"labels": [str(tmp_path / "never.train.labels.tsv.gz")], "labels_poke_interval": 1, "labels_timeout": 3}
    done = dags_test(airflow_env, "2026-01-26", run_conf, timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode != 0, output[-6000:]
    assert "Sensor has timed out" in output
    # A timed-out sensor is not retried; nothing downstream starts.
    assert task_states(airflow_env, "2026-01-26") == {
        "dag_run": "failed",
        SENSOR: "failed",
        **{task: "upstream_failed" for task in [CHANGES, *STAGES]},
    }


@pytest.mark.waits
def test_a_failed_training_fails_the_run_without_retry(airflow_env, tmp_path):
    """Training on a run directory without shards: the stage stops with its
    one-line error, the run fails at once (no retry, no 5-minute wait) and
    evaluation never starts. The sensor, the change check and preprocess
    are marked successful, not run."""
    run_conf = {"config": "conf/demo.yaml", "overrides": [f"run_dir={tmp_path / 'empty-run'}"]}
    done = dags_test(
        airflow_env, "2026-01-12", run_conf, "--mark-success-pattern", f"{SENSOR}|{CHANGES}|preprocess", timeout=600
    )
    output = done.stdout + done.stderr
    assert done.returncode != 0, output[-6000:]
    assert "DagRun failed" in output
    # The stage's own one-line error reaches the task log, through spark-submit's output.
    error_lines = [line for line in output.splitlines() if "error: " in line and "empty-run" in line]
    assert any("manifest" in line and "not found" in line for line in error_lines), output[-6000:]
    assert task_states(airflow_env, "2026-01-12") == {
        "dag_run": "failed",
        SENSOR: "success",
        CHANGES: "success",
        "preprocess": "success",
        "train": "failed",
        "evaluate": "upstream_failed",
        "predict": "upstream_failed",
    }


# --------------------------------------------------------------------------
# The same DAG across hosts: Airflow on the gateway, HDFS and YARN on the others
# --------------------------------------------------------------------------


@pytest.mark.cluster
def test_airflow_runs_the_pipeline_on_yarn(dag_on_yarn, hadoop, tmp_path):
    """spark_default is ``yarn`` (client mode); data and run live on HDFS; the hosts are separate.

    Deployed as on a cluster: Airflow and the drivers on the gateway,
    executors in the packed environment of ``make dist``
    (``tfbs_env_archive``) with Spark's jars from its zip
    (``spark.yarn.archive``), both on HDFS (``airflow_runs.run_dag_on_yarn``;
    test_yarn.py checks the containers of the same run).
    """
    from tfbs.storage import download_tree

    run = dag_on_yarn
    assert run.returncode == 0, run.output[-10000:]
    for stage in STAGES:
        assert "--master yarn --conf" in run.output and f"jobs/{stage}.py --config" in run.output, stage
    assert "all 2 label files are there" in run.output
    # The TF nodes on three hosts or more: the ps serves a worker on another host (gRPC across hosts).
    placed = placement_hosts(run.output)
    assert sorted(placed) == ["chief:0", "ps:0", "worker:0", "worker:1"], run.output[-6000:]
    assert len(set(placed.values())) >= 3 and set(placed.values()) <= set(hadoop.nodes), placed
    assert {placed["worker:0"], placed["worker:1"]} - {placed["ps:0"]}, placed

    local_run = tmp_path / "run"
    download_tree(hadoop.by_address(run.run_uri), local_run)
    version = json.loads((local_run / "models" / "LATEST").read_text())["version"]
    # With no ``out``, the submission goes with the model version that made it.
    _check_outputs(local_run, local_run / "models" / version / "report" / "F.CTCF.K562.tab.gz")
    assert run.states == {"dag_run": "success", **{task: "success" for task in TASKS}}
