"""Model versions and their lineage (tfbs.lineage): a rerun on the same shards and
configuration does not retrain, other shards train a new version, a named version
of other inputs is refused, ``LATEST`` moves only when evaluation passes, and
old versions are pruned without touching ``LATEST`` or anything newer.

Two small models are trained in-process (strategy ``local``, 20 steps) on the
session's shards and on a copy of them whose manifest differs.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import SMALL_RUN_MIN_MEAN_AUPRC, small_config

from tf_models import MODEL_FORMAT
from tf_models.protocol import JOINED
from tfbs import lineage, storage
from tfbs.config import ConfigError
from tfbs.errors import BelowFloorError, MissingInputError
from tfbs.lineage import Lineage, LineageError
from tfbs.storage import local_path

#: Short training: two checkpoints of 10 steps.
SHORT = ["train.placement.strategy=local", "train.steps=20", "train.checkpoint_every_steps=10"]


class _Borrowed:
    """The session fixture, lent to a job: the job's ``spark.stop()`` must not end it."""

    def __init__(self, spark) -> None:
        self._spark = spark

    def __getattr__(self, name: str):
        return getattr(self._spark, name)

    def stop(self) -> None:
        pass


def _config(root: Path, shards_uri: str, data_root: str, *extra: str):
    return small_config(root, f"data.root={local_path(data_root)}", f"shards_dir={shards_uri}", *SHORT, *extra)


@pytest.fixture(scope="module")
def first(spark, small_shards, tmp_path_factory):
    """A model trained on the session's shards: (config, manifest, summary)."""
    from tf_models.train import train_on_spark

    shared, manifest = small_shards
    config = _config(tmp_path_factory.mktemp("lineage"), shared.shards_uri, shared.data.root)
    return config, manifest, train_on_spark(spark, config, manifest)


@pytest.fixture(scope="module")
def other_shards(small_shards, tmp_path_factory):
    """A shard directory whose manifest differs from the session's in content (other row-changing settings)."""
    from tfbs.formats.manifest import MANIFEST_NAME, Manifest

    shared, manifest = small_shards
    changed = manifest.model_copy(update={"fingerprint": {**manifest.fingerprint, "config": "0" * 64}})
    shards = tmp_path_factory.mktemp("other-shards")
    (shards / MANIFEST_NAME).write_text(changed.model_dump_json(indent=2))
    return f"file://{shards}", Manifest.model_validate_json((shards / MANIFEST_NAME).read_text())


@pytest.fixture(scope="module")
def second(spark, first, other_shards):
    """The same run trained again on the other shards: (config, manifest, summary)."""
    from tf_models.train import train_on_spark

    config, _, _ = first
    shards_uri, manifest = other_shards
    again = config.model_copy(update={"shards_dir": shards_uri})
    return again, manifest, train_on_spark(spark, again, manifest)


# --------------------------------------------------------------------------
# Digests and names
# --------------------------------------------------------------------------


def test_the_manifest_digest_is_its_contents(small_shards, other_shards):
    shared, manifest = small_shards
    text = Path(local_path(shared.shards_uri), "manifest.json").read_text()
    digest = lineage.manifest_digest(manifest)
    assert re.fullmatch(r"[0-9a-f]{64}", digest)
    # The object, its file (indented) and the parsed dict give one digest.
    assert lineage.manifest_digest(text) == lineage.manifest_digest(json.loads(text)) == digest
    assert lineage.manifest_digest(text.encode()) == digest
    assert lineage.manifest_digest(other_shards[1]) != digest


