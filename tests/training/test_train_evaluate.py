"""Training, export and evaluation on the small shards.

The in-process loop (default strategy) is tested here with the Spark-driven
evaluation; TensorFlowOnSpark on a local-cluster is tested end to end through
the CLI in ``test_tfos.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from conftest import SMALL_RUN_MIN_MEAN_AUPRC, model_inputs, small_config

from tf_models.evaluate import evaluate
from tf_models.protocol import JOINED, SCORERS
from tf_models.train import train_on_spark
from tfbs import lineage
from tfbs.errors import BelowFloorError
from tfbs.storage import local_path


@pytest.fixture(scope="module")
def trained(spark, small_shards, tmp_path_factory):
    """A model trained in-process on the small shards (own run_dir, shared shards)."""
    config, manifest = small_shards
    run_config = small_config(
        tmp_path_factory.mktemp("local-train"),
        f"data.root={local_path(config.data.root)}",
        f"shards_dir={config.shards_uri}",
        "train.placement.strategy=local",
    )
    summary = train_on_spark(spark, run_config, manifest)
    return run_config, manifest, summary


def _export(trained) -> str:
    """The local path of the trained version's export."""
    config, _, summary = trained
    return local_path(lineage.export_uri(config.run_dir, summary["version"]))


def test_history_and_checkpoints(trained):
    config, _, summary = trained
    model_dir = local_path(lineage.model_uri(config.run_dir, summary["version"]))
    assert not summary["up_to_date"] and summary["model_uri"].endswith(f"/models/{summary['version']}")
    steps = [h["step"] for h in summary["history"]]
    assert steps == [30, 60]
    assert all(np.isfinite(h["loss"]) and h["examples_per_s"] > 0 for h in summary["history"])
    assert tf.train.latest_checkpoint(f"{model_dir}/checkpoints").endswith("ckpt-60")
    assert tf.io.gfile.glob(f"{model_dir}/tensorboard/events.out.tfevents.*")
    assert json.loads(Path(f"{model_dir}/history.json").read_text()) == summary["history"]
    assert tf.io.gfile.stat(f"{model_dir}/history.png").length > 1000
    # Validation auPRC at every checkpoint; the best one is kept apart.
    assert all(0 < h["valid_auprc"] <= 1 for h in summary["history"])
    best_step = max(summary["history"], key=lambda h: h["valid_auprc"])["step"]
    assert tf.train.latest_checkpoint(f"{model_dir}/best").endswith(f"ckpt-{best_step}")


def test_early_stopping_keeps_the_best_and_survives_resume():
    from tf_models.train_progress import EarlyStopping

    stopping = EarlyStopping(2, [])
    marks = [stopping.update(step, auprc) for step, auprc in [(10, 0.5), (20, 0.7), (30, 0.6), (40, 0.7)]]
    assert marks == [{"best": True}, {"best": True}, {}, {"stopped_early": True}]
    assert (stopping.best_step, stopping.stopped) == (20, True)
    history = [{"step": 10, "valid_auprc": 0.5}, {"step": 20, "valid_auprc": 0.7}, {"step": 30, "valid_auprc": 0.6}]
    resumed = EarlyStopping(2, history)
    assert (resumed.best_step, resumed.waited, resumed.stopped) == (20, 1, False)
    assert resumed.update(40, 0.65) == {"stopped_early": True}
    assert EarlyStopping(None, history).update(40, 0.1) == {}  # off: never stops


