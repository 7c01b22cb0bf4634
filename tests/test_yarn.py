"""Every stage on YARN (Hadoop's mini cluster), as a cluster operator runs it.

``make dist`` packs the environment and Spark's jars once; both go to HDFS,
readable by all, so YARN localises them once per node and caches them across
applications. Each stage is then ``scripts/submit_yarn.sh <stage>``, with the
data and the run directory on HDFS: preprocess, training with 1 ps + 2 workers
(and the chief) in YARN containers, evaluate and predict. A killed container
fails training fast, naming the node, and each container's log is served by
the NodeManager as ``yarn logs`` and its web UI serve it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

import pytest
from conftest import REPO, SMALL_OVERRIDES, StreamedProcess
from minicluster import application_of

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


def _submit(env: dict[str, str], stage: str, submit_options: list[str], overrides: list[str], *stage_args: str):
    started = time.monotonic()
    done = subprocess.run(
        _command(stage, submit_options, overrides, *stage_args),
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    print(f"{stage} on YARN: {time.monotonic() - started:.0f} s")
    return done


@pytest.fixture(scope="module")
def pipeline_on_yarn(hadoop, hdfs_dataset, yarn_env):
    """preprocess -> train -> evaluate -> predict, each submitted to YARN."""
    run_dir = f"{hadoop.fs_default_fs}/yarn/run"
    overrides = [f"data.root={hdfs_dataset}", f"run_dir={run_dir}"]
    regions = f"{hadoop.fs_default_fs}/yarn/regions.bed"
    storage.write_text(regions, "chr8\t10000\t10200\nchr21\t5000\t5200\n")
    runs = {
        "preprocess": _submit(yarn_env, "preprocess", ["--num-executors", "2"], overrides),
        "train": _submit(yarn_env, "train", TRAIN_EXECUTORS, [*overrides, *TRAIN_SETTINGS]),
        "evaluate": _submit(yarn_env, "evaluate", ["--num-executors", "2"], overrides),
    }
    runs["predict"] = _submit(
        yarn_env, "predict", ["--num-executors", "1"], overrides, "--regions", regions, "--tf", "CTCF", "--cell", "K562"
    )
    return run_dir, runs


@pytest.mark.parametrize("stage", ["preprocess", "train", "evaluate", "predict"])
def test_each_stage_runs_on_yarn_in_the_packed_environment(pipeline_on_yarn, stage):
    _, runs = pipeline_on_yarn
    done = runs[stage]
    assert done.returncode == 0, done.stderr[-5000:]
    # YARN ran it, in executors that unpacked the archive.
    assert APPLICATION.search(done.stderr), done.stderr[-3000:]


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


def test_training_ran_ps_workers_and_chief_in_yarn_containers(pipeline_on_yarn, hadoop):
    run_dir, runs = pipeline_on_yarn
    # On YARN a node names its container (CONTAINER_ID), as `yarn logs -containerId` does.
    containers = _node_containers(runs["train"].stdout + runs["train"].stderr)
    assert len(set(containers.values())) == 4
    (app_id,) = {application_of(container) for container in containers.values()}
    assert set(containers.values()) < set(hadoop.container_logs(app_id))  # and the application master's
    for container in containers.values():
        launch = _served_log(hadoop, container, "launch_container.sh")
        # The packed environment, from the NodeManager's public cache (shared by every application).
        assert re.search(r'/filecache/\d+/tfbs-env\.tar\.gz" "environment"', launch), launch[-2000:]

    version = json.loads(storage.read_text(f"{run_dir}/models/LATEST"))["version"]
    metadata = json.loads(storage.read_text(f"{run_dir}/models/{version}/export/tfbs_metadata.json"))
    assert metadata["strategy"] == "parameter_server"
    report = json.loads(storage.read_text(f"{run_dir}/report/report.json"))
    assert len(report["results"]) == 6 and report["version"] == version
    # The submission goes with the model version that made it.
    submission_uri = f"{run_dir}/models/{version}/report/F.CTCF.K562.tab.gz"
    with storage.open_input(submission_uri) as gzipped:  # decompressed by its name
        submission = gzipped.read().decode()
    assert [line.split("\t")[:2] for line in submission.splitlines()] == [["chr8", "10000"], ["chr21", "5000"]]


def test_each_nodes_log_is_served_by_the_node_manager(pipeline_on_yarn, hadoop):
    """The container a node's error names holds that node's log, served over
    HTTP as ``yarn logs -containerId`` and the ResourceManager UI's links do."""
    _, runs = pipeline_on_yarn
    containers = _node_containers(runs["train"].stdout + runs["train"].stderr)
    for node, container in containers.items():
        served = _served_log(hadoop, container, "stderr")
        job, task = node.split(":")
        assert f"Container: {container}" in served
        assert f'"task": {{"type": "{job}", "index": {task}}}' in served, (node, served[-2000:])


def test_a_killed_container_fails_training_fast_naming_the_node(hadoop, hdfs_dataset, yarn_env, pipeline_on_yarn):
    run_dir = f"{hadoop.fs_default_fs}/yarn/killed"
    overrides = [
        f"data.root={hdfs_dataset}",
        f"run_dir={run_dir}",
        f"shards_dir={pipeline_on_yarn[0]}/shards",
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