def test_identical_shards_rebuilt_or_moved_keep_their_version(small_shards, tmp_path):
    """The version is named by what the shards hold, not when or where they were built (schema 8)."""
    shared, manifest = small_shards
    config = _config(tmp_path, shared.shards_uri, shared.data.root)
    version = Lineage.of(config, manifest, MODEL_FORMAT).version
    root = shared.shards_uri.rstrip("/")

    def moved(path: str) -> str:
        return path.replace(root, "hdfs://nn/elsewhere/shards", 1)

    rebuilt = manifest.model_copy(
        update={
            "created_unix": manifest.created_unix + 86_400,  # rebuilt a day later
            "config_digest": "0" * 64,  # from a configuration with another run_dir
            "parquet": {
                split: [f.model_copy(update={"path": moved(f.path)}) for f in files]
                for split, files in manifest.parquet.items()
            },
        }
    )
    assert lineage.manifest_digest(rebuilt) == lineage.manifest_digest(manifest)
    assert Lineage.of(config, rebuilt, MODEL_FORMAT).version == version
    # Other bytes in one file are other shards.
    first_test = manifest.parquet["test"][0].model_copy(update={"blake3": "0" * 64})
    other = manifest.model_copy(
        update={"parquet": {**manifest.parquet, "test": [first_test, *manifest.parquet["test"][1:]]}}
    )
    assert Lineage.of(config, other, MODEL_FORMAT).version != version


def test_the_manifest_names_its_files_relative_to_its_folder(small_shards, tmp_path):
    """manifest.json holds paths relative to the shard folder; a copy of the folder reads its own files."""
    import shutil

    from tfbs.formats.manifest import MANIFEST_NAME, SCHEMA_VERSION, read_manifest

    shared, manifest = small_shards
    stored = json.loads(Path(local_path(shared.shards_uri), MANIFEST_NAME).read_text())
    assert stored["schema_version"] == SCHEMA_VERSION == 8
    paths = [f["path"] for files in stored["parquet"].values() for f in files]
    paths += [f["path"] for split in stored["records"].values() for f in split["positives"]]
    assert paths and all(not p.startswith("/") and "://" not in p for p in paths), paths[:3]
    copy = tmp_path / "moved-shards"
    shutil.copytree(local_path(shared.shards_uri), copy)
    moved = read_manifest(copy.as_uri())
    read_paths = [f.path for files in moved.parquet.values() for f in files]
    assert len(read_paths) == len(stored["parquet"]["test"]) + sum(
        len(f) for k, f in stored["parquet"].items() if k != "test"
    )
    assert all(p.startswith(f"{copy.as_uri()}/") and Path(local_path(p)).is_file() for p in read_paths)
    assert lineage.manifest_digest(moved) == lineage.manifest_digest(manifest)


def test_version_names_are_deterministic(small_shards, tmp_path):
    shared, manifest = small_shards
    config = _config(tmp_path, shared.shards_uri, shared.data.root)
    version_lineage = Lineage.of(config, manifest, MODEL_FORMAT)
    digest = lineage.manifest_digest(manifest)
    assert version_lineage.version == f"{digest[:10]}-{lineage.training_config_digest(config)[:8]}"
    assert (
        Lineage.of(_config(tmp_path, shared.shards_uri, shared.data.root), manifest, MODEL_FORMAT).version
        == version_lineage.version
    )
    assert version_lineage.input_fingerprint == manifest.fingerprint and version_lineage.manifest_digest == digest

    # Where, how spread and how long training runs is no part of the model; what it learns is.
    same = _config(
        tmp_path,
        shared.shards_uri,
        shared.data.root,
        "train.placement.strategy=multi_worker_mirrored",
        "train.placement.num_workers=3",
        "train.placement.timeout_s=60",
    )
    assert Lineage.of(same, manifest, MODEL_FORMAT).version == version_lineage.version
    longer = _config(tmp_path, shared.shards_uri, shared.data.root, "train.steps=30")
    wider = _config(tmp_path, shared.shards_uri, shared.data.root, "train.model.dense_units=8")
    assert (
        len(
            {
                version_lineage.version,
                Lineage.of(longer, manifest, MODEL_FORMAT).version,
                Lineage.of(wider, manifest, MODEL_FORMAT).version,
            }
        )
        == 3
    )
    assert Lineage.of(longer, manifest, MODEL_FORMAT).version.startswith(digest[:10])

    # The known motifs the first filters start as are part of what it learns from; unseeded, they are not.
    motifs = {**config.evaluate.motifs, "CTCF": "CTCF_f1"}
    chosen = [f"evaluate.motif_db={config.evaluate.motif_db}", f"evaluate.motifs={json.dumps(motifs)}"]
    other_motif = _config(tmp_path, shared.shards_uri, shared.data.root, *chosen)
    assert Lineage.of(other_motif, manifest, MODEL_FORMAT).version != version_lineage.version
    assert "train.seed_motifs_from.motifs.CTCF='CTCF_f2' (now 'CTCF_f1')" in version_lineage.difference(
        Lineage.of(other_motif, manifest, MODEL_FORMAT)
    )
    unseeded = ["train.model.motif_cnn.seed_motifs=false"]
    assert (
        Lineage.of(_config(tmp_path, shared.shards_uri, shared.data.root, *unseeded), manifest, MODEL_FORMAT).version
        == Lineage.of(
            _config(tmp_path, shared.shards_uri, shared.data.root, *unseeded, *chosen), manifest, MODEL_FORMAT
        ).version
    )

    named = _config(tmp_path, shared.shards_uri, shared.data.root, "train.version=v1")
    assert Lineage.of(named, manifest, MODEL_FORMAT).version == "v1"
    assert Lineage.of(named, manifest, MODEL_FORMAT).training_config_digest == version_lineage.training_config_digest
    for bad in ("LATEST", "../v1", "a b"):
        with pytest.raises(ConfigError, match="train.version"):
            _config(tmp_path, shared.shards_uri, shared.data.root, f"train.version={bad}")


