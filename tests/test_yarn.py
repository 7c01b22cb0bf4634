"""Every stage on YARN (Hadoop's mini cluster), as a cluster operator runs it.

``make dist`` packs the environment and Spark's jars once; both go to HDFS,
readable by all, so YARN localises them once per node and caches them across
applications. The pipeline runs once on YARN, as the scheduled DAG runs it
(``dag_on_yarn``, shared with test_airflow_dag.py): preprocess, training with
1 ps + 2 workers (and the chief) in YARN containers, evaluate and predict,
each an application of its own, data and run directory on HDFS. Each
container's log is served by the NodeManager as ``yarn logs`` and its web UI
serve it. Then ``scripts/submit_yarn.sh train``, as an operator submits a
stage by hand, is killed in one container: it fails fast, naming the node.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
import urllib.request

import pytest
from airflow_runs import STAGES
from conftest import REPO, SMALL_OVERRIDES, StreamedProcess
from containers import application_of

from tfbs import storage

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.slow]

SUBMIT = REPO / "scripts" / "submit_yarn.sh"
#: The demo's configuration, as the stages read it (relative to the checkout).
CONFIG = "conf/demo.yaml"
#: One single-core executor per TensorFlow node: 1 ps, 2 workers, the chief.
TRAIN_EXECUTORS = ["--num-executors", "4", "--executor-cores", "1", "--executor-memory", "768m"]
TRAIN_SETTINGS = ["train.strategy=parameter_server", "train.num_ps=1", "train.num_workers=2"]
#: From the kill to the command's exit, as on local-cluster.
FAIL_WITHIN_S = 120
NODE_PROCESS = r"tfbs node process: job={job} task={task} spark_executor=(\S+) host=\S+ pid=(\d+)"
APPLICATION = re.compile(r"application_\d+_\d+")


@pytest.fixture(scope="module")
def yarn_env(hadoop, yarn_archives) -> dict[str, str]:
    """The environment of ``submit_yarn.sh``: the cluster and the archives on HDFS."""
    return {
        **os.environ,
        **hadoop.env(),
        "TFBS_ENV_ARCHIVE": yarn_archives["env"],
        "TFBS_SPARK_ARCHIVE": yarn_archives["spark"],
        "TFBS_PYTHON": sys.executable,
    }


def _command(stage: str, submit_options: list[str], overrides: list[str], *stage_args: str) -> list[str]:
    # No Spark UI: attaching its handlers races with YARN adding its proxy
    # filter (a ConcurrentModificationException in Jetty, once in about a dozen applications here).
    command = ["bash", str(SUBMIT), stage, *submit_options, "--conf", "spark.ui.enabled=false"]
    command += ["--", "--config", CONFIG]
    for override in [*SMALL_OVERRIDES, *overrides]:
        command += ["--set", override]
    return [*command, *stage_args]


def _stage_outputs(output: str) -> dict[str, str]:
    """The DAG run's output cut at each stage's spark-submit command: stage -> its part."""
    starts = sorted((output.index(f"jobs/{stage}.py --config"), stage) for stage in STAGES)
    ends = [start for start, _ in starts[1:]] + [len(output)]
    return {stage: output[start:end] for (start, stage), end in zip(starts, ends)}


@pytest.mark.parametrize("stage", STAGES)
def test_each_stage_runs_on_yarn_in_the_packed_environment(dag_on_yarn, stage):
    assert dag_on_yarn.returncode == 0, dag_on_yarn.output[-5000:]
    # YARN ran it, an application of its own, in executors that unpacked the archive.
    applications = {stage: set(APPLICATION.findall(part)) for stage, part in _stage_outputs(dag_on_yarn.output).items()}
    assert applications[stage], _stage_outputs(dag_on_yarn.output)[stage][-3000:]
    others = set().union(*(found for other, found in applications.items() if other != stage))
    assert not applications[stage] & others


def _node_containers(output: str) -> dict[str, str]:
    """The container of each TF node (``ps:0`` ...), from the driver's node lines."""
    found = {}
    for job, task in [("ps", 0), ("chief", 0), ("worker", 0), ("worker", 1)]:
        node = re.search(NODE_PROCESS.format(job=job, task=task), output)
        assert node, f"no process line for {job}:{task}:\n{output[-4000:]}"
        found[f"{job}:{task}"] = node.group(1)
    return found


