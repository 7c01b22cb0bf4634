"""``tfbs changes`` retrains exactly when something that matters changed.

The run folders are built directly (lineages, ``LATEST``, export files, floor
failures) from the session's small data set, so no model is trained: what is
compared is the lineage of ``LATEST`` and its export, never the model.

- the schedule does not stick: ``LATEST`` without its whole export is work to do;
- it does not churn: a version that failed its floors on these inputs is not
  retried (and says so loudly: an exit code of its own, a failed DAG task),
  moved identical data and layout settings are nothing new;
- it follows the model: another model format or ``train`` setting retrains.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
from pathlib import Path

import pytest
from blake3 import blake3
from conftest import small_config

import jobs.changes
import jobs.ready
from preprocess.changes import Changes, changes_since_latest
from preprocess.fingerprint import changed_inputs, input_fingerprint, same_content
from tf_models import MODEL_FORMAT
from tf_models.model_format import recorded_model_code
from tfbs import lineage, storage
from tfbs.config import PipelineConfig
from tfbs.lineage import Lineage
from tfbs.storage import content_keys, local_path

#: What a whole export holds (tfbs.lineage.export_problem), beside its metadata.
EXPORT = ("saved_model.pb", "variables/variables.index", "variables/variables.data-00000-of-00001")


#: The recorded fingerprint of the model's code: what train and ``tfbs changes`` name versions by.
CODE = recorded_model_code()


def _version(
    config: PipelineConfig, fingerprint: dict, created_at: str, model_format: int = MODEL_FORMAT, code: str = CODE
) -> Lineage:
    """A trained version of ``config`` from shards of ``fingerprint``: its lineage and a whole export."""
    manifest = {"fingerprint": fingerprint, "created_at": created_at}
    version_lineage = Lineage.of(config, manifest, model_format, code).model_copy(update={"created_at": created_at})
    lineage.write_lineage(config.run_dir, version_lineage)
    export = lineage.export_uri(config.run_dir, version_lineage.version)
    for name in EXPORT:
        storage.write_text(f"{export}/{name}", name)
    content_keys.record_digests(local_path(export))  # as export_model records them, before the metadata
    metadata = {"version": version_lineage.version, "manifest_digest": version_lineage.manifest_digest}
    metadata |= {"tfs": ["CTCF"], "cells": ["K562"], "window": 1000}  # read_export_metadata checks them
    storage.write_text(f"{export}/{lineage.EXPORT_METADATA}", json.dumps(metadata))
    return version_lineage


def _other_content(fingerprint: dict, name: str) -> dict:
    """``fingerprint`` as if input ``name`` had held other bytes."""
    inputs = dict(fingerprint["inputs"])
    inputs[name] = {**inputs[name], "digest": "0" * 64}
    return {**fingerprint, "inputs": inputs}


@pytest.fixture(scope="module")
def data(small_dataset, tmp_path_factory) -> Path:
    """A copy of the small data set (a test may edit its copy of that copy)."""
    root = tmp_path_factory.mktemp("changes") / "data"
    shutil.copytree(local_path(small_dataset.data.root), root)
    return root


@pytest.fixture
def run(data, tmp_path) -> tuple[PipelineConfig, Lineage]:
    """A run whose ``LATEST`` is a version of exactly this data and configuration."""
    config = small_config(tmp_path, f"data.root={data}")
    version_lineage = _version(config, input_fingerprint(config), "2026-01-05T00:00:00Z")
    lineage.write_latest(config.run_dir, version_lineage, 0.9, 0.5)
    return config, version_lineage


def _changes(config: PipelineConfig, model_format: int = MODEL_FORMAT, code: str = CODE) -> Changes:
    return changes_since_latest(config, model_format, code)


def test_nothing_new_on_the_same_inputs_and_settings(run, capsys):
    config, version_lineage = run
    changes = _changes(config)
    assert not changes.anything_new and changes.latest_version == version_lineage.version
    assert jobs.changes.run(config) == jobs.changes.NOTHING_NEW
    said = f"nothing new since model version {version_lineage.version}: inputs and configuration unchanged"
    assert capsys.readouterr().out.strip() == said
    # The scheduler's answer (the DAG's detect_changes reads it): skip the run, saying why.
    assert jobs.changes.run(config, argparse.Namespace(verdict=True)) == jobs.changes.NOTHING_NEW
    assert json.loads(capsys.readouterr().out.splitlines()[-1]) == {"verdict": "skip", "reason": said}


def test_before_any_evaluated_version_the_run_goes_without_reading_the_inputs(tmp_path):
    config = small_config(tmp_path)  # no data under tmp_path: hashing would fail
    changes = _changes(config)
    assert changes.anything_new and changes.describe() == "no model version has passed evaluation yet: run the pipeline"


# -- the schedule does not stick ------------------------------------------------------


@pytest.mark.parametrize("deleted", ["saved_model.pb", "variables/variables.index", lineage.EXPORT_METADATA])
def test_latest_without_its_whole_export_is_work_to_do(run, deleted, capsys):
    config, version_lineage = run
    export = lineage.export_uri(config.run_dir, version_lineage.version)
    storage.delete_file(f"{export}/{deleted}")
    changes = _changes(config)
    assert changes.anything_new
    assert changes.describe() == (
        f"new since model version {version_lineage.version}: export of model version {version_lineage.version} unusable "
        f"({export}: {deleted} missing)"
    )
    assert jobs.changes.run(config) == 0
    assert f"{deleted} missing" in capsys.readouterr().out


def test_latest_whose_export_folder_is_gone_is_work_to_do(run):
    config, version_lineage = run
    export = lineage.export_uri(config.run_dir, version_lineage.version)
    storage.delete_dir(export)
    changes = _changes(config)
    assert changes.anything_new and changes.changed == [
        f"export of model version {version_lineage.version} unusable ({export}: no export there)"
    ]


def _truncate(path: Path) -> None:
    """Cut ``path`` to half its bytes, as a full disk or a killed copy would."""
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def test_latest_whose_export_is_damaged_is_work_to_do_and_trained_again(run, capsys):
    """A truncated variables file (all files still there) is found by its digest, not its presence."""
    from tf_models.versions import finished_export

    config, version_lineage = run
    export = lineage.export_uri(config.run_dir, version_lineage.version)
    assert finished_export(export, version_lineage)
    _truncate(Path(local_path(export), EXPORT[2]))
    changes = _changes(config)
    assert changes.anything_new
    assert changes.changed == [
        f"export of model version {version_lineage.version} unusable ({export}/{EXPORT[2]}: not the bytes "
        f"{content_keys.DIGESTS_NAME} records: damaged, truncated or rewritten since export)"
    ]
    assert jobs.changes.run(config) == 0
    assert f"{EXPORT[2]}: not the bytes" in capsys.readouterr().out
    # train's up-to-date check answers the same: the version is trained and exported again.
    assert not finished_export(export, version_lineage)


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        ("delete-record", f"{content_keys.DIGESTS_NAME}: missing: the export's files cannot be checked"),
        ("garble-record", f"{content_keys.DIGESTS_NAME}: not a JSON record of digests"),
        ("delete-recorded", f"{EXPORT[2]}: missing (named in {content_keys.DIGESTS_NAME})"),
        ("rewrite-same-size", f"{EXPORT[0]}: not the bytes {content_keys.DIGESTS_NAME} records"),
    ],
)
def test_an_export_unlike_its_digests_record_is_unusable(run, damage, reason):
    config, version_lineage = run
    export = Path(local_path(lineage.export_uri(config.run_dir, version_lineage.version)))
    record = export / content_keys.DIGESTS_NAME
    if damage == "delete-record":
        record.unlink()
    elif damage == "garble-record":
        record.write_text("{not json")
    elif damage == "delete-recorded":
        # Only the data file goes: the presence checks (saved_model.pb, index) still pass, the record does not.
        (export / EXPORT[2]).rename(export / "variables" / "variables.data-00000-of-00002")
    else:
        (export / EXPORT[0]).write_text(EXPORT[0].upper())  # same size, other bytes
    problem = lineage.export_problem(lineage.export_uri(config.run_dir, version_lineage.version), version_lineage)
    assert problem is not None and problem.startswith(f"{storage.to_uri(export)}/{reason}")
    assert _changes(config).anything_new


def test_an_export_of_another_version_is_not_latest_s(run):
    config, version_lineage = run
    export = lineage.export_uri(config.run_dir, version_lineage.version)
    storage.write_text(f"{export}/{lineage.EXPORT_METADATA}", json.dumps({"version": "v0", "manifest_digest": "0"}))
    assert _changes(config).anything_new


# -- the schedule does not churn ---------------------------------------------------------


def test_a_version_that_failed_its_floors_is_not_retried_until_an_input_changes(run, data, capsys):
    config, latest = run
    strict = config.model_copy(update={"evaluate": config.evaluate.model_copy(update={"min_mean_auprc": 0.99})})
    # LATEST was made from an older label file; the version of the current one fell below the floor.
    lineage.write_lineage(
        config.run_dir,
        latest.model_copy(update={"input_fingerprint": _other_content(latest.input_fingerprint, "labels/CTCF")}),
    )
    failed = _version(config, input_fingerprint(config), "2026-01-12T00:00:00Z")
    failures = ["mean auPRC 0.410 is below evaluate.min_mean_auprc 0.99"]
    lineage.write_floor_failure(config.run_dir, failed, (None, 0.99), (0.8, 0.41), failures)

    changes = _changes(strict)
    assert not changes.anything_new and changes.failed is not None and changes.failed.version == failed.version
    # An alarm, not a skip: its own exit code (neither 0, 2 nor 99), the reason on stdout and stderr.
    assert jobs.changes.FLOORS_FAILED not in (0, 2, jobs.changes.NOTHING_NEW)
    assert jobs.changes.run(strict) == jobs.changes.FLOORS_FAILED
    said = capsys.readouterr()
    expected = (
        f"nothing to retry: model version {failed.version} failed its floors on these inputs and settings "
        f"({failures[0]}); not retried, and every scheduled run fails, until an input, setting, floor or the "
        f"model's code changes (LATEST is {latest.version})"
    )
    # stderr also holds the log lines of this process (logging set up by an earlier stage in it).
    errors = [line for line in said.err.splitlines() if line.startswith("error:")]
    assert said.out.strip() == expected and errors == [f"error: {expected}"]
    # Every week the same, until fixed: the answer does not wear off; the scheduler is told to fail the run.
    assert jobs.changes.run(strict, argparse.Namespace(verdict=True)) == jobs.changes.FLOORS_FAILED
    assert json.loads(capsys.readouterr().out.splitlines()[-1]) == {"verdict": "fail", "reason": expected}
    # A new model format (the model's code fixed) is another version: the run goes.
    assert _changes(strict, MODEL_FORMAT + 1).anything_new

    # Other floors may pass it: work to do (evaluating again).
    assert _changes(config).anything_new
    # Other training settings: another version, not the failed one.
    longer = strict.model_copy(update={"train": strict.train.model_copy(update={"epochs": 11})})
    assert _changes(longer).anything_new
    # New bytes of an input: retried.
    proteins = data / "proteins" / "tf_proteins.fa"
    original = proteins.read_bytes()
    try:
        proteins.write_bytes(original + b">EXTRA\nMKV\n")
        changes = _changes(strict)
        assert changes.anything_new and changes.failed is None and "proteins" in changes.changed
    finally:
        proteins.write_bytes(original)


def test_a_failure_before_any_version_passed_is_not_retried_either(data, tmp_path):
    config = small_config(tmp_path, f"data.root={data}")
    failed = _version(config, input_fingerprint(config), "2026-01-12T00:00:00Z")
    lineage.write_floor_failure(config.run_dir, failed, (None, None), (0.5, 0.1), ["below"])
    changes = _changes(config)
    assert not changes.anything_new and changes.latest_version is None
    assert "no version has passed yet" in changes.describe()


def test_moved_identical_data_is_nothing_new(run, data, tmp_path, monkeypatch):
    config, _ = run
    moved = tmp_path / "elsewhere" / "data"
    shutil.copytree(data, moved)
    assert not _changes(small_config(tmp_path, f"data.root={moved}")).anything_new
    # Named from another working directory, relative.
    monkeypatch.chdir(tmp_path / "elsewhere")
    from_elsewhere = small_config(tmp_path, "data.root=data")
    assert from_elsewhere.data.root != config.data.root
    assert not _changes(from_elsewhere).anything_new


@pytest.mark.parametrize(
    "setting",
    [
        "preprocess.read_block_mb=4",
        "preprocess.rows_per_record_file=100",
        "preprocess.rows_per_row_group=64",
        "preprocess.test_rows_per_row_group=4096",
        "preprocess.bad_rows=set_aside",
        "train.placement.num_workers=3",
        "train.placement.timeout_s=60",
    ],
)
def test_a_layout_or_operational_setting_is_nothing_new(run, data, tmp_path, setting):
    assert not _changes(small_config(tmp_path, f"data.root={data}", setting)).anything_new


@pytest.mark.parametrize(
    ("setting", "changed"),
    [
        ("train.learning_rate=0.01", "configuration (train)"),
        ("train.model.dropout=0.3", "configuration (train)"),
        ("preprocess.seed=99", "configuration (data, preprocess)"),
        ("preprocess.negatives_per_positive=5", "configuration (data, preprocess)"),
        ("data.cells=[HepG2, K562]", "configuration (data, preprocess)"),
    ],
)
def test_a_setting_that_changes_the_model_retrains(run, data, tmp_path, setting, changed):
    changes = _changes(small_config(tmp_path, f"data.root={data}", setting))
    assert changes.anything_new and changed in changes.changed


def test_another_model_format_retrains_as_a_new_version(run):
    config, version_lineage = run
    changes = _changes(config, MODEL_FORMAT + 1)
    assert changes.anything_new and changes.changed == [f"model format {MODEL_FORMAT} -> {MODEL_FORMAT + 1}"]
    # Training then makes a version of its own, beside the old code's.
    manifest = {"fingerprint": version_lineage.input_fingerprint, "created_at": version_lineage.created_at}
    bumped = Lineage.of(config, manifest, MODEL_FORMAT + 1, CODE)
    assert bumped.version == version_lineage.version.replace(f"-c{CODE[:8]}", f"-m{MODEL_FORMAT + 1}-c{CODE[:8]}")
    assert version_lineage.difference(bumped.model_copy(update={"version": version_lineage.version})) == (
        f"trained by model format {MODEL_FORMAT}, this code's is {MODEL_FORMAT + 1}"
    )


def test_changed_model_code_retrains_as_a_new_version(run, capsys):
    """Another recorded fingerprint of the model's code (tf_models.model_format) is another model, no bump by hand."""
    config, version_lineage = run
    assert version_lineage.model_code == CODE and version_lineage.version.endswith(f"-c{CODE[:8]}")
    other = "f" * 64
    changes = _changes(config, code=other)
    assert changes.anything_new and changes.changed == [f"model code {CODE[:12]} -> {'f' * 12}"]
    manifest = {"fingerprint": version_lineage.input_fingerprint, "created_at": version_lineage.created_at}
    recoded = Lineage.of(config, manifest, MODEL_FORMAT, other)
    assert recoded.version == version_lineage.version.replace(CODE[:8], "f" * 8)
    assert version_lineage.difference(recoded.model_copy(update={"version": version_lineage.version})) == (
        f"trained by model code {CODE[:12]}, this code's is {'f' * 12}"
    )
    # A version trained before code fingerprints (deployed today) is retrained once by this code.
    older = version_lineage.model_copy(update={"model_code": None})
    lineage.write_lineage(config.run_dir, older)
    assert _changes(config).changed == [f"model code (before code fingerprints) -> {CODE[:12]}"]
    assert jobs.changes.run(config) == 0
    assert "model code (before code fingerprints)" in capsys.readouterr().out


