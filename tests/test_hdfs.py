"""HDFS for real (Hadoop's mini cluster): the storage layer's round trips, and
the whole pipeline with its data and run directory on ``hdfs://`` (the
pipeline's run on YARN, shared with test_yarn.py and test_airflow_dag.py),
then a killed training resumed from its checkpoint there.

The pipeline reads and writes through its own clients (hdfs-native in the
driver and the tasks, Spark's Hadoop client for DataFrames); every check of
what it wrote goes through a third, independent one: WebHDFS (the ``hdfs``
package).
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import pytest
from airflow_runs import REGIONS
from conftest import DEMO_CONFIG, REPO, SMALL_OVERRIDES

from tfbs import storage
from tfbs.lineage import manifest_digest

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module")
def webhdfs(hadoop):
    """An independent HDFS client: WebHDFS over the name node's HTTP port."""
    from hdfs import InsecureClient

    return InsecureClient(hadoop.webhdfs_url, user="root")


def _path(uri: str) -> str:
    """The HDFS path of an ``hdfs://host:port/path`` URI."""
    return "/" + uri.split("://", 1)[1].split("/", 1)[1]


def test_storage_round_trips(hadoop, webhdfs, tmp_path):
    base = f"{hadoop.fs_default_fs}/roundtrip"
    storage.write_text(f"{base}/a/one.txt", "one\n")
    storage.write_bytes(f"{base}/a/b/two.bin", bytes(range(256)) * 1000)
    assert storage.read_text(f"{base}/a/one.txt") == "one\n"
    assert storage.read_range(f"{base}/a/b/two.bin", 256, 4) == bytes([0, 1, 2, 3])
    assert storage.list_files(f"{base}/a") == [f"{base}/a/b/two.bin", f"{base}/a/one.txt"]
    assert webhdfs.status("/roundtrip/a/b/two.bin")["length"] == 256_000

    with storage.open_output(f"{base}/labels.tsv.gz") as out:  # compressed by its name
        out.write(b"chr\tstart\tstop\tK562\n")
    assert gzip.decompress(_read(webhdfs, "/roundtrip/labels.tsv.gz")).startswith(b"chr\t")

    # A staged directory replaces the old one whole (a rename on HDFS).
    storage.write_text(f"{base}/staging/manifest.json", "{}")
    storage.write_text(f"{base}/final/old.txt", "old")
    storage.replace_dir(f"{base}/staging", f"{base}/final", commit_marker="manifest.json")
    assert webhdfs.list("/roundtrip/final") == ["manifest.json"]
    assert not storage.exists(f"{base}/staging")

    # Trees both ways, as the model directory's local mirror uses them.
    (tmp_path / "up" / "checkpoints").mkdir(parents=True)
    (tmp_path / "up" / "checkpoints" / "checkpoint").write_text("state")
    (tmp_path / "up" / "checkpoints" / "ckpt-1.index").write_text("index")
    uploaded: dict = {}
    assert storage.upload_tree(tmp_path / "up", f"{base}/model", last=("checkpoint",), uploaded=uploaded) == 2
    assert storage.upload_tree(tmp_path / "up", f"{base}/model", last=("checkpoint",), uploaded=uploaded) == 0
    assert storage.download_tree(f"{base}/model", tmp_path / "down") == 2
    assert (tmp_path / "down" / "checkpoints" / "checkpoint").read_text() == "state"


def _read(client, path: str) -> bytes:
    with client.read(path) as reader:
        return reader.read()


def _stage(stage: str, data_root: str, run_dir: str, *extra: str) -> subprocess.CompletedProcess:
    overrides = [*SMALL_OVERRIDES, f"data.root={data_root}", f"run_dir={run_dir}", *extra]
    command = [sys.executable, "-m", f"jobs.{stage}", "--config", str(DEMO_CONFIG)]
    for override in overrides:
        command += ["--set", override]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=1200)