def test_export_serves_sequences_and_indices_alike(trained):
    _, manifest, summary = trained
    model = tf.saved_model.load(_export(trained))
    window = manifest.window
    rng = np.random.default_rng(0)
    dna = [bytes(rng.choice(list(b"ACGT"), window).astype(np.uint8)) for _ in range(4)]
    cells = tf.constant([0, 1, 2, 0])
    dnase = tf.constant([0.0, 1.0, 0.0, 1.0])
    by_index = model.signatures["indexed"](
        dna=tf.constant(dna), tf_index=tf.constant([0, 1, 0, 1]), cell_index=cells, dnase=dnase
    )["probability"].numpy()
    proteins = [manifest.proteins[manifest.tfs[i]].encode() for i in (0, 1, 0, 1)]
    by_sequence = model.signatures["serving_default"](
        dna=tf.constant(dna), protein=tf.constant(proteins), cell_index=cells, dnase=dnase
    )["probability"].numpy()
    np.testing.assert_allclose(by_index, by_sequence, rtol=1e-5, atol=1e-6)
    assert ((by_index > 0) & (by_index < 1)).all()
    metadata = json.loads(Path(_export(trained), "tfbs_metadata.json").read_text())
    assert metadata["tfs"] == manifest.tfs and metadata["steps"] == 60
    assert metadata["version"] == summary["version"]
    assert metadata["manifest_digest"] == lineage.manifest_digest(manifest)


def test_a_killed_run_resumes_within_its_version(spark, trained, tmp_path):
    """A copy of the trained version, set back to its state when killed after step 30: the
    same command resumes from that checkpoint, in the same version folder."""
    import shutil

    config, manifest, summary = trained
    rerun = config.model_copy(update={"run_dir": f"file://{tmp_path}/run"})
    source = local_path(lineage.model_uri(config.run_dir, summary["version"]))
    model_dir = local_path(lineage.model_uri(rerun.run_dir, summary["version"]))
    shutil.copytree(source, model_dir, ignore=shutil.ignore_patterns("export"))
    checkpoints = Path(model_dir, "checkpoints")
    for newer in checkpoints.glob("ckpt-60.*"):
        newer.unlink()
    (checkpoints / "checkpoint").write_text('model_checkpoint_path: "ckpt-30"\nall_model_checkpoint_paths: "ckpt-30"\n')

    resumed = train_on_spark(spark, rerun, manifest)
    assert resumed["version"] == summary["version"] and not resumed["up_to_date"]
    assert [h["step"] for h in resumed["history"]] == [30, 60]
    # The entry up to the checkpoint is carried over, not retrained.
    assert resumed["history"][0] == summary["history"][0]
    assert tf.train.latest_checkpoint(str(checkpoints)).endswith("ckpt-60")
    assert json.loads(Path(model_dir, "export", "tfbs_metadata.json").read_text())["steps"] == 60


@pytest.fixture(scope="module")
def evaluated(spark, trained) -> dict:
    """The evaluation report of the trained model (written under its run_dir)."""
    config, manifest, _ = trained
    return evaluate(spark, config, manifest)


def test_evaluation_report(trained, evaluated):
    config, manifest, summary = trained
    report = evaluated
    keys = {f"{tf}/{cell}" for tf, cells in manifest.counts.items() for cell in cells}
    assert set(report["results"]) == keys
    for key, result in report["results"].items():
        tf_name, cell = key.split("/")
        kept = manifest.counts[tf_name][cell].kept["test"]
        assert (result["n_pos"], result["n_neg"], result["n_ambiguous"]) == (kept["B"], kept["U"], kept.get("A", 0))
        for metric in ("auroc", "auprc", "recall_at_fdr_10", "recall_at_fdr_50"):
            assert 0.0 <= result[metric] <= 1.0
    report_dir = local_path(lineage.report_uri(config.run_dir, summary["version"]))
    on_disk = json.loads(Path(report_dir, "report.json").read_text())
    assert on_disk["mean_auroc"] == pytest.approx(np.mean([r["auroc"] for r in report["results"].values()]))
    assert on_disk["mean_auprc"] > SMALL_RUN_MIN_MEAN_AUPRC, report["results"]  # a model that learned
    assert on_disk["version"] == summary["version"]
    assert on_disk["lineage"] == json.loads(
        Path(local_path(lineage.lineage_uri(config.run_dir, summary["version"]))).read_text()
    )
    assert on_disk["floors"] == {
        "min_mean_auroc": None,
        "min_mean_auprc": None,
        "min_auprc_margin": None,
        "margin_baselines": ["dnase", "motif_scan"],
        "passed": True,
    }
    for name in ("curves.png", "baselines.png"):
        assert tf.io.gfile.stat(f"{report_dir}/{name}").length > 1000
    # No floor: the version is LATEST, and the run's report is a copy of its report.
    latest = lineage.read_latest(config.run_dir)
    assert (latest.version, latest.mean_auroc) == (summary["version"], pytest.approx(report["mean_auroc"]))
    run_report = local_path(lineage.run_report_uri(config.run_dir))
    for name in ("report.json", "curves.png", "baselines.png"):
        assert Path(run_report, name).read_bytes() == Path(report_dir, name).read_bytes()