def test_a_failed_version_is_tried_again_once_the_model_code_changes(run):
    config, latest = run
    lineage.write_lineage(
        config.run_dir,
        latest.model_copy(update={"input_fingerprint": _other_content(latest.input_fingerprint, "labels/CTCF")}),
    )
    failed = _version(config, input_fingerprint(config), "2026-01-12T00:00:00Z")
    lineage.write_floor_failure(config.run_dir, failed, (None, None), (0.5, 0.1), ["below"])
    assert _changes(config).failed is not None
    fixed = _changes(config, code="e" * 64)
    assert fixed.anything_new and fixed.failed is None


def test_a_lineage_from_before_model_formats_is_of_the_first():
    """Lineages written before the field keep their names and read as format 1."""
    record = {
        "version": "v",
        "manifest_digest": "m",
        "input_fingerprint": None,
        "training_config_digest": "t",
        "config_digest": "",
        "train": {},
        "shards_uri": "",
        "created_at": "",
        "tfbs_version": "",
    }
    assert Lineage.model_validate(record).model_format == lineage.FIRST_MODEL_FORMAT == 1


# -- content, not checksum kinds --------------------------------------------------------


def test_digests_of_other_kinds_are_compared_by_hashing_the_file_again(tmp_path):
    path = tmp_path / "genome.fa"
    path.write_bytes(b">chr1\nACGT\n")
    uri = storage.to_uri(path)
    local = {"uri": uri, "size": 11, "kind": "blake3", "digest": blake3(path.read_bytes()).hexdigest()}
    in_bucket = {
        "uri": "gs://b/genome.fa",
        "size": 11,
        "kind": "md5",
        "digest": hashlib.md5(path.read_bytes()).hexdigest(),
    }
    now_md5 = {**in_bucket, "uri": uri}
    assert same_content(local, now_md5)  # recorded locally, now in a store that gives MD5
    assert same_content(in_bucket, {**local})  # recorded in a bucket, now local
    path.write_bytes(b">chr1\nACGA\n")
    assert not same_content(local, now_md5) and not same_content(in_bucket, local)
    # CRC32C is not computed here: honestly changed, not assumed equal.
    composed = {**in_bucket, "kind": "crc32c", "digest": "1234abcd"}
    assert not same_content(composed, local)
    fingerprint = {"config": "c", "inputs": {"genome": composed}}
    assert changed_inputs(fingerprint, {"config": "c", "inputs": {"genome": local}}) == ["genome"]


