"""Every stage on YARN across hosts, as a cluster operator runs it.

``make dist`` packs the environment and Spark's jars once; both go to HDFS,
readable by all, so YARN localises them once per node and caches them across
applications. The pipeline runs once on YARN, as the scheduled DAG runs it
from the gateway host (``dag_on_yarn``, shared with test_airflow_dag.py):
preprocess, training with 1 ps + 2 workers (and the chief) in YARN
containers on three hosts, evaluate and predict, each an application of its
own, data and run directory on HDFS. Each container's log is served by its
host's NodeManager, as ``yarn logs`` and its web UI serve it. The loss of a
host during a run is test_host_failures.py's.
"""

from __future__ import annotations

import json
import os
import re
import stat
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from airflow_runs import STAGES
from conftest import TENANT, TOKEN_RENEW_S
from containers import application_of

from tfbs import storage

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.slow]

NODE_PROCESS = r"tfbs node process: job={job} task={task} spark_executor=(\S+) host=\S+ pid=(\d+)"
APPLICATION = re.compile(r"application_\d+_\d+")


#: The first timestamp the DAG run printed (Airflow's, UTC): the run started at most this early.
DAG_TIMESTAMP = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)Z")


#: A Hadoop daemon's log line's leading time (UTC here, as the machine's clock).
LOGGED_AT = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ")


def _expired_token_refusals(log: str) -> list[tuple[datetime, str]]:
    """Each line of a daemon's log that refused a token as expired, with when it was logged (a line
    without a time of its own, a stack trace's, has its entry's)."""
    refusals, logged_at = [], datetime.min
    for line in log.splitlines():
        if found := LOGGED_AT.match(line):
            logged_at = datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S,%f")
        if "has expired" in line:
            refusals.append((logged_at, line))
    return refusals


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


def _container_log(hadoop, container: str, name: str) -> str:
    """A container's log file, from its NodeManager's log folder.

    What ``yarn logs -containerId`` fetches from the NodeManager's web
    service; on a secure cluster that service needs Hadoop's native library
    (SecureIOUtils checks the file's owner), which Maven Central does not
    ship, so on these hosts the file is read where the NodeManager keeps it.
    """
    (logs,) = [found for cid, found in hadoop.container_logs(application_of(container)).items() if cid == container]
    return (logs.directory / name).read_text(errors="replace")


def _public_modes(localised: Path) -> tuple[frozenset[int], frozenset[int]]:
    """The permission bits of the regular files and of the folders under ``localised`` (links are left as unpacked)."""
    files, folders = set(), set()
    for top, _folders, names in os.walk(localised):
        folders.add(stat.S_IMODE(os.lstat(top).st_mode))
        for name in names:
            mode = os.lstat(os.path.join(top, name)).st_mode
            if stat.S_ISREG(mode):
                files.add(stat.S_IMODE(mode))
    return frozenset(files), frozenset(folders)


def test_training_ran_ps_workers_and_chief_in_yarn_containers(dag_on_yarn, hadoop):
    run_dir = hadoop.by_address(dag_on_yarn.run_uri)
    # On YARN a node names its container (CONTAINER_ID), as `yarn logs -containerId` does.
    containers = _node_containers(_stage_outputs(dag_on_yarn.output)["train"])
    assert len(set(containers.values())) == 4
    (app_id,) = {application_of(container) for container in containers.values()}
    assert set(containers.values()) < set(hadoop.container_logs(app_id))  # and the application master's
    localised_archives = set()
    for container in containers.values():
        launch = _container_log(hadoop, container, "launch_container.sh")
        # The packed environment, from the NodeManager's public cache (shared by every application).
        localised = re.search(r'"(/\S+/filecache/\d+/tfbs-env\.tar\.gz)" "environment"', launch)
        assert localised, launch[-2000:]
        localised_archives.add(Path(localised.group(1)))
        # Spark authenticates and encrypts (the DAG's YARN_NETWORK_CONF); the
        # secret travels in YARN's credentials, never on a command line.
        assert "-Dspark.authenticate=true" in launch and "-Dspark.network.crypto.enabled=true" in launch
        assert "authenticate.secret" not in launch and "_SPARK_AUTH_SECRET" not in launch
        # The GPU discovery script, shipped with training, in the container's working directory.
        assert '"get_gpus_resources.sh"' in launch, launch[-2000:]

    # Every file and folder of the unpacked archive with YARN's public permissions, set by the
    # NodeManagers' local file system of hadoop/java (a system call, not a `chmod` process each).
    # One walk per node's copy: containers on one node share it.
    modes = {_public_modes(archive) for archive in localised_archives}
    assert modes == {(frozenset({0o555}), frozenset({0o755}))}, modes

    version = json.loads(storage.read_text(f"{run_dir}/models/LATEST"))["version"]
    metadata = json.loads(storage.read_text(f"{run_dir}/models/{version}/export/tfbs_metadata.json"))
    assert metadata["strategy"] == "parameter_server"
    report = json.loads(storage.read_text(f"{run_dir}/report/report.json"))
    assert len(report["results"]) == 6 and report["version"] == version