def test_baselines_are_scored_on_the_models_rows(evaluated):
    """Beside every TF/cell: the winners' kind of method, DNase alone and weighted motif matches, the motif
    scan of the generator's motifs and the generator's references, on exactly the rows the model was scored on."""
    report = evaluated
    assert set(report["baselines"]) == set(report["results"])
    for key, baselines in report["baselines"].items():
        # Every baseline and reference, and the model joined to the boosted baseline.
        assert (
            set(baselines)
            == {*SCORERS}
            == {
                "boosted",
                "dnase_motif",
                "dnase",
                "motif_scan",
                JOINED,
                "coarse_pwm_reference",
                "oracle",
            }
        )
        # On the basic profile every bound site is open: reading motifs beside DNase beats either alone.
        assert baselines["boosted"]["auprc"] > max(baselines["dnase"]["auprc"], baselines["motif_scan"]["auprc"]), key
        for figures in baselines.values():
            counts = ("n_pos", "n_neg", "n_ambiguous")
            assert [figures[c] for c in counts] == [report["results"][key][c] for c in counts]
        # The oracle knows the odds the labels were drawn with; the PWM alone does not.
        assert baselines["oracle"]["auprc"] > baselines["motif_scan"]["auprc"] > 0.05, key
        # The coarse-PWM reference knows less than the oracle (hidden kinds, strengths, motif-less sites).
        assert baselines["coarse_pwm_reference"]["auprc"] <= baselines["oracle"]["auprc"] + 0.02, key
    means = report["baseline_mean_auprc"]
    assert means["motif_scan"] < means["coarse_pwm_reference"] < means["oracle"]
    for name in ("motif_scan", "coarse_pwm_reference", "oracle"):
        mean = np.mean([b[name]["auprc"] for b in report["baselines"].values()])
        assert report["baseline_mean_auprc"][name] == pytest.approx(mean)
    below = sorted(
        k for k, b in report["baselines"].items() if report["results"][k]["auprc"] <= b["motif_scan"]["auprc"]
    )
    assert report["below_motif_scan"] == below


def test_evaluation_floor_fails_loudly(spark, trained, evaluated):
    config, manifest, summary = trained
    floors = {"min_mean_auroc": 1.0, "min_mean_auprc": 1.0}
    strict = config.model_copy(update={"evaluate": config.evaluate.model_copy(update=floors)})
    with pytest.raises(BelowFloorError) as refused:
        evaluate(spark, strict, manifest)
    message = str(refused.value)
    assert "\n" not in message and message.startswith(lineage.report_uri(config.run_dir, summary["version"]))
    assert "below evaluate.min_mean_auroc 1.0" in message and "below evaluate.min_mean_auprc 1.0" in message
    assert message.endswith(f"models/LATEST still names {summary['version']}")