def test_a_seed_motif_file_counts_by_its_bytes_not_its_place(run, data, tmp_path):
    """The first filters' motifs are part of the recipe: the same file elsewhere is nothing new, other bytes are."""
    config, _ = run
    motifs = Path(local_path(config.evaluate.motif_db or ""))
    here, there = tmp_path / "a" / "motifs.meme", tmp_path / "b" / "motifs.meme"
    for path in (here, there):
        path.parent.mkdir()
        shutil.copyfile(motifs, path)
    seeded = [f"data.root={data}", "train.model.motif_cnn.seed_motifs=true"]
    first = small_config(tmp_path, *seeded, f"train.model.motif_cnn.seed_motif_db={here}")
    lineage.write_latest(first.run_dir, _version(first, input_fingerprint(first), "2026-01-19T00:00:00Z"), 0.9, 0.5)
    assert not _changes(first).anything_new
    assert not _changes(small_config(tmp_path, *seeded, f"train.model.motif_cnn.seed_motif_db={there}")).anything_new
    there.write_bytes(there.read_bytes() + b"\n")
    changes = _changes(small_config(tmp_path, *seeded, f"train.model.motif_cnn.seed_motif_db={there}"))
    assert changes.anything_new and changes.changed == ["configuration (train)"]


# -- the labels a run waits for ------------------------------------------------------------