def test_a_model_reading_expression_has_its_rna_seq_in_its_recipe(tmp_path):
    """Another RNA-seq file is another recipe when the model reads expression, and no change when it does not."""
    rnaseq = tmp_path / "data" / "rnaseq"
    rnaseq.mkdir(parents=True)
    (rnaseq / "gene_expression.K562.biorep1.tsv").write_text("gene_id\tTPM\nCTCF\t5.0\n")
    reads = small_config(tmp_path, f"data.rnaseq_dir={rnaseq}", "train.model.use_expression=true")
    ignores = small_config(tmp_path, f"data.rnaseq_dir={rnaseq}")
    before = [lineage.training_config_digest(config) for config in (reads, ignores)]
    assert list(lineage.training_config(reads)["expression_from"]) == ["gene_expression.K562.biorep1.tsv"]
    (rnaseq / "gene_expression.K562.biorep1.tsv").write_text("gene_id\tTPM\nCTCF\t50.0\n")
    assert lineage.training_config_digest(reads) != before[0]
    assert lineage.training_config_digest(ignores) == before[1]


def test_the_lineage_is_written_before_training(small_shards, tmp_path):
    from tf_models.versions import prepare_version

    shared, manifest = small_shards
    config = _config(tmp_path, shared.shards_uri, shared.data.root)
    version_lineage, up_to_date = prepare_version(config, manifest)
    assert not up_to_date
    on_disk = json.loads(Path(local_path(lineage.lineage_uri(config.run_dir, version_lineage.version))).read_text())
    assert on_disk["manifest_digest"] == lineage.manifest_digest(manifest)
    assert on_disk["shards_uri"] == shared.shards_uri and on_disk["train"]["steps"] == 20
    assert "placement" not in on_disk["train"] and "version" not in on_disk["train"]
    model_dir = Path(local_path(lineage.model_uri(config.run_dir, version_lineage.version)))
    assert [path.name for path in model_dir.iterdir()] == ["lineage.json"]


def test_evaluate_names_a_version_never_trained(small_shards, tmp_path):
    import jobs.evaluate

    shared, _ = small_shards
    config = _config(tmp_path, shared.shards_uri, shared.data.root)
    with pytest.raises(MissingInputError) as missing:
        jobs.evaluate.run(config)
    assert re.fullmatch(
        rf"{config.run_dir}/models/[0-9a-f]{{10}}-[0-9a-f]{{8}}-c[0-9a-f]{{8}}/lineage.json: not found "
        r"\(run `tfbs train` first\)",
        str(missing.value),
    )