def _served_log(hadoop, container: str, name: str) -> str:
    """A container's log file as the NodeManager serves it (what ``yarn logs`` fetches)."""
    url = f"{hadoop.nm_url}/ws/v1/node/containerlogs/{container}/{name}"
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read().decode(errors="replace")


def test_training_ran_ps_workers_and_chief_in_yarn_containers(dag_on_yarn, hadoop):
    run_dir = dag_on_yarn.run_uri
    # On YARN a node names its container (CONTAINER_ID), as `yarn logs -containerId` does.
    containers = _node_containers(_stage_outputs(dag_on_yarn.output)["train"])
    assert len(set(containers.values())) == 4
    (app_id,) = {application_of(container) for container in containers.values()}
    assert set(containers.values()) < set(hadoop.container_logs(app_id))  # and the application master's
    for container in containers.values():
        launch = _served_log(hadoop, container, "launch_container.sh")
        # The packed environment, from the NodeManager's public cache (shared by every application).
        assert re.search(r'/filecache/\d+/tfbs-env\.tar\.gz" "environment"', launch), launch[-2000:]
        # Spark authenticates and encrypts (the DAG's YARN_NETWORK_CONF); the
        # secret travels in YARN's credentials, never on a command line.
        assert "-Dspark.authenticate=true" in launch and "-Dspark.network.crypto.enabled=true" in launch
        assert "authenticate.secret" not in launch and "_SPARK_AUTH_SECRET" not in launch
        # The GPU discovery script, shipped with training, in the container's working directory.
        assert '"get_gpus_resources.sh"' in launch, launch[-2000:]

    version = json.loads(storage.read_text(f"{run_dir}/models/LATEST"))["version"]
    metadata = json.loads(storage.read_text(f"{run_dir}/models/{version}/export/tfbs_metadata.json"))
    assert metadata["strategy"] == "parameter_server"
    report = json.loads(storage.read_text(f"{run_dir}/report/report.json"))
    assert len(report["results"]) == 6 and report["version"] == version


def test_each_nodes_log_is_served_by_the_node_manager(dag_on_yarn, hadoop):
    """The container a node's error names holds that node's log, served over
    HTTP as ``yarn logs -containerId`` and the ResourceManager UI's links do."""
    containers = _node_containers(_stage_outputs(dag_on_yarn.output)["train"])
    for node, container in containers.items():
        served = _served_log(hadoop, container, "stderr")
        job, task = node.split(":")
        assert f"Container: {container}" in served
        assert f'"task": {{"type": "{job}", "index": {task}}}' in served, (node, served[-2000:])


def test_a_killed_container_fails_training_fast_naming_the_node(hadoop, hdfs_dataset, yarn_env, dag_on_yarn):
    run_dir = f"{hadoop.fs_default_fs}/yarn/killed"
    overrides = [
        f"data.root={hdfs_dataset}",
        f"run_dir={run_dir}",
        f"shards_dir={dag_on_yarn.run_uri}/shards",
        *TRAIN_SETTINGS,
        "train.steps=3000",
        "train.early_stopping_patience=null",
    ]
    training = StreamedProcess(_command("train", TRAIN_EXECUTORS, overrides), yarn_env)
    try:
        deadline = time.monotonic() + 600
        node = None
        while time.monotonic() < deadline and training.proc.poll() is None:
            node = re.search(NODE_PROCESS.format(job="worker", task=1), training.output)
            if node and re.search(r"chief: step \d+/", training.output):
                break
            time.sleep(0.5)
        assert node and training.proc.poll() is None, training.output[-4000:]
        # On YARN a node names its container (CONTAINER_ID), as `yarn logs -containerId` does.
        container = node.group(1)
        # The executor's JVM, as a lost node or YARN's memory check ends it.
        (jvm,) = [
            process
            for process in hadoop.container_processes(application_of(container))
            if process.container_id == container and "--executor-id" in process.argv
        ]
        os.kill(jvm.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        code = training.wait(timeout=FAIL_WITHIN_S + 60)
        seconds = time.monotonic() - killed_at
    finally:
        training.kill()
    output = training.output
    assert code != 0, output[-4000:]
    assert seconds < FAIL_WITHIN_S, f"exit {seconds:.0f} s after the kill"
    assert re.search(r"ClusterFailed: TF node worker:1 \(Spark executor \S+, host \S+", output), output[-4000:]
    # No container of the application is left running.
    time.sleep(5)
    assert not hadoop.container_processes(application_of(container))
