"""HDFS for real, on Kerberos-secured hosts of their own (``hadoop/hosts.py``):
the storage layer's round trips from this machine, a client without a
ticket refused, and the whole pipeline with its data and run directory on
``hdfs://`` (the DAG's run on YARN across hosts, shared with test_yarn.py
and test_airflow_dag.py), every block on two hosts.

The pipeline reads and writes through its own clients (hdfs-native in the
driver and the tasks, Spark's Hadoop client for DataFrames); every check of
what it wrote goes through a third, independent one: WebHDFS through
``curl --negotiate`` (SPNEGO), following the NameNode's redirects to the
DataNodes' hosts.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from datetime import timedelta

import pytest
from airflow_runs import REGIONS

from tfbs import storage
from tfbs.lineage import manifest_digest

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.slow]


def _path(uri: str) -> str:
    """The HDFS path of an ``hdfs://host:port/path`` URI."""
    return "/" + uri.split("://", 1)[1].split("/", 1)[1]


def test_storage_round_trips(hdfs, webhdfs, tmp_path):
    base = f"{hdfs}/roundtrip"
    storage.write_text(f"{base}/a/one.txt", "one\n")
    storage.write_bytes(f"{base}/a/b/two.bin", bytes(range(256)) * 1000)
    assert storage.read_text(f"{base}/a/one.txt") == "one\n"
    assert storage.read_range(f"{base}/a/b/two.bin", 256, 4) == bytes([0, 1, 2, 3])
    assert storage.list_files(f"{base}/a") == [f"{base}/a/b/two.bin", f"{base}/a/one.txt"]
    assert webhdfs.status("/roundtrip/a/b/two.bin")["length"] == 256_000

    with storage.open_output(f"{base}/labels.tsv.gz") as out:  # compressed by its name
        out.write(b"chr\tstart\tstop\tK562\n")
    assert gzip.decompress(webhdfs.read("/roundtrip/labels.tsv.gz")).startswith(b"chr\t")

    # A staged directory replaces the old one whole (a rename on HDFS).
    storage.write_text(f"{base}/staging/manifest.json", "{}")
    storage.write_text(f"{base}/final/old.txt", "old")
    storage.replace_dir(f"{base}/staging", f"{base}/final", commit_marker="manifest.json")
    assert webhdfs.list("/roundtrip/final") == ["manifest.json"]
    assert not storage.exists(f"{base}/staging")

    # A swap's aside folder and a build's staging folder that killed writers left: found by name, aged by their
    # newest file (HDFS's modification times), removed whole; the swapped-in folder stays.
    aside = f"{base}/{storage.temporary_name('final')}"
    staging = f"{base}/final._staging-0badc0de"
    storage.write_text(f"{aside}/old.txt", "old")
    storage.write_text(f"{staging}/records/train-0000.rec", "half")
    assert storage.find_leftovers(base) == []  # written just now
    removed = storage.remove_leftovers(base, older_than=timedelta(0))
    assert sorted((left.uri, left.kind) for left in removed) == sorted([(aside, "temporary"), (staging, "staging")])
    assert all(left.modified is not None for left in removed)
    assert not storage.exists(aside) and not storage.exists(staging)
    assert webhdfs.list("/roundtrip/final") == ["manifest.json"]

    # Trees both ways, as the model directory's local mirror uses them.
    (tmp_path / "up" / "checkpoints").mkdir(parents=True)
    (tmp_path / "up" / "checkpoints" / "checkpoint").write_text("state")
    (tmp_path / "up" / "checkpoints" / "ckpt-1.index").write_text("index")
    uploaded: dict = {}
    assert storage.upload_tree(tmp_path / "up", f"{base}/model", last=("checkpoint",), uploaded=uploaded) == 2
    assert storage.upload_tree(tmp_path / "up", f"{base}/model", last=("checkpoint",), uploaded=uploaded) == 0
    assert storage.download_tree(f"{base}/model", tmp_path / "down") == 2
    assert (tmp_path / "down" / "checkpoints" / "checkpoint").read_text() == "state"