def test_everything_the_run_wrote_is_on_hdfs(dag_on_yarn, webhdfs):
    """The pipeline's run on YARN (conftest's ``dag_on_yarn``): data and run directory on HDFS."""
    assert dag_on_yarn.returncode == 0, dag_on_yarn.output[-4000:]
    run = _path(dag_on_yarn.run_uri)
    manifest = json.loads(_read(webhdfs, f"{run}/shards/manifest.json"))
    assert manifest["tfs"] == ["CTCF", "FOXA1"]
    assert all(entry["path"].startswith("hdfs://") for entry in manifest["parquet"]["train"])
    assert webhdfs.list(f"{run}/shards/records/train") == ["negatives-0", "positives"]

    version = json.loads(_read(webhdfs, f"{run}/models/LATEST"))["version"]
    model = f"{run}/models/{version}"
    assert json.loads(_read(webhdfs, f"{model}/lineage.json"))["manifest_digest"] == manifest_digest(manifest)
    history = json.loads(_read(webhdfs, f"{model}/history.json"))
    assert [entry["step"] for entry in history] == [30, 60]
    assert "checkpoint" in webhdfs.list(f"{model}/checkpoints")
    assert any(name.startswith("ckpt-60") for name in webhdfs.list(f"{model}/checkpoints"))
    assert webhdfs.list(f"{model}/best")
    assert any(name.startswith("events.out.tfevents") for name in webhdfs.list(f"{model}/tensorboard"))
    assert {"saved_model.pb", "variables", "tfbs_metadata.json"} <= set(webhdfs.list(f"{model}/export"))
    assert json.loads(_read(webhdfs, f"{model}/export/tfbs_metadata.json"))["strategy"] == "parameter_server"
    assert webhdfs.status(f"{model}/history.png")["length"] > 1000
    # The ps and workers were released by the chief's marker on HDFS.
    assert json.loads(_read(webhdfs, f"{model}/_TRAINING_DONE"))["status"] == "ok"

    report = json.loads(_read(webhdfs, f"{run}/report/report.json"))
    assert len(report["results"]) == 6 and set(report["baselines"]) == set(report["results"])
    assert report["version"] == version
    for name in ("report.json", "curves.png", "baselines.png"):
        assert webhdfs.status(f"{model}/report/{name}")["length"] > 1000
        assert webhdfs.status(f"{run}/report/{name}")["length"] > 1000
    submission = gzip.decompress(_read(webhdfs, f"{model}/report/F.CTCF.K562.tab.gz")).decode().splitlines()
    assert [line.split("\t")[:3] for line in submission] == [line.split("\t") for line in REGIONS.splitlines()]


def test_a_killed_run_resumes_from_its_checkpoint_on_hdfs(hadoop, dag_on_yarn, hdfs_dataset, webhdfs, tmp_path):
    """A copy of the YARN run's model version, set back to its state when killed
    after step 30 (no export, the checkpoint state naming step 30): the same
    command resumes there, in one process on local Spark."""
    run_dir = f"{hadoop.fs_default_fs}/resumed/run"
    storage.download_tree(f"{dag_on_yarn.run_uri}/models", tmp_path / "models")
    storage.upload_tree(tmp_path / "models", f"{run_dir}/models")
    version = json.loads(_read(webhdfs, f"{_path(run_dir)}/models/LATEST"))["version"]
    model = f"{run_dir}/models/{version}"
    shards = f"shards_dir={dag_on_yarn.run_uri}/shards"
    again = _stage("train", hdfs_dataset, run_dir, shards)
    assert again.returncode == 0, again.stderr[-4000:]
    assert f"version {version}, up to date" in again.stdout and "SparkContext" not in again.stderr

    storage.delete_dir(f"{model}/export")
    storage.write_text(
        f"{model}/checkpoints/checkpoint", 'model_checkpoint_path: "ckpt-30"\nall_model_checkpoint_paths: "ckpt-30"\n'
    )
    # The strategy is no part of the version: a ps run may resume in one process.
    resumed = _stage("train", hdfs_dataset, run_dir, shards, "train.strategy=local")
    assert resumed.returncode == 0, resumed.stderr[-4000:]
    assert "resumed from" in resumed.stderr and "at step 30" in resumed.stderr
    history = json.loads(_read(webhdfs, f"{_path(model)}/history.json"))
    assert [entry["step"] for entry in history] == [30, 60]
    assert json.loads(_read(webhdfs, f"{_path(model)}/export/tfbs_metadata.json"))["version"] == version
