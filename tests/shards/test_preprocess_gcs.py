"""The preprocessing job with inputs and outputs in a bucket (gs://),
served by a GCS emulator: the same client code as on Google Cloud."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from conftest import small_config

from preprocess.build_shards import build_shards
from tfbs import storage
from tfbs.storage import local_path


def _upload(local_dir: Path, base_uri: str) -> None:
    for path in sorted(p for p in local_dir.rglob("*") if p.is_file()):
        storage.write_bytes(f"{base_uri}/{path.relative_to(local_dir)}", path.read_bytes())


def test_gs_run_matches_the_local_run(spark, small_shards, gcs_base, tmp_path):
    local_config, local_manifest = small_shards
    _upload(Path(local_path(local_config.data.root)), f"{gcs_base}/data")
    config = small_config(tmp_path, f"data.root={gcs_base}/data", f"run_dir={gcs_base}/run")
    assert config.shards_uri == f"{gcs_base}/run/shards"

    manifest = build_shards(spark, config)

    # Sampling hashes coordinates, not storage or partitioning: same outcomes.
    assert manifest.counts == local_manifest.counts
    assert manifest.draws == local_manifest.draws
    written = storage.list_files(config.shards_uri)
    listed = [f.path for files in manifest.parquet.values() for f in files]
    listed += [f.path for f in manifest.records["train"].positives]
    assert set(listed) <= set(written)
    assert all(uri.startswith(f"{gcs_base}/run/shards/") for uri in written)
    assert not [uri for uri in storage.list_files(f"{gcs_base}/run") if "_staging-" in uri]
    # What a killed build and a killed writer leave in a bucket is found and removed, the shards untouched.
    staging = f"{gcs_base}/run/shards._staging-deadbeef"
    temporary = f"{gcs_base}/run/shards/{storage.temporary_name('manifest.json')}"
    for uri in (f"{staging}/records/train-0000.rec", temporary):
        storage.write_bytes(uri, b"half")
    assert storage.remove_leftovers(f"{gcs_base}/run") == []  # written just now: maybe a live writer's
    removed = storage.remove_leftovers(f"{gcs_base}/run", older_than=timedelta(0))
    assert sorted((left.uri, left.kind) for left in removed) == [(staging, "staging"), (temporary, "temporary")]
    assert storage.find_leftovers(f"{gcs_base}/run", timedelta(0)) == []
    assert storage.list_files(config.shards_uri) == written