def test_each_nodes_log_is_in_the_container_its_error_would_name(dag_on_yarn, hadoop):
    """The container a node's error names holds that node's log (``yarn logs -containerId``)."""
    containers = _node_containers(_stage_outputs(dag_on_yarn.output)["train"])
    for node, container in containers.items():
        logged = _container_log(hadoop, container, "stderr")
        job, task = node.split(":")
        assert f'"task": {{"type": "{job}", "index": {task}}}' in logged, (node, logged[-2000:])


def test_a_stage_longer_than_the_token_renewal_interval_keeps_its_tokens(dag_on_yarn, hadoop):
    """Delegation tokens expire ``TOKEN_RENEW_S`` after their last renewal
    (conftest's secure cluster): a stage of the DAG ran longer than that on
    its tokens, and YARN renewed the tenant's HDFS token while it ran."""
    assert dag_on_yarn.returncode == 0, dag_on_yarn.output[-5000:]
    apps = hadoop.get_json(f"{hadoop.rm_url}/ws/v1/cluster/apps?states=FINISHED")["apps"]["app"]
    # The DAG's own applications (the host tests' trainings, which lose hosts, may have run before).
    dag_apps = set(APPLICATION.findall(dag_on_yarn.output))
    long_ones = [app for app in apps if app["id"] in dag_apps and app["elapsedTime"] > TOKEN_RENEW_S * 1000]
    assert long_ones and all(app["finalStatus"] == "SUCCEEDED" for app in long_ones), apps
    log = (hadoop.host_dirs("master").logs / "ResourceManager.log").read_text(errors="replace")
    renewals = [
        datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp() * 1000  # both in local time
        for stamp in re.findall(
            rf"^(\S+ \S+) .*Renewed delegation-token= \[Kind: HDFS_DELEGATION_TOKEN.*owner={TENANT}@", log, re.M
        )
    ]
    assert any(app["startedTime"] < at < app["finishedTime"] for app in long_ones for at in renewals), renewals


def test_the_tf_nodes_read_with_the_tokens_spark_keeps_current(dag_on_yarn, hadoop):
    """On a keytab login Spark replaces the tokens before they expire, in the executor JVMs only.

    The executor plugin (tfbs/launch/java/CurrentTokensPlugin.java) copies them
    beside YARN's token file whenever they change, and the containers' HDFS
    clients read that copy (tfbs.storage.hadoop_conf.use_current_tokens). Without
    it a TF node whose container started after Spark's first replacement
    held a token nobody renewed, and the NameNode refused it one renewal
    interval later (``Token has expired``) in the middle of training.
    """
    assert dag_on_yarn.returncode == 0, dag_on_yarn.output[-5000:]
    nodes = _node_containers(_stage_outputs(dag_on_yarn.output)["train"])
    written = {
        container: (logs.directory / "stderr").read_text(errors="replace").count("tfbs current tokens: ")
        for app in set(APPLICATION.findall(dag_on_yarn.output))
        for container, logs in hadoop.container_logs(app).items()
    }
    # Every TF node's container keeps the copy; the DAG's longer-lived executors
    # (preprocessing's) wrote it again when Spark replaced the tokens (every 0.75 * TOKEN_RENEW_S).
    assert all(written[container] >= 1 for container in nodes.values()), written
    assert max(written.values()) >= 2, written
    log = (hadoop.host_dirs("master").logs / "NameNode.log").read_text(errors="replace")
    # The cluster serves the session's later tests too: a client of theirs holding a token past its
    # renewal is refused after the DAG ended, which says nothing of the DAG's.
    started = datetime.strptime(DAG_TIMESTAMP.search(dag_on_yarn.output).group(1), "%Y-%m-%dT%H:%M:%S.%f")
    ended = started + timedelta(seconds=dag_on_yarn.seconds)
    refused = [line for logged_at, line in _expired_token_refusals(log) if logged_at <= ended]
    assert not refused, refused[:3]