def test_ready_names_the_missing_label_files_until_they_come(data, tmp_path, capsys):
    """``tfbs ready``: exit 0 and ``go`` with every TF's label file, 75 and ``wait`` naming each missing one."""
    config = small_config(tmp_path, f"data.root={data}")
    labels = [config.data.labels_uri(tf) for tf in config.data.tfs]
    assert len(labels) >= 2
    answer = argparse.Namespace(labels=[], verdict=True)
    assert jobs.ready.run(config, answer) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1]) == {
        "verdict": "go",
        "reason": f"all {len(labels)} label files are there: {', '.join(labels)}",
        "labels": labels,
        "missing": [],
    }

    moved = Path(local_path(labels[1]))
    moved.rename(moved.with_name("elsewhere.tsv.gz"))
    try:
        assert jobs.ready.run(config, answer) == jobs.ready.NOT_READY == 75
        verdict = json.loads(capsys.readouterr().out.splitlines()[-1])
        assert (verdict["verdict"], verdict["missing"]) == ("wait", [labels[1]])
        assert verdict["reason"] == f"waiting for 1 of {len(labels)} label files: {labels[1]}"
    finally:
        moved.with_name("elsewhere.tsv.gz").rename(moved)

    # Files named by the run (the DAG's labels param), not the configuration's.
    named = argparse.Namespace(labels=[labels[0], str(tmp_path / "never.tsv.gz")], verdict=False)
    assert jobs.ready.run(config, named) == jobs.ready.NOT_READY
    assert capsys.readouterr().out.strip() == (
        f"waiting for 1 of 2 label files: {storage.to_uri(str(tmp_path / 'never.tsv.gz'))}"
    )
