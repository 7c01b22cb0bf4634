"""What the model learned (``tfbs explain``): ISM, seqlets, TOMTOM q-values, logos and motifs.json.

The models here are built by hand with a known motif in their filters, so
the tests can say which motif explaining them must recover; the stage runs
end to end on the small generated data set.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import DREAM_DATA, small_config

from tf_models.explain.attribution import contributions, ism, mutants
from tf_models.explain.seqlets import build_pattern, seqlet_centres
from tf_models.explain.tomtom import benjamini_hochberg, best_matches, to_meme
from tfbs.formats.motifs import decode_dna, read_meme, sample_instances

MOTIF_DB = DREAM_DATA / "annotations" / "HOCOMOCOv9.meme"


@pytest.fixture(scope="module")
def database() -> dict[str, np.ndarray]:
    return read_meme(str(MOTIF_DB))


def _log_odds(ppm: np.ndarray, width: int) -> np.ndarray:
    """``(width, 4)`` log-odds of ``ppm`` against a uniform background, zero-padded at the end."""
    scores = np.zeros((width, 4), dtype=np.float32)
    scores[: len(ppm)] = np.log(np.clip(ppm, 1e-3, 1) / 0.25)
    return scores


def _planted_windows(ppm: np.ndarray, n: int, length: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Random ASCII windows, each with one instance of ``ppm`` at a random position; and the positions."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 4, size=(n, length)).astype(np.uint8)
    positions = rng.integers(0, length - len(ppm), size=n)
    for row, site, position in zip(codes, sample_instances(ppm**3 / (ppm**3).sum(1, keepdims=True), n, rng), positions):
        row[position : position + len(ppm)] = site
    windows = np.stack([np.frombuffer(decode_dna(row), np.uint8) for row in codes])
    return windows, positions


def test_mutants_change_one_base_each_and_never_keep_the_reference():
    window = np.frombuffer(b"ACGTNCGT", np.uint8)
    rows, positions, bases = mutants(window, 2, 3)
    # Three substitutions at G and T, four at N (no reference base among ACGT).
    assert rows.shape == (10, 8) and positions.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 2]
    assert ((rows != window).sum(axis=1) == 1).all()
    assert [chr(row[2 + at]) for row, at in zip(rows, positions)] == ["ACGT"[base] for base in bases]


def _scan_model(scores: np.ndarray, bias: float):
    """A one-filter CNN in NumPy: each window's best match of ``scores``, through a ReLU with ``bias``.

    What a ``Conv1D(1, width, activation="relu")`` and a global max pool compute
    on one-hot windows of ACGT, exactly and without TensorFlow.
    """
    lookup = np.zeros(256, dtype=np.intp)
    lookup[np.frombuffer(b"ACGT", np.uint8)] = np.arange(4)
    width = len(scores)

    def score(windows: np.ndarray) -> np.ndarray:
        codes = lookup[windows]
        starts = np.arange(codes.shape[1] - width + 1)[:, None] + np.arange(width)
        matches = scores[np.arange(width), codes[:, starts]].sum(axis=-1)
        return np.maximum(matches + bias, 0).max(axis=1).astype(np.float32)

    return score


def test_ism_of_a_known_motif_model_recovers_the_motif(database):
    motif = database["FOXA1_f1"]
    scores = _log_odds(motif, 12)
    score = _scan_model(scores, bias=-2.0)
    # The consensus in a window of T: no 12-mer matches better, so the window scores its sum of best log-odds.
    consensus = bytes(b"ACGT"[i] for i in scores.argmax(axis=1))
    window = np.frombuffer(b"T" * 50 + consensus + b"T" * 58, np.uint8)[None]
    assert score(window)[0] == pytest.approx(scores.max(axis=1).sum() - 2.0, rel=1e-5)

    windows, positions = _planted_windows(motif, 40, 120, seed=3)
    deltas = ism(score, windows, 0, 120, batch_size=2000)
    assert deltas.shape == (40, 120, 4)
    # No change at the reference bases; ISM equals rescoring each mutant directly.
    reference = np.array([[b"ACGT".index(bytes([base])) for base in w] for w in windows])
    assert np.allclose(np.take_along_axis(deltas, reference[..., None], axis=2), 0, atol=1e-5)
    mutant = windows[:1].copy()
    mutant[0, positions[0]] = ord("A") if mutant[0, positions[0]] != ord("A") else ord("C")
    expected = score(mutant)[0] - score(windows[:1])[0]
    assert deltas[0, positions[0], b"ACGT".index(bytes([mutant[0, positions[0]]]))] == pytest.approx(expected, abs=1e-4)

    tracks = contributions(deltas)
    centres = [seqlet_centres(track, 10)[0] for track in tracks]
    inside = [p - 2 <= c <= p + len(motif) + 2 for c, p in zip(centres, positions)]
    assert np.mean(inside) >= 0.9
    pattern = build_pattern(list(windows), list(tracks), 0, core=10, width=16, shift=4)
    assert pattern is not None and pattern.n_seqlets >= 30
    (match,), q, names = best_matches([pattern.ppm], database)
    assert q[0, names.index("FOXA1_f1")] < 0.05
    assert match.motif.startswith("FOX") and match.q_value < 0.05


def test_benjamini_hochberg_matches_its_definition():
    p = np.random.default_rng(0).uniform(size=50) ** 3
    q = benjamini_hochberg(p)
    order = np.argsort(p)
    ranks = np.empty(len(p), dtype=int)
    ranks[order] = np.arange(1, len(p) + 1)
    brute = np.array(
        [min(1.0, min(p[j] * len(p) / ranks[j] for j in range(len(p)) if p[j] >= p[i])) for i in range(len(p))]
    )
    assert np.allclose(q, brute)


def test_tomtom_finds_a_database_motif_and_not_a_shuffled_one(database):
    ctcf = database["CTCF_f2"]
    rng = np.random.default_rng(5)
    # Columns in a random order, the bases of each column permuted: same information, no motif.
    shuffled = np.stack([column[rng.permutation(4)] for column in ctcf[rng.permutation(len(ctcf))]])
    (itself, other), q, names = best_matches([ctcf, shuffled], database)
    assert itself.motif == "CTCF_f2" and itself.q_value < 0.05 and itself.p_value < 1e-6
    assert other.q_value >= 0.05
    assert q.shape == (2, len(database))


def test_learned_patterns_are_written_as_meme(tmp_path, database):
    patterns = {"CTCF_learned": database["CTCF_f2"], "FOXA1_learned": database["FOXA1_f1"]}
    path = tmp_path / "learned.meme"
    path.write_text(to_meme(patterns, {"CTCF_learned": 12}))
    back = read_meme(str(path))
    assert set(back) == set(patterns)
    assert all(np.allclose(back[name], ppm, atol=1e-5) for name, ppm in patterns.items())
    assert "nsites= 12" in path.read_text()
    # memelite's own reader (what its TOMTOM users load) agrees.
    from memelite.io import read_meme as memelite_read

    assert {name: m.T.shape for name, m in memelite_read(str(path)).items()} == {
        name: ppm.shape for name, ppm in patterns.items()
    }


def _hand_built_export(config, database, export_dir: str, tfs: list[str], cells: list[str]) -> None:
    """Export a motif_cnn whose logit is its two filters' best matches: CTCF_f2 and FOXA1_f1."""
    from tf_models.export import export_model
    from tf_models.model import build_model
    from tfbs.formats.proteins import read_protein_fasta

    model_config = config.train.model
    model = build_model(model_config, len(cells), config.preprocess.window)
    kernel = np.zeros(model.motifs.get_weights()[0].shape, np.float32)
    kernel[:, :, 0] = _log_odds(database["CTCF_f2"], kernel.shape[0])
    kernel[:, :, 1] = _log_odds(database["FOXA1_f1"], kernel.shape[0])
    model.motifs.set_weights([kernel, np.array([-8.0, -4.0] + [-100.0] * (kernel.shape[2] - 2), np.float32)])
    gate_kernel, gate_bias = model.protein_gate.get_weights()
    model.protein_gate.set_weights([np.zeros_like(gate_kernel), np.full_like(gate_bias, 10.0)])  # gates open
    dense_kernel, dense_bias = model.dense.get_weights()
    dense_kernel[:] = 0
    dense_kernel[0, 0] = dense_kernel[1, 0] = 1.0
    model.dense.set_weights([dense_kernel, np.zeros_like(dense_bias)])
    logit_kernel, logit_bias = model.logit.get_weights()
    logit_kernel[:] = 0
    logit_kernel[0, 0] = 1.0
    model.logit.set_weights([logit_kernel, np.array([-5.0], np.float32)])
    proteins = read_protein_fasta(config.data.proteins_fasta)
    metadata = {"tfs": tfs, "cells": cells, "window": config.preprocess.window, "uses_dnase": True}
    export_model(
        model, model_config, len(cells), config.preprocess.window, [proteins[t] for t in tfs], metadata, export_dir
    )


