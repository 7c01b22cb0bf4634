"""The gradient-boosted baseline: motif features from one scan per chromosome, the classifier per TF, its kept copy."""

from __future__ import annotations

import numpy as np
import pytest

from tf_models.boosted import BoostedInputs, feature_matrix, fit_boosted, predict_boosted
from tf_models.boosted_fit import BoostedBaseline, default_sampling_rows
from tf_models.kept_baseline import keep_baseline, read_kept_baseline
from tf_models.motif_features import NO_MATCH, WIDTHS, bin_features, block_maxima, region_features
from tfbs import storage
from tfbs.errors import BadInputError
from tfbs.formats.draws import uniform_draw
from tfbs.formats.metrics import auprc_davis_goadrich
from tfbs.formats.motifs import encode_dna, log_odds, scan_positions


def _chromosome(length: int, seed: int = 0) -> np.ndarray:
    return np.frombuffer(bytes(np.random.default_rng(seed).choice(list(b"ACGT"), length)), np.uint8)


def test_bin_features_are_the_best_match_starting_in_each_width_centred_on_the_bin() -> None:
    bases = _chromosome(20_000)
    motifs = [log_odds(np.random.default_rng(k).dirichlet(np.ones(4) * 0.3, size=w)) for k, w in ((1, 11), (2, 19))]
    blocks = block_maxima(bases, motifs)
    starts = np.arange(0, 19_800, 50)[::37]
    features = bin_features(blocks, starts)
    assert features.shape == (starts.shape[0], len(WIDTHS) * len(motifs))
    codes = encode_dna(bases.tobytes())
    matches = [scan_positions(codes, motif) for motif in motifs]  # the match starting at each position
    for column, (width, m) in enumerate((w, m) for w in WIDTHS for m in range(len(motifs))):
        every = matches[m]
        for row, start in enumerate(starts):
            first, last = max(start + 100 - width // 2, 0), min(start + 100 + width // 2, every.shape[0])
            expected = every[first:last].max() if last > first else NO_MATCH
            assert features[row, column] == pytest.approx(expected, abs=1e-4), (width, m, start)


def test_a_chromosome_is_scanned_in_chunks_as_in_one_piece(monkeypatch) -> None:
    from tf_models import motif_features

    bases = _chromosome(9_000, seed=3)
    motif = [log_odds(np.random.default_rng(5).dirichlet(np.ones(4) * 0.3, size=15))]
    whole = block_maxima(bases, motif)
    monkeypatch.setattr(motif_features, "_CHUNK_BP", 1_000)
    assert np.array_equal(block_maxima(bases, motif), whole)


def test_features_carry_dnase_and_each_cells_expression() -> None:
    inputs = BoostedInputs(["CTCF", "HNF4A"], ["HNF4A"], {"A": np.array([4.0]), "B": np.array([0.1])})
    motif = np.zeros((3, len(WIDTHS) * 2), np.float32)
    matrix = feature_matrix(inputs, motif, np.array([0.2, 0.0, 1.0]), np.array(["B", "A", "B"]))
    assert matrix.shape[1] == len(inputs.feature_names()) == len(WIDTHS) * 2 + 2
    assert matrix[:, -2].tolist() == pytest.approx([0.2, 0.0, 1.0])
    assert matrix[:, -1].tolist() == pytest.approx([0.1, 4.0, 0.1])
    with pytest.raises(KeyError):
        feature_matrix(inputs, motif, np.zeros(3), np.array(["A", "C", "A"]))


def test_one_classifier_per_tf_learns_its_own_rule() -> None:
    rng = np.random.default_rng(0)
    n = 4000
    features = rng.normal(size=(n, 3)).astype(np.float32)
    tfs = np.where(rng.random(n) < 0.5, "CTCF", "EGR1")
    # CTCF binds on feature 0, EGR1 on feature 1: one classifier for both would blur them.
    labels = np.where(tfs == "CTCF", features[:, 0] > 1.0, features[:, 1] > 1.0).astype(np.int64)
    models = fit_boosted(features, labels, tfs)
    assert sorted(models) == ["CTCF", "EGR1"]
    scores = predict_boosted(models, features, tfs)
    for tf in ("CTCF", "EGR1"):
        rows = tfs == tf
        assert auprc_davis_goadrich(labels[rows], scores[rows]) > 0.95
    # A TF whose rows hold one class gets no classifier, and NaN scores.
    single = fit_boosted(features[:10], np.zeros(10, np.int64), np.full(10, "REST"))
    assert single == {} and np.isnan(predict_boosted(single, features[:10], np.full(10, "REST"))).all()


def test_bins_scanned_around_themselves_read_as_from_the_whole_chromosomes_scan() -> None:
    """What prediction reads (a stretch per group of bins) is what evaluation read (the whole chromosome)."""
    bases = _chromosome(30_017, seed=4)  # not a whole number of blocks
    motifs = [log_odds(np.random.default_rng(k).dirichlet(np.ones(4) * 0.3, size=w)) for k, w in ((6, 8), (7, 21))]
    last = (bases.shape[0] - 200) // 50 * 50
    dense, scattered = np.arange(9_000, 12_000, 50), np.random.default_rng(8).integers(0, last // 50, 40) * 50
    starts = np.concatenate([[0, 50, last, last - 50], dense, scattered])
    np.random.default_rng(9).shuffle(starts)
    whole = bin_features(block_maxima(bases, motifs), starts)
    assert np.array_equal(region_features(bases, motifs, starts), whole)
    assert region_features(bases, motifs, np.array([], np.int64)).shape == (0, len(WIDTHS) * len(motifs))


def _kept(tmp_path, genes: tuple[str, ...] = ("CTCF",)) -> tuple[str, BoostedBaseline, np.ndarray]:
    rng = np.random.default_rng(1)
    motifs = [log_odds(rng.dirichlet(np.ones(4) * 0.3, size=12))]
    inputs = BoostedInputs(["CTCF"], list(genes), {"K562": np.full(len(genes), 3.0, np.float32)})
    features = rng.normal(size=(600, len(inputs.feature_names()))).astype(np.float32)
    features[:, 5] = rng.random(600)  # the DNase column decides
    labels = (features[:, 5] > 0.5).astype(np.int64)
    models = fit_boosted(features, labels, np.full(600, "CTCF"))
    uri = storage.to_uri(tmp_path / "boosted")
    baseline = BoostedBaseline("unused://blocks", inputs, motifs, models, 600)
    keep_baseline(uri, baseline)
    return uri, baseline, features


def test_the_baseline_fits_on_the_default_samplings_rows_only() -> None:
    """Of a partition's training rows, the fit keeps positives and the negatives their draw's hash picked; a
    negative only cross-cell sampling kept (a twin of a bin bound in another cell) is left out, per draw."""
    from pyspark.sql import Row

    p_open, p_closed = 0.5, 0.1
    starts = np.arange(0, 50 * 400, 50)
    rows, expected = [], set()
    for draw in (0, 1):
        uniform = uniform_draw(11, draw, "CTCF", "K562", "chr2", starts)
        for start, number, dnase in zip(starts.tolist(), uniform, np.tile([0.0, 0.7], 200)):
            rows.append(Row(tf="CTCF", chrom="chr2", start=start, cell="K562", label_code=0, dnase=dnase, draw=draw))
            if number < (p_open if dnase > 0 else p_closed):
                expected.add((start, draw))
    rows.append(Row(tf="CTCF", chrom="chr2", start=5, cell="K562", label_code=1, dnase=0.0, draw=-1))
    kept = default_sampling_rows(iter(rows), 11, {"CTCF/K562/train": (p_open, p_closed)})
    assert {(r.start, r.draw) for r in kept if r.draw >= 0} == expected
    assert 0 < len(expected) < 800 and len(kept) == len(expected) + 1  # the positive stays


def test_a_kept_baseline_reads_back_and_scores_as_the_fitted_one(tmp_path) -> None:
    uri, baseline, _ = _kept(tmp_path)
    kept = read_kept_baseline(uri)
    assert (kept.inputs.motifs, kept.inputs.genes) == (["CTCF"], ["CTCF"])
    assert kept.inputs.expression["K562"].tolist() == [3.0]
    np.testing.assert_array_equal(kept.matrices[0], baseline.matrices[0])
    bases, starts = _chromosome(5_000, seed=2), np.arange(0, 4_800, 50)
    motif = kept.motif_features(bases, starts)
    dnase = np.linspace(0, 1, starts.shape[0])
    by_kept = kept.probabilities(motif, dnase, "K562", "CTCF")
    fitted = feature_matrix(baseline.inputs, motif, dnase, np.full(starts.shape[0], "K562"))
    np.testing.assert_array_equal(by_kept, predict_boosted(baseline.models, fitted, np.full(starts.shape[0], "CTCF")))
    assert by_kept[dnase > 0.6].min() > 0.5 > by_kept[dnase < 0.4].max()  # it learnt its rule
    # No whole copy (inputs.json is written last): no kept baseline.
    (tmp_path / "boosted" / "inputs.json").unlink()
    assert read_kept_baseline(uri) is None


def test_a_kept_baseline_of_another_scikit_learn_is_refused_by_name(tmp_path, monkeypatch) -> None:
    from tf_models import kept_baseline

    uri, _, _ = _kept(tmp_path)
    monkeypatch.setattr(kept_baseline, "_sklearn_version", lambda: "0.0.1")
    with pytest.raises(BadInputError) as refused:
        read_kept_baseline(uri)
    message = str(refused.value)
    assert message.startswith(f"{uri}/classifiers.pkl:0: fitted with scikit-learn ") and "0.0.1" in message


def test_submissions_join_the_kept_baseline_only_where_it_can_score_them(tmp_path) -> None:
    """The joined scorer for the TFs the kept baseline classifies; a new cell needs its RNA-seq, named when missing."""
    from conftest import small_config

    from tf_models.kept_baseline import joined_baseline, submission_scorers
    from tf_models.protocol import JOINED
    from tfbs import lineage

    config = small_config(tmp_path)
    _, baseline, _ = _kept(tmp_path, genes=("CTCF", "FOXA1"))  # the configuration's TFs' genes
    keep_baseline(lineage.boosted_uri(config.run_dir, "v1"), baseline)
    assert submission_scorers(config, "v1", ["CTCF", "REST"]) == {"CTCF": JOINED, "REST": "model"}
    assert submission_scorers(config, "v0", ["CTCF"]) == {"CTCF": "model"}  # never evaluated
    assert joined_baseline(config, "v1", ["K562"]).inputs.expression["K562"].tolist() == [3.0, 3.0]
    with pytest.raises(BadInputError) as refused:
        joined_baseline(config, "v1", ["K562", "PC-3"])
    assert str(refused.value).startswith(f"{config.data.rnaseq_dir}:0: no RNA-seq of PC-3: ")
    # A baseline that read other genes than the configuration names cannot read a new cell alike.
    _, other_genes, _ = _kept(tmp_path)
    keep_baseline(lineage.boosted_uri(config.run_dir, "v2"), other_genes)
    with pytest.raises(BadInputError, match=r"v2/boosted/inputs.json:0: the baseline reads genes \['CTCF'\]"):
        joined_baseline(config, "v2", ["PC-3"])
    alone = config.model_copy(update={"predict": config.predict.model_copy(update={"joined": False})})
    assert (
        submission_scorers(alone, "v1", ["CTCF"]) == {"CTCF": "model"}
        and joined_baseline(alone, "v1", ["PC-3"]) is None
    )