def test_predict_writes_a_submission_in_region_order_joined_to_the_kept_baseline(spark, trained, evaluated, tmp_path):
    """Test rows in shuffled order: the submission keeps the order and scores each row as the evaluation
    scored it joined to the gradient-boosted baseline it kept; with predict.joined off, as the network alone."""
    import gzip

    import pyarrow.parquet as pq
    from pyfaidx import Fasta

    from tf_models.predict import predict_regions
    from tf_models.protocol import joined_probability
    from tfbs.formats.genome import window_starts

    config, manifest, summary = trained
    test_files = [local_path(f.path) for f in manifest.parquet["test"] if "/CTCF/" in f.path]
    shards = pq.read_table(test_files).to_pylist()
    rows = [r for r in shards if r["cell"] == "K562" and r["chrom"] in ("chr8", "chr21")][:40]
    genome = Fasta(local_path(config.data.genome_fasta), as_raw=True, sequence_always_upper=True)
    window = manifest.window
    for row in rows:
        low = int(window_starts(np.array([row["start"]]), window)[0])
        row["sequence"] = genome[row["chrom"]][low : low + window].encode()
    order = np.random.default_rng(1).permutation(len(rows))
    regions = tmp_path / "regions.bed"
    regions.write_text("".join(f"{rows[i]['chrom']}\t{rows[i]['start']}\t{rows[i]['start'] + 200}\n" for i in order))
    export = lineage.export_uri(config.run_dir, summary["version"])

    def submitted(run_config, name: str) -> list[list[str]]:
        out = f"file://{tmp_path}/{name}/F.CTCF.K562.tab.gz"
        assert predict_regions(spark, run_config, export, f"file://{regions}", "CTCF", "K562", out) == len(rows)
        return [line.split("\t") for line in gzip.decompress(Path(local_path(out)).read_bytes()).decode().splitlines()]

    joined = submitted(config, "joined")
    assert [(c, int(s)) for c, s, _, _ in joined] == [(rows[i]["chrom"], rows[i]["start"]) for i in order]
    model = tf.saved_model.load(_export(trained))
    network = model.signatures["indexed"](
        dna=tf.constant([rows[i]["sequence"] for i in order]),
        tf_index=tf.constant([rows[i]["tf_index"] for i in order]),
        cell_index=tf.constant([rows[i]["cell_index"] for i in order]),
        dnase=tf.constant([rows[i]["dnase"] for i in order]),
    )["probability"].numpy()
    # The evaluation's boosted column for the same test rows.
    report_dir = local_path(lineage.report_uri(config.run_dir, summary["version"]))
    scored = pq.read_table(f"{report_dir}/predictions").to_pandas()
    scored = scored[(scored.tf == "CTCF") & (scored.cell == "K562")].set_index(["chrom", "start"])
    boosted = np.array([scored.loc[(rows[i]["chrom"], rows[i]["start"]), "boosted"] for i in order])
    expected = joined_probability(network, boosted)
    np.testing.assert_allclose([float(p) for *_, p in joined], expected, atol=2e-6)
    assert np.abs(expected - network).max() > 0.01  # the baseline moved the scores

    alone = config.model_copy(update={"predict": config.predict.model_copy(update={"joined": False})})
    np.testing.assert_allclose([float(p) for *_, p in submitted(alone, "alone")], network, atol=2e-6)