def test_evaluate_names_the_version_a_newer_setting_hides(tmp_path):
    """A setting added since training (absent from the trained lineage) names another version: the error says which."""
    run_dir = str(tmp_path / "run")
    now = Lineage(
        version="aaaa-new",
        manifest_digest="3fa2" * 16,
        input_fingerprint=None,
        training_config_digest="c" * 64,
        config_digest="",
        train={"steps": 60, "weight_average": None, "model": {"dropout": 0.5}},
        shards_uri="",
        created_at="2026-12-03T00:00:00Z",
        tfbs_version="",
    )
    trained = now.model_copy(
        update={
            "version": "aaaa-old",
            "training_config_digest": "d" * 64,
            "train": {"steps": 60, "model": {"dropout": 0.4}},
        }
    )
    other_shards = trained.model_copy(update={"version": "bbbb-old", "manifest_digest": "9c01" * 16})
    for on_disk in (trained, other_shards):
        lineage.write_lineage(run_dir, on_disk)
    with pytest.raises(MissingInputError) as missing:
        lineage.require_lineage(run_dir, now)
    assert str(missing.value) == (
        f"{run_dir}/models/aaaa-new/lineage.json: not found (run `tfbs train` first, or evaluate with the settings "
        "aaaa-old of these shards was made with: trained with train.model.dropout=0.4 (now 0.5), "
        "train.weight_average=<no such setting> (now None))"
    )
    lineage.write_lineage(run_dir, now)
    assert lineage.require_lineage(run_dir, now) == now


# --------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------


def test_a_second_train_on_the_same_shards_does_not_retrain(spark, first, monkeypatch):
    import jobs.train
    from tf_models.train import train_on_spark

    config, manifest, summary = first
    assert not summary["up_to_date"] and [h["step"] for h in summary["history"]] == [10, 20]
    model_dir = Path(local_path(summary["model_uri"]))
    written = {path: path.stat().st_mtime_ns for path in model_dir.rglob("*") if path.is_file()}
    assert model_dir / "export" / "saved_model.pb" in written

    again = train_on_spark(spark, config, manifest)
    assert again["up_to_date"] and again["version"] == summary["version"]
    assert again["history"] == summary["history"]

    # The job finds it up to date before any Spark session starts.
    def no_spark(*args, **kwargs):
        raise AssertionError("an up-to-date model started Spark")

    monkeypatch.setattr("tfbs.launch.session.build_session", no_spark)
    assert jobs.train.run(config)["up_to_date"]
    assert {path: path.stat().st_mtime_ns for path in model_dir.rglob("*") if path.is_file()} == written


def test_other_shards_train_a_new_version(first, second):
    config, manifest, summary = first
    again, other, retrained = second
    assert not retrained["up_to_date"] and retrained["version"] != summary["version"]
    assert retrained["version"].startswith(lineage.manifest_digest(other)[:10])
    assert retrained["version"].endswith(summary["version"][-8:])  # the same train section
    lineages = {version_lineage.version: version_lineage for version_lineage in lineage.list_versions(config.run_dir)}
    assert set(lineages) == {summary["version"], retrained["version"]}
    assert lineages[retrained["version"]].shards_uri == again.shards_uri
    export = Path(local_path(lineage.export_uri(config.run_dir, retrained["version"])), "tfbs_metadata.json")
    assert json.loads(export.read_text())["manifest_digest"] == lineage.manifest_digest(other)


def test_a_named_version_of_other_inputs_is_refused(spark, first, other_shards):
    from tf_models.evaluate import evaluate
    from tf_models.train import train_on_spark

    config, manifest, summary = first
    version = summary["version"]
    lineage_file = Path(local_path(lineage.lineage_uri(config.run_dir, version)))
    before = lineage_file.read_bytes()
    shards_uri, other = other_shards
    named = config.model_copy(
        update={"shards_dir": shards_uri, "train": config.train.model_copy(update={"version": version})}
    )
    old, new = lineage.manifest_digest(manifest), lineage.manifest_digest(other)
    expected = (
        f"{lineage.lineage_uri(config.run_dir, version)}: trained from shards manifest {old[:12]}, "
        f"these shards are {new[:12]}; set train.version to a new name"
    )
    with pytest.raises(LineageError) as refused:
        train_on_spark(spark, named, other)
    assert str(refused.value) == expected
    with pytest.raises(LineageError, match=re.escape(expected)):
        evaluate(spark, named, other)

    longer = config.model_copy(update={"train": config.train.model_copy(update={"version": version, "steps": 30})})
    with pytest.raises(LineageError, match=r"lineage.json: trained with train.steps=20 \(now 30\); set train.version"):
        train_on_spark(spark, longer, manifest)
    assert lineage_file.read_bytes() == before