def _label_predictions(config, tfs: list[str], path: str) -> None:
    """A stand-in for evaluation's predictions: the test chromosomes' labels (B 1, U 0) plus noise.

    The noise spreads the top predictions over the bound sites instead of
    the first site's overlapping bins.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tfbs.storage import local_path

    rng = np.random.default_rng(11)
    columns: dict[str, list] = {name: [] for name in ("tf", "cell", "chrom", "start", "label", "probability")}
    for tf_name in tfs:
        with gzip.open(local_path(config.data.labels_uri(tf_name)), "rt") as handle:
            cells = handle.readline().rstrip("\n").split("\t")[3:]
            for line in handle:
                chrom, start, _, *labels = line.rstrip("\n").split("\t")
                if chrom not in ("chr1", "chr8", "chr21"):
                    continue
                for cell, label in zip(cells, labels):
                    for name, value in zip(columns, (tf_name, cell, chrom, int(start), int(label == "B"), 0.0)):
                        columns[name].append(value)
                    columns["probability"][-1] = float(label == "B") + 0.5 * float(rng.uniform())
    Path(path).mkdir(parents=True)
    pq.write_table(pa.table(columns), f"{path}/part-0.parquet")


def test_explain_recovers_the_planted_motifs_end_to_end(spark, small_dataset, tmp_path, database):
    from tf_models.explain.run import COLUMNS, explain_version
    from tfbs import lineage
    from tfbs.storage import local_path

    config = small_config(
        tmp_path,
        f"data.root={local_path(small_dataset.data.root)}",
        "train.model.motif_cnn.kernel=20",
        "explain.top_n=12",
    )
    tfs, cells = ["CTCF", "FOXA1"], list(small_dataset.generate.cells)
    version = "hand-built"
    _hand_built_export(config, database, local_path(lineage.export_uri(config.run_dir, version)), tfs, cells)
    report = local_path(lineage.report_uri(config.run_dir, version))
    _label_predictions(config, tfs, f"{report}/predictions")

    table = explain_version(spark, config, version)

    written = json.loads(Path(report, "motifs.json").read_text())
    assert written == json.loads(json.dumps(table))
    assert set(written) == {"title", "columns", "rows", "notes", "images"} and written["columns"] == COLUMNS
    # A hand-built version has no lineage: the table does not claim to know how its filters started.
    assert written["title"] == "Motifs the model learned (seeding not recorded)"
    rows = {row[0]: dict(zip(COLUMNS, row)) for row in written["rows"]}
    assert set(rows) == set(tfs)
    for tf_name, planted in (("CTCF", "CTCF_f2"), ("FOXA1", "FOXA1_f1")):
        row = rows[tf_name]
        assert row["planted motif"] == planted and row["planted q"] < 0.05
        assert row["best q"] <= row["planted q"]
        # Recovered exactly when the TF's own motif is the best match.
        assert row["recovered"] == (row["best match"] == planted)
    assert rows["CTCF"]["best match"] == "CTCF_f2" and rows["CTCF"]["recovered"]
    assert sorted(written["images"]) == ["logos/CTCF.png", "logos/FOXA1.png"]
    assert all(Path(report, image).stat().st_size > 2000 for image in written["images"])
    assert set(read_meme(f"{report}/motifs.meme")) == {"CTCF_learned", "FOXA1_learned"}
    # Not LATEST (there is none): the run-level report is left alone.
    assert not Path(local_path(lineage.run_report_uri(config.run_dir)), "motifs.json").exists()


def test_a_paralogue_motif_as_the_best_match_is_not_recovered(tmp_path, database):
    """FOXA2's pattern that is FOXA1's motif matches FOXA2's too, but it is not FOXA2's motif found."""
    from tf_models.explain.run import COLUMNS, _match_and_draw
    from tf_models.explain.seqlets import Pattern

    config = small_config(
        tmp_path,
        "data.tfs=[CTCF, FOXA2]",
        "generate.tfs=[{name: CTCF, motif: CTCF_f2, family: zf-ctcf}, {name: FOXA2, motif: FOXA2_f1, family: fox}]",
    )
    patterns = {
        "FOXA2": Pattern(database["FOXA1_f1"], 40, 40),
        "CTCF": Pattern(database["CTCF_f2"], 40, 40),
    }
    table = _match_and_draw(config, f"file://{tmp_path}/report", patterns, database)
    rows = {row[0]: dict(zip(COLUMNS, row)) for row in table["rows"]}
    assert rows["FOXA2"]["best match"] == "FOXA1_f1" and rows["FOXA2"]["planted q"] < 0.05
    assert rows["FOXA2"]["planted rank"] > 1 and not rows["FOXA2"]["recovered"]
    assert rows["CTCF"]["best match"] == "CTCF_f2" and rows["CTCF"]["recovered"]
    assert "Planted motifs recovered: 1 of 2." in table["notes"]


def test_the_seeding_is_named_from_the_lineage():
    from tf_models.seeding import seeding_note

    motif_cnn = {"architecture": "motif_cnn", "motif_cnn": {"seed_motifs": True, "seed_motif_db": "file:///x.meme"}}
    planted = {"motifs": {"FOXA2": "FOXA2_f1", "CTCF": "CTCF_f2"}, "motif_db_blake3": "ab"}
    assert seeding_note({"model": motif_cnn, "seed_motifs_from": planted})[0] == "filters seeded with CTCF_f2, FOXA2_f1"
    assert "very motifs the generator planted" in seeding_note({"model": motif_cnn, "seed_motifs_from": planted})[1]
    other = {"seed_motif_db_blake3": "cd"}
    assert seeding_note({"model": motif_cnn, "seed_motifs_from": other})[0] == "filters seeded from file:///x.meme"
    # Seeding on without any motif configured leaves no seed_motifs_from: the filters started at random.
    assert seeding_note({"model": motif_cnn})[0] == "filters started at random"
    assert seeding_note({"model": {"architecture": "factornet"}})[0] == "filters started at random"


def test_explain_without_an_evaluated_model_is_a_one_line_error(tmp_path, capsys):
    from jobs.explain import main

    code = main(["--config", "conf/demo.yaml", "--set", f"run_dir={tmp_path / 'run'}"])
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2 and error.startswith("error: ") and "models/LATEST: not found" in error


def test_explain_widths_must_nest(tmp_path):
    from tfbs.config import ConfigError

    with pytest.raises(ConfigError, match="explain.*pattern_bp"):
        small_config(tmp_path, "explain.pattern_bp=400")
