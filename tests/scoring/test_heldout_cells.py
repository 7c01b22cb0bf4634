"""The challenge's protocol: a cell whose labels training never reads, scored apart; floors a broken model fails.

One small data set (the suite's, basic profile): GM12878 trains, HepG2 is
held out, K562 is left out of the shards altogether (a new cell a user
brings with its DNase only). A model trained on shuffled labels, with its
first filters seeded as the planted motifs and without, must fail the
demo's floor (a margin over DNase alone), which the real model passes.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from conftest import small_config

from tf_models.evaluate import evaluate
from tf_models.protocol import JOINED
from tf_models.train import train_on_spark
from tfbs import lineage
from tfbs.config import load_config
from tfbs.errors import BelowFloorError, ConfigError
from tfbs.formats.dream import TEST
from tfbs.storage import local_path

DEMO_FLOOR = "evaluate.min_auprc_margin=0.05"


def _config(root: Path, data_root: str, *extra: str):
    return small_config(
        root,
        f"data.root={local_path(data_root)}",
        "data.cells=[GM12878]",
        "data.heldout_cells=[HepG2]",
        "train.placement.strategy=local",
        DEMO_FLOOR,
        *extra,
    )


@pytest.fixture(scope="module")
def heldout(spark, small_dataset, tmp_path_factory):
    """Shards with HepG2 held out, and the model trained on them."""
    from preprocess.build_shards import build_shards

    config = _config(tmp_path_factory.mktemp("heldout"), small_dataset.data.root)
    manifest = build_shards(spark, config)
    summary = train_on_spark(spark, config, manifest)
    return config, manifest, summary


@pytest.fixture(scope="module")
def report(spark, heldout) -> dict:
    config, manifest, _ = heldout
    return evaluate(spark, config, manifest)


def _non_test_rows(labels_uri: str, test_chroms: list[str]) -> int:
    with gzip.open(local_path(labels_uri), "rt") as handle:
        next(handle)
        return sum(1 for line in handle if line.split("\t", 1)[0] not in test_chroms)


def test_a_heldout_cell_keeps_only_its_test_rows(heldout) -> None:
    config, manifest, _ = heldout
    assert (manifest.cells, manifest.heldout_cells) == (["GM12878", "HepG2"], ["HepG2"])
    test_chroms = manifest.splits.test_chroms
    for tf in manifest.tfs:
        held = manifest.counts[tf]["HepG2"]
        assert set(held.kept) == {TEST}
        # Every row outside the test chromosomes is set aside before any decision reads its label.
        assert held.excluded_heldout_cell == _non_test_rows(config.data.labels_uri(tf), test_chroms)
        assert held.dropped_sampling == held.excluded_ambiguous == 0
        trained_cell = manifest.counts[tf]["GM12878"]
        assert trained_cell.excluded_heldout_cell == 0 and trained_cell.kept_rows("train", "B") > 0
        assert held.kept_rows(TEST) == trained_cell.kept_rows(TEST)


def test_no_training_record_is_of_the_heldout_cell(heldout) -> None:
    _, manifest, _ = heldout
    layout, heldout_index = manifest.record_layout, manifest.cells.index("HepG2")
    seen = set()
    for records in manifest.records.values():
        for entry in [*records.positives, *(e for draw in records.negatives for e in draw)]:
            rows = np.fromfile(local_path(entry.path), np.uint8).reshape(-1, layout["record_bytes"])
            seen |= set(np.unique(rows[:, layout["window"] + 2]).tolist())
    assert seen == {manifest.cells.index("GM12878")} and heldout_index not in seen


def test_the_report_scores_heldout_and_training_cells_apart(heldout, report) -> None:
    config, manifest, _ = heldout
    assert report["heldout_cells"] == ["HepG2"]
    groups = report["groups"]
    assert groups["held-out cells"]["keys"] == [f"{tf}/HepG2" for tf in manifest.tfs]
    assert groups["training cells"]["keys"] == [f"{tf}/GM12878" for tf in manifest.tfs]
    for group in ("held-out cells", "training cells"):
        model = groups[group]["auprc"]["model"]
        mean = np.mean([report["results"][key]["auprc"] for key in groups[group]["keys"]])
        assert model["estimate"] == pytest.approx(mean)
        assert model["ci"][0] < model["estimate"] < model["ci"][1]
        best = groups[group]["best_baseline"]
        assert best in {"boosted", "dnase_motif", "dnase", "motif_scan"}
        difference = groups[group]["model_minus_best"]
        assert difference["estimate"] == pytest.approx(model["estimate"] - groups[group]["auprc"][best]["estimate"])
        # Beside it, the model joined to the boosted baseline, and that minus the boosted baseline alone.
        joined, boosted = groups[group]["auprc"][JOINED], groups[group]["auprc"]["boosted"]
        assert groups[group]["joined_minus_boosted"]["estimate"] == pytest.approx(
            joined["estimate"] - boosted["estimate"]
        )
    # The boosted baseline trained on the training cell's rows only.
    assert report["boosted_baseline"]["training_rows"] == sum(
        manifest.counts[tf]["GM12878"].kept_rows("train") for tf in manifest.tfs
    )
    # Intervals over sites: each TF/cell counts its positive sites (regions), far fewer than its B bins.
    for key, entry in report["intervals"]["keys"].items():
        assert 0 < entry["n_positive_sites"] < report["results"][key]["n_pos"]
    assert report["floors"]["passed"] and lineage.read_latest(config.run_dir).version == report["version"]


@pytest.mark.parametrize("seeded", [True, False], ids=["filters seeded", "filters random"])
def test_a_model_of_shuffled_labels_fails_the_demo_floor(spark, heldout, report, tmp_path, seeded: bool) -> None:
    trained, manifest, _ = heldout
    config = _config(
        tmp_path,
        trained.data.root,
        "train.shuffle_labels=true",
        f"train.model.motif_cnn.seed_motifs={str(seeded).lower()}",
        f"shards_dir={trained.shards_uri}",
    )
    train_on_spark(spark, config, manifest)
    with pytest.raises(BelowFloorError) as refused:
        evaluate(spark, config, manifest)
    message = str(refused.value)
    # With its filters seeded as the planted motifs it reads about as the motif scan; random, it reads nothing.
    assert "over the motif_scan baseline's" in message and "below evaluate.min_auprc_margin 0.05" in message
    assert lineage.read_latest(config.run_dir) is None


def test_predict_scores_a_cell_the_model_never_saw(spark, heldout, tmp_path) -> None:
    from tf_models.predict import predict_regions

    config, manifest, summary = heldout
    assert "K562" not in manifest.cells
    regions = tmp_path / "regions.bed"
    regions.write_text("".join(f"chr8\t{start}\t{start + 200}\n" for start in range(20_000, 30_000, 50)))
    out = f"file://{tmp_path}/F.CTCF.K562.tab.gz"
    export = lineage.export_uri(config.run_dir, summary["version"])
    assert predict_regions(spark, config, export, f"file://{regions}", "CTCF", "K562", out) == 200
    probabilities = [
        float(line.split("\t")[3]) for line in gzip.decompress(Path(local_path(out)).read_bytes()).decode().splitlines()
    ]
    assert len(probabilities) == 200 and all(0.0 <= p <= 1.0 for p in probabilities)


def test_a_model_reading_expression_needs_every_cell_s_rna_seq(spark, heldout, tmp_path) -> None:
    """The basic profile writes no RNA-seq: use_expression is refused in one line, before any training."""
    trained, manifest, _ = heldout
    config = _config(tmp_path, trained.data.root, "train.model.use_expression=true", f"shards_dir={trained.shards_uri}")
    with pytest.raises(ConfigError, match=r"train.model.use_expression: needs RNA-seq of every cell of the shards "):
        train_on_spark(spark, config, manifest)
    assert not list(Path(local_path(config.run_dir)).glob("models/*/checkpoints"))


def test_a_cell_type_input_cannot_score_heldout_cells(tmp_path) -> None:
    with pytest.raises(
        ConfigError, match=r"train.model.use_cell_type: a cell-type input cannot score the held-out cells"
    ):
        load_config(
            Path(__file__).resolve().parents[2] / "conf" / "demo.yaml",
            [f"run_dir={tmp_path}", "train.model.use_cell_type=true"],
        )
    with pytest.raises(ConfigError, match=r"heldout_cells \['HepG2'\] are also in cells"):
        load_config(
            Path(__file__).resolve().parents[2] / "conf" / "demo.yaml",
            [f"run_dir={tmp_path}", "data.cells=[HepG2, K562]"],
        )