def test_a_moved_run_trains_nothing(first, tmp_path, monkeypatch):
    """The run folder (its shards and models) moved elsewhere: the same version, up to date, no Spark."""
    import shutil

    import jobs.train
    from tf_models.versions import prepare_version
    from tfbs.formats.manifest import read_manifest

    config, _, summary = first
    moved_shards, moved_run = tmp_path / "moved" / "shards", tmp_path / "moved" / "run"
    shutil.copytree(local_path(config.shards_uri), moved_shards)
    shutil.copytree(local_path(config.run_dir), moved_run)
    moved = config.model_copy(update={"shards_dir": moved_shards.as_uri(), "run_dir": moved_run.as_uri()})
    manifest = read_manifest(moved.shards_uri)
    assert all(f.path.startswith(moved_shards.as_uri()) for f in manifest.records["train"].positives)
    version_lineage, up_to_date = prepare_version(moved, manifest)
    assert up_to_date and version_lineage.version == summary["version"]

    def no_spark(*args, **kwargs):
        raise AssertionError("a moved run started Spark")

    monkeypatch.setattr("tfbs.launch.session.build_session", no_spark)
    assert jobs.train.run(moved)["up_to_date"]


def test_a_truncated_export_is_trained_and_exported_again(spark, first, tmp_path):
    """A variables file cut short after export (all files still there): the next train is not up to date,
    resumes from the version's checkpoint and writes a whole export again."""
    import shutil

    from tf_models.train import train_on_spark
    from tf_models.versions import finished_export, prepare_version
    from tfbs.formats.manifest import read_manifest

    config, _, summary = first
    moved_run = tmp_path / "run"  # a copy: the module's other tests keep the original
    shutil.copytree(local_path(config.run_dir), moved_run)
    damaged = config.model_copy(update={"run_dir": moved_run.as_uri()})
    manifest = read_manifest(damaged.shards_uri)
    export = lineage.export_uri(damaged.run_dir, summary["version"])
    (data,) = Path(local_path(export), "variables").glob("variables.data-*")
    data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])
    version_lineage, up_to_date = prepare_version(damaged, manifest)
    assert not up_to_date and version_lineage.version == summary["version"]
    assert lineage.export_problem(export, version_lineage).startswith(f"{export}/variables/{data.name}: not the bytes")

    again = train_on_spark(spark, damaged, manifest)
    assert not again["up_to_date"] and again["version"] == summary["version"]
    assert finished_export(export, version_lineage)
    assert [h["step"] for h in again["history"]] == [10, 20]  # resumed at the end: no step trained twice


# --------------------------------------------------------------------------
# Evaluation moves LATEST; prediction follows it
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def promoted(spark, first, second):
    """The first version evaluated without a floor, then the second below one: (LATEST bytes, error)."""
    from tf_models.evaluate import evaluate

    config, manifest, _ = first
    assert lineage.read_latest(config.run_dir) is None
    evaluate(spark, config, manifest)
    latest = Path(local_path(lineage.latest_uri(config.run_dir))).read_bytes()
    again, other, _ = second
    strict = again.model_copy(update={"evaluate": again.evaluate.model_copy(update={"min_mean_auroc": 1.0})})
    with pytest.raises(BelowFloorError) as refused:
        evaluate(spark, strict, other)
    return latest, str(refused.value)