def test_genome_wide_prediction_in_parts_joins_in_order_and_reuses_finished_parts(
    spark, trained, tmp_path, monkeypatch
):
    """Two TF/cells over every bin of the genome, in parts of 4,000 bins; a run killed before the join is resumed."""
    import gzip

    from tf_models import predict
    from tfbs import storage
    from tfbs.formats.submission import genome_bins, validate_submission

    config, _, summary = trained
    config = config.model_copy(update={"predict": config.predict.model_copy(update={"rows_per_part": 4000})})
    export = lineage.export_uri(config.run_dir, summary["version"])
    targets = [
        predict.Target(tf, cell, f"file://{tmp_path}/F.{tf}.{cell}.tab.gz")
        for tf, cell in [("CTCF", "K562"), ("FOXA1", "HepG2")]
    ]
    bins = list(genome_bins(config.data.genome_fasta))
    parts = -(-len(bins) // 4000)
    assert parts >= 3

    def killed(*_):
        raise RuntimeError("killed before the join")

    monkeypatch.setattr(storage, "concatenate", killed)
    with pytest.raises(RuntimeError, match="killed before the join"):
        predict.predict_targets(spark, config, export, None, targets)
    monkeypatch.undo()
    parts_dirs = sorted(tmp_path.glob("F.*.parts-*"))
    assert [sorted(p.name for p in d.iterdir()) for d in parts_dirs] == [[f"part-{i:05d}.gz" for i in range(parts)]] * 2
    assert not any(tmp_path.glob("*.tab.gz"))
    # Mark one finished part of the first TF/cell: the rerun must join it as it is, not score it again
    # (seven decimals: the model's rows have six). Drop one of the second's: the rerun scores it.
    marked = next(d for d in parts_dirs if d.name.startswith("F.CTCF.K562"))
    rows = gzip.decompress((marked / "part-00001.gz").read_bytes()).decode().splitlines()
    marker = "".join(f"{row.rsplit(chr(9), 1)[0]}\t0.1234567\n" for row in rows)
    (marked / "part-00001.gz").write_bytes(gzip.compress(marker.encode()))
    next(d for d in parts_dirs if d.name.startswith("F.FOXA1.HepG2")).joinpath("part-00002.gz").unlink()

    assert predict.predict_targets(spark, config, export, None, targets) == len(bins)
    assert not any(tmp_path.glob("F.*.parts-*"))
    for target in targets:
        assert validate_submission(target.out_uri, None, config.data.genome_fasta) == len(bins)
        submitted = [
            line.split("\t")
            for line in gzip.decompress(Path(local_path(target.out_uri)).read_bytes()).decode().splitlines()
        ]
        assert [(c, int(s), int(e)) for c, s, e, _ in submitted] == bins
        reused = [i for i, row in enumerate(submitted) if row[3] == "0.1234567"]
        assert reused == (list(range(4000, 8000)) if target.tf == "CTCF" else [])

    # The same bins as a regions file, in another order, score the same.
    picked = [0, 4100, 8200, len(bins) - 1]
    regions = tmp_path / "picked.bed"
    regions.write_text("".join("\t".join(map(str, bins[i])) + "\n" for i in reversed(picked)))
    out = f"file://{tmp_path}/picked.tab.gz"
    assert predict.predict_regions(spark, config, export, f"file://{regions}", "FOXA1", "HepG2", out) == 4
    alone = [line.split("\t")[3] for line in gzip.decompress(Path(local_path(out)).read_bytes()).decode().splitlines()]
    whole = gzip.decompress(Path(local_path(targets[1].out_uri)).read_bytes()).decode().splitlines()
    expected = [float(whole[i].split("\t")[3]) for i in reversed(picked)]
    np.testing.assert_allclose([float(p) for p in alone], expected, atol=2e-6)  # another batch, another rounding


def test_export_equals_the_best_checkpoint(trained):
    """Early stopping is on by default: the export holds the best validation auPRC's weights."""
    from tf_models.model import build_model

    config, manifest, summary = trained
    best_step = max(summary["history"], key=lambda h: h["valid_auprc"])["step"]
    model_config = config.train.model
    restored = build_model(model_config, len(manifest.cells), manifest.window)
    checkpoint = tf.train.Checkpoint(model=restored)
    best = tf.train.latest_checkpoint(local_path(f"{summary['model_uri']}/best"))
    assert best.endswith(f"ckpt-{best_step}")
    checkpoint.restore(best).expect_partial()
    rng = np.random.default_rng(2)
    dna = [bytes(rng.choice(list(b"ACGT"), manifest.window).astype(np.uint8)) for _ in range(6)]
    tf_index, cells, dnase = [0, 1, 0, 1, 0, 1], [0, 1, 2, 0, 1, 2], [0.0, 1.0, 1.0, 0.0, 1.0, 0.0]
    proteins = [manifest.proteins[name] for name in manifest.tfs]
    logits = restored(model_inputs(dna, proteins, model_config.aa_max_length, tf_index, cells, dnase)).numpy()
    exported = (
        tf.saved_model.load(_export(trained))
        .signatures["indexed"](
            dna=tf.constant(dna),
            tf_index=tf.constant(tf_index),
            cell_index=tf.constant(cells),
            dnase=tf.constant(dnase),
        )["logit"]
        .numpy()
    )
    np.testing.assert_allclose(exported, logits, rtol=1e-4, atol=1e-5)