def test_everything_the_run_wrote_is_on_hdfs(dag_on_yarn, hadoop, webhdfs):
    """The pipeline's run on YARN (conftest's ``dag_on_yarn``): data and run directory on HDFS."""
    assert dag_on_yarn.returncode == 0, dag_on_yarn.output[-4000:]
    run = _path(dag_on_yarn.run_uri)
    manifest = json.loads(webhdfs.read(f"{run}/shards/manifest.json"))
    assert manifest["tfs"] == ["CTCF", "FOXA1"]
    # Named relative to the shard folder (manifest schema 8), which is on HDFS.
    assert all(entry["path"].startswith("parquet/") for entry in manifest["parquet"]["train"])
    # Every block of what the run wrote on two of the three DataNode hosts.
    shard = f"{run}/shards/{manifest['parquet']['train'][0]['path']}"
    assert webhdfs.status(shard)["replication"] == 2
    assert all(len(hosts) == 2 and hosts <= set(hadoop.nodes) for hosts in webhdfs.block_hosts(shard))
    assert webhdfs.list(f"{run}/shards/records/train") == ["negatives-0", "positives"]

    version = json.loads(webhdfs.read(f"{run}/models/LATEST"))["version"]
    model = f"{run}/models/{version}"
    assert json.loads(webhdfs.read(f"{model}/lineage.json"))["manifest_digest"] == manifest_digest(manifest)
    history = json.loads(webhdfs.read(f"{model}/history.json"))
    assert [entry["step"] for entry in history] == [100, 200, 300, 400]
    assert "checkpoint" in webhdfs.list(f"{model}/checkpoints")
    assert any(name.startswith("ckpt-400") for name in webhdfs.list(f"{model}/checkpoints"))
    assert webhdfs.list(f"{model}/best")
    assert any(name.startswith("events.out.tfevents") for name in webhdfs.list(f"{model}/tensorboard"))
    assert {"saved_model.pb", "variables", "tfbs_metadata.json"} <= set(webhdfs.list(f"{model}/export"))
    assert json.loads(webhdfs.read(f"{model}/export/tfbs_metadata.json"))["strategy"] == "parameter_server"
    assert webhdfs.status(f"{model}/history.png")["length"] > 1000
    # The ps and workers were released by the chief's marker on HDFS.
    assert json.loads(webhdfs.read(f"{model}/_TRAINING_DONE"))["status"] == "ok"

    report = json.loads(webhdfs.read(f"{run}/report/report.json"))
    assert len(report["results"]) == 6 and set(report["baselines"]) == set(report["results"])
    assert report["version"] == version
    for name in ("report.json", "curves.png", "baselines.png"):
        assert webhdfs.status(f"{model}/report/{name}")["length"] > 1000
        assert webhdfs.status(f"{run}/report/{name}")["length"] > 1000
    submission = gzip.decompress(webhdfs.read(f"{model}/report/F.CTCF.K562.tab.gz")).decode().splitlines()
    assert [line.split("\t")[:3] for line in submission] == [line.split("\t") for line in REGIONS.splitlines()]


def test_a_client_without_a_ticket_is_refused(hdfs, webhdfs, tmp_path):
    """HDFS believes no user name a client merely asserts: no Kerberos ticket (or token), no answer."""
    storage.write_text(f"{hdfs}/roundtrip/tenant.txt", "the tenant's")
    assert webhdfs.call("/roundtrip/tenant.txt", "OPEN", with_ticket=False)[0] == 401
    assert webhdfs.call("/roundtrip/tenant.txt", "OPEN&user.name=alice", with_ticket=False)[0] == 401
    script = f"import hdfs_native; print(hdfs_native.Client({hdfs!r}).read('/roundtrip/tenant.txt').read())"
    env = {**os.environ, "KRB5CCNAME": f"FILE:{tmp_path / 'no-ticket'}"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "No Kerberos credentials available" in done.stderr, done.stderr[-2000:]