def test_latest_moves_only_when_evaluation_passes_its_floor(first, second, promoted):
    config, _, summary = first
    _, _, retrained = second
    latest_bytes, error = promoted
    latest = json.loads(latest_bytes)
    assert set(latest) == {"version", "manifest_digest", "mean_auroc", "mean_auprc", "promoted_at"}
    assert latest["version"] == summary["version"]
    # What was promoted is what was evaluated: the version's own report, means and all.
    evaluated = json.loads(
        Path(local_path(lineage.report_uri(config.run_dir, summary["version"])), "report.json").read_text()
    )
    assert (latest["mean_auroc"], latest["mean_auprc"]) == (evaluated["mean_auroc"], evaluated["mean_auprc"])
    assert evaluated["mean_auprc"] > SMALL_RUN_MIN_MEAN_AUPRC, evaluated["results"]  # a model that learned

    # Below the floor: the report is written in its version, LATEST and the run's report stay.
    assert "below evaluate.min_mean_auroc 1.0" in error and error.endswith(f"still names {summary['version']}")
    assert Path(local_path(lineage.latest_uri(config.run_dir))).read_bytes() == latest_bytes
    refused_report = Path(local_path(lineage.report_uri(config.run_dir, retrained["version"])), "report.json")
    assert json.loads(refused_report.read_text())["floors"]["passed"] is False
    # ... and recorded for `tfbs changes`, with the floors it was held to; the passing version has no record.
    failure = lineage.read_floor_failure(config.run_dir, retrained["version"])
    assert (
        failure is not None and failure.min_mean_auroc == 1.0 and "below evaluate.min_mean_auroc" in failure.failures[0]
    )
    assert lineage.read_floor_failure(config.run_dir, summary["version"]) is None
    run_report = json.loads(Path(local_path(lineage.run_report_uri(config.run_dir)), "report.json").read_text())
    assert run_report["version"] == summary["version"]
    assert run_report["lineage"]["manifest_digest"] == latest["manifest_digest"]


def test_predict_uses_latest(spark, first, second, promoted, tmp_path, monkeypatch, capsys):
    import gzip

    import jobs.predict

    config, _, summary = first
    _, _, retrained = second
    monkeypatch.setattr("tfbs.launch.session.build_session", lambda *args, **kwargs: _Borrowed(spark))
    regions = tmp_path / "regions.bed"
    regions.write_text("chr8\t10000\t10200\nchr21\t5000\t5200\n")
    args = argparse.Namespace(regions=str(regions), tf="CTCF", cell="K562", out=None, model_version=None)
    assert jobs.predict.run(config, args) == 2
    submission = Path(local_path(lineage.report_uri(config.run_dir, summary["version"])), "F.CTCF.K562.tab.gz")
    assert len(gzip.decompress(submission.read_bytes()).splitlines()) == 2

    # A submission of every bin of chr8 (two partitions' worth), validated, with its tracks.
    import pyBigWig

    from tf_models.tracks import read_submission, step_maxima
    from tfbs.formats.submission import write_genome_bins

    bins = write_genome_bins(config.data.genome_fasta, ["chr8"], storage.to_uri(tmp_path / "chr8.bed.gz"))
    assert bins == (60000 - 200) // 50 + 1
    args.regions = str(tmp_path / "chr8.bed.gz")
    capsys.readouterr()
    assert jobs.predict.run(config, args) == bins
    printed = capsys.readouterr().out
    # The version's evaluation kept its gradient-boosted baseline: the submission is the joined scorer's.
    assert f"({bins} rows, model version {summary['version']}, scored by {JOINED}), valid against" in printed
    table = read_submission(storage.to_uri(submission))
    starts, maxima, step = step_maxima(*(table.column(c).to_numpy() for c in ("start", "stop", "probability")))
    track = pyBigWig.open(str(submission.parent / "CTCF.K562.probability.bw"))
    assert track.chroms("chr8") == 60000 and step == 50
    assert [(s, e) for s, e, _ in track.intervals("chr8")] == [(s, s + 50) for s in starts.tolist()]
    assert np.allclose([v for _, _, v in track.intervals("chr8")], maxima, atol=1e-6)  # float32 in a bigWig
    report = json.loads(
        Path(local_path(lineage.report_uri(config.run_dir, summary["version"])), "report.json").read_text()
    )
    threshold = report["baselines"]["CTCF/K562"][JOINED]["threshold_at_fdr_10"]
    bed = submission.parent / "CTCF.K562.fdr10.bed.gz"
    if threshold is None:
        assert not bed.exists() and "no 10% FDR threshold for CTCF/K562" in printed
    else:
        called = gzip.decompress(bed.read_bytes()).decode().splitlines()[1:]
        probability = table.column("probability").to_numpy()
        assert len(called) == int((probability >= threshold).sum())
    section = json.loads((submission.parent / "predictions.json").read_text())
    assert [row[:4] for row in section["rows"]] == [
        ["CTCF/K562", JOINED, storage.to_uri(tmp_path / "chr8.bed.gz"), bins]
    ]
    args.regions = str(regions)

    # Another version on request, even one below the floor.
    args.model_version = retrained["version"]
    assert jobs.predict.run(config, args) == 2
    assert Path(local_path(lineage.report_uri(config.run_dir, retrained["version"])), "F.CTCF.K562.tab.gz").exists()

    # No LATEST yet: one line, naming the file.
    fresh = config.model_copy(update={"run_dir": f"file://{tmp_path}/fresh"})
    args.model_version = None
    with pytest.raises(MissingInputError) as missing:
        jobs.predict.run(fresh, args)
    message = str(missing.value)
    assert message.startswith(f"file://{tmp_path}/fresh/models/LATEST: not found") and "\n" not in message


def _version(run_dir: str, name: str, created_at: str) -> Lineage:
    """A version folder with its lineage and an export file, as training leaves it."""
    version_lineage = Lineage(
        version=name,
        manifest_digest=name * 8,
        input_fingerprint=None,
        training_config_digest="c" * 64,
        config_digest="",
        train={},
        shards_uri="",
        created_at=created_at,
        tfbs_version="",
    )
    lineage.write_lineage(run_dir, version_lineage)
    storage.write_text(f"{lineage.export_uri(run_dir, name)}/saved_model.pb", name)
    return version_lineage


def test_pruning_keeps_latest_its_newest_elders_and_everything_after_it(tmp_path):
    run_dir = storage.to_uri(tmp_path)
    made = [_version(run_dir, f"v{i}", f"2026-01-0{i}T00:00:00Z") for i in range(1, 8)]
    assert lineage.prune_versions(run_dir, keep=3) == []  # nothing has passed evaluation yet
    lineage.write_latest(run_dir, made[4], 0.9, 0.5)  # v5; v6 and v7 came after it

    assert lineage.prune_versions(run_dir, keep=3) == ["v1", "v2"]
    left = sorted(p.name for p in (tmp_path / "models").iterdir())
    assert left == ["LATEST", "v3", "v4", "v5", "v6", "v7"]
    assert [version_lineage.version for version_lineage in lineage.list_versions(run_dir)] == [
        "v3",
        "v4",
        "v5",
        "v6",
        "v7",
    ]
    assert lineage.prune_versions(run_dir, keep=3) == []  # idempotent
    assert lineage.prune_versions(run_dir, keep=1) == ["v3", "v4"]
    assert lineage.read_latest(run_dir).version == "v5"
    assert (tmp_path / "models" / "v5" / "export" / "saved_model.pb").read_text() == "v5"


def test_a_prune_cut_short_is_finished_by_the_next(tmp_path):
    run_dir = storage.to_uri(tmp_path)
    made = [_version(run_dir, f"v{i}", f"2026-01-0{i}T00:00:00Z") for i in range(1, 4)]
    lineage.write_latest(run_dir, made[2], 0.9, 0.5)
    # Killed after the export went, before the lineage: still a listed version.
    (tmp_path / "models" / "v1" / "export" / "saved_model.pb").unlink()
    assert [version_lineage.version for version_lineage in lineage.list_versions(run_dir)] == ["v1", "v2", "v3"]
    assert lineage.prune_versions(run_dir, keep=2) == ["v1"]
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == ["LATEST", "v2", "v3"]
