"""A/B/U segregation of one chromosome's bins on hand-built inputs: the
bedtools annotation, the class counts behind the draw probabilities, and the
outcome decide gives every (bin, cell) on test and train chromosomes."""

from __future__ import annotations

import numpy as np
import pytest

from preprocess.label_reader import CODE_A, CODE_B, CODE_U, LabelPiece, ReadReport
from preprocess.segregate import (
    BLACKLIST,
    ChromBins,
    annotate_bins,
    annotate_while_reading,
    class_counts,
    decide,
    dnase_source,
)
from preprocess.staging import read_bins, write_bins
from tfbs.formats.draws import drawn_by_default, uniform_draw
from tfbs.formats.dream import BIN_STEP, TEST, TRAIN, VALID
from tfbs.formats.genome import WINDOW_OK, WINDOW_OUT_OF_BOUNDS, WINDOW_TOO_MANY_N, window_status
from tfbs.formats.manifest import OUTCOMES
from tfbs.storage import to_uri

U, B, A = CODE_U, CODE_B, CODE_A
KEPT, BLACKLISTED, AMBIGUOUS, NOT_DRAWN, OUT_OF_BOUNDS, TOO_MANY_N = (
    OUTCOMES.index(name)
    for name in (
        "kept",
        "excluded_blacklist",
        "excluded_ambiguous",
        "dropped_sampling",
        "dropped_window_out_of_bounds",
        "dropped_window_n",
    )
)
SEED = 5


def _bins(split: str, codes, blacklisted=None, is_open=None, starts=None) -> ChromBins:
    """CTCF bins on chr2 with the given labels (one column per cell)."""
    codes = np.asarray(codes, dtype=np.uint8).reshape(len(codes), -1)
    n, n_cells = codes.shape
    starts = np.arange(n, dtype=np.int64) * BIN_STEP if starts is None else np.asarray(starts, dtype=np.int64)
    blacklisted = np.zeros(n, bool) if blacklisted is None else np.asarray(blacklisted, bool)
    is_open = np.zeros((n, n_cells), bool) if is_open is None else np.asarray(is_open, bool).reshape(n, n_cells)
    return ChromBins("CTCF", "chr2", split, starts, codes, blacklisted, is_open)


def _decide(bins: ChromBins, probabilities: dict, n_draws: int = 1, status=None, seed: int = SEED):
    """decide() over cells named c0, c1, ...; every window usable unless ``status`` says otherwise."""
    cells = [f"c{i}" for i in range(bins.codes.shape[1])]
    status = np.full(len(bins.starts), WINDOW_OK, np.int8) if status is None else np.asarray(status, np.int8)
    return decide(bins, cells, probabilities, n_draws, seed, status.__getitem__)


# -- test chromosomes ---------------------------------------------------------


def test_test_chromosome_keeps_every_usable_bin_ambiguous_included():
    bins = _bins(TEST, [[U, B], [B, A], [A, U], [U, U]])
    decision = _decide(bins, probabilities={}, n_draws=2)  # test draws nothing, needs no probabilities
    assert (decision.outcome == KEPT).all()
    assert decision.drawn.shape == (4, 2, 2) and not decision.drawn.any()


def test_bad_windows_get_their_reason_on_a_test_chromosome():
    bins = _bins(TEST, [U, B, A, U, B])
    status = [WINDOW_OK, WINDOW_OUT_OF_BOUNDS, WINDOW_TOO_MANY_N, WINDOW_TOO_MANY_N, WINDOW_OUT_OF_BOUNDS]
    outcome = _decide(bins, {}, status=status).outcome[:, 0]
    assert outcome.tolist() == [KEPT, OUT_OF_BOUNDS, TOO_MANY_N, TOO_MANY_N, OUT_OF_BOUNDS]


def test_window_reasons_follow_window_status_of_a_real_chromosome():
    # 1,000 bp with N at 500-700; 400 bp windows centred on the bins.
    chromosome = np.frombuffer(b"ACGT" * 125 + b"N" * 200 + b"ACGT" * 75, np.uint8)
    starts = np.array([0, 200, 400, 800])  # windows -100..300, 100..500, 300..700, 700..1100
    bins = _bins(TEST, [U, B, U, A], starts=starts)
    strict = window_status(chromosome, starts, 400, max_n_fraction=0.1, pad=False)
    assert _decide(bins, {}, status=strict).outcome[:, 0].tolist() == [OUT_OF_BOUNDS, KEPT, TOO_MANY_N, OUT_OF_BOUNDS]
    # Padding turns leaving the chromosome into N: 100 of 400 bp is too many at 10 %.
    padded = window_status(chromosome, starts, 400, max_n_fraction=0.1, pad=True)
    assert _decide(bins, {}, status=padded).outcome[:, 0].tolist() == [TOO_MANY_N, KEPT, TOO_MANY_N, TOO_MANY_N]


@pytest.mark.parametrize("split", [TEST, TRAIN, VALID])
def test_blacklist_wins_over_every_other_outcome(split):
    bins = _bins(
        split, [[B, U], [U, A], [A, B], [U, U]], blacklisted=[True, True, True, False], is_open=np.ones((4, 2))
    )
    status = [WINDOW_OUT_OF_BOUNDS, WINDOW_TOO_MANY_N, WINDOW_OK, WINDOW_OK]
    decision = _decide(bins, {"c0": (1.0, 1.0), "c1": (1.0, 1.0)}, n_draws=2, status=status)
    assert (decision.outcome[:3] == BLACKLISTED).all()
    assert (decision.outcome[3] == KEPT).all()
    assert not decision.drawn[:3].any()


# -- train and valid chromosomes --------------------------------------------


@pytest.mark.parametrize("split", [TRAIN, VALID])
def test_training_keeps_all_bound_never_ambiguous_and_undrawn_unbound_is_dropped(split):
    bins = _bins(split, [B, A, U, B, U, A], is_open=[True, False, True, False, False, True])
    decision = _decide(bins, {"c0": (0.0, 0.0)}, n_draws=3)
    assert decision.outcome[:, 0].tolist() == [KEPT, AMBIGUOUS, NOT_DRAWN, KEPT, NOT_DRAWN, AMBIGUOUS]
    assert not decision.drawn.any()  # positives belong to every draw, not to one


def test_probability_one_keeps_every_unbound_bin_of_its_class_and_zero_none():
    is_open = np.arange(200) % 3 == 0
    bins = _bins(TRAIN, np.full((200, 2), U), is_open=np.stack([is_open, is_open], axis=1))
    decision = _decide(bins, {"c0": (1.0, 0.0), "c1": (0.0, 1.0)}, n_draws=2)
    for d in range(2):
        assert decision.drawn[:, 0, d].tolist() == is_open.tolist()
        assert decision.drawn[:, 1, d].tolist() == (~is_open).tolist()
    assert (decision.outcome[:, 0] == np.where(is_open, KEPT, NOT_DRAWN)).all()
    assert (decision.outcome[:, 1] == np.where(is_open, NOT_DRAWN, KEPT)).all()


def test_unbound_bin_is_kept_exactly_when_a_draw_picks_it():
    rng = np.random.default_rng(1)
    codes = rng.choice([U, U, U, B, A], size=(600, 2))
    is_open = rng.random((600, 2)) < 0.4
    bins = _bins(TRAIN, codes, is_open=is_open)
    probabilities = {"c0": (0.5, 0.1), "c1": (0.2, 0.3)}
    decision = _decide(bins, probabilities, n_draws=3)
    for c, cell in enumerate(["c0", "c1"]):
        unbound = codes[:, c] == U
        threshold = np.where(is_open[:, c], *probabilities[cell])
        for d in range(3):
            number = uniform_draw(SEED, d, "CTCF", cell, "chr2", bins.starts)
            assert decision.drawn[:, c, d].tolist() == (unbound & (number < threshold)).tolist()
        picked = decision.drawn[:, c, :].any(axis=1)
        assert (decision.outcome[unbound & picked, c] == KEPT).all()
        assert (decision.outcome[unbound & ~picked, c] == NOT_DRAWN).all()
        assert 0 < picked[unbound].sum() < unbound.sum()


def test_bad_windows_on_train_drop_bound_and_drawn_rows_but_not_ambiguous_ones():
    bins = _bins(TRAIN, [[B, B], [U, U], [A, A], [U, U]])
    status = [WINDOW_OUT_OF_BOUNDS, WINDOW_TOO_MANY_N, WINDOW_OUT_OF_BOUNDS, WINDOW_TOO_MANY_N]
    # c0 draws every U, c1 none: an undrawn U is dropped by sampling, whatever its window.
    decision = _decide(bins, {"c0": (1.0, 1.0), "c1": (0.0, 0.0)}, n_draws=2, status=status)
    assert decision.outcome[:, 0].tolist() == [OUT_OF_BOUNDS, TOO_MANY_N, AMBIGUOUS, TOO_MANY_N]
    assert decision.outcome[:, 1].tolist() == [OUT_OF_BOUNDS, NOT_DRAWN, AMBIGUOUS, NOT_DRAWN]
    assert not decision.drawn.any()  # a row that is not kept belongs to no draw


def test_several_draws_are_independent_and_reproducible():
    bins = _bins(TRAIN, np.full(4000, U))
    half = {"c0": (0.5, 0.5)}
    decision = _decide(bins, half, n_draws=2)
    first, second = decision.drawn[:, 0, 0], decision.drawn[:, 0, 1]
    assert 0.47 < first.mean() < 0.53 and 0.47 < second.mean() < 0.53
    assert 0.22 < (first & second).mean() < 0.28  # independent: a quarter in both
    assert np.array_equal(_decide(bins, half, n_draws=2).drawn, decision.drawn)
    # Draw 0 is the same whether one or two draws are made; another seed draws anew.
    assert np.array_equal(_decide(bins, half, n_draws=1).drawn[:, :, 0], decision.drawn[:, :, 0])
    other_seed = _decide(bins, half, n_draws=2, seed=SEED + 1).drawn
    assert 0.22 < (other_seed[:, 0, 0] & first).mean() < 0.28


def test_draws_do_not_depend_on_which_other_bins_are_in_the_task():
    is_open = np.arange(1000) % 4 == 0
    whole = _bins(TRAIN, np.full(1000, U), is_open=is_open)
    part = _bins(TRAIN, np.full(300, U), is_open=is_open[500:800], starts=whole.starts[500:800])
    probabilities = {"c0": (0.6, 0.2)}
    drawn_whole = _decide(whole, probabilities, n_draws=2).drawn
    assert np.array_equal(_decide(part, probabilities, n_draws=2).drawn, drawn_whole[500:800])


# -- held-out cells ---------------------------------------------------------------


def test_a_heldout_cells_rows_are_excluded_outside_the_test_split_whatever_their_label():
    codes = [[B, B], [U, U], [A, A], [U, B]]
    outcome = {name: i for i, name in enumerate(OUTCOMES)}
    heldout = frozenset({"c1"})
    for split in (TRAIN, VALID):
        bins = _bins(split, codes, blacklisted=[False, False, False, True])
        status = np.full(4, WINDOW_OK, np.int8)
        decision = decide(bins, ["c0", "c1"], {"c0": (1.0, 1.0)}, 1, SEED, status.__getitem__, heldout)
        assert decision.outcome[:, 1].tolist() == [outcome["excluded_heldout_cell"]] * 4
        assert not decision.drawn[:, 1].any()
        assert decision.outcome[0, 0] == outcome["kept"]  # the training cell is decided as ever
    test = _bins(TEST, codes)
    status = np.full(4, WINDOW_OK, np.int8)
    kept = decide(test, ["c0", "c1"], {}, 1, SEED, status.__getitem__, heldout)
    assert (kept.outcome == outcome["kept"]).all()  # the test chromosomes keep every bin of both


@pytest.mark.parametrize("cross_cell", [False, True])
def test_cross_cell_negatives_keep_every_unbound_twin_of_another_training_cells_bound_bin(cross_cell):
    """preprocess.cross_cell_negatives: a U bin that is B in another training cell is kept in every draw,
    whatever the draw probabilities; a held-out cell's B makes no twin (its labels are not read there)."""
    codes = [[B, U, U], [U, B, U], [U, U, B], [U, U, U], [B, A, U]]
    status = np.full(5, WINDOW_OK, np.int8)
    never = {"c0": (0.0, 0.0), "c1": (0.0, 0.0)}
    decision = decide(
        _bins(TRAIN, codes), ["c0", "c1", "c2"], never, 2, SEED, status.__getitem__, frozenset({"c2"}), cross_cell
    )
    twins = [[False, True], [True, False], [False, False], [False, False], [False, False]]
    for draw in range(2):
        assert decision.drawn[:, :2, draw].tolist() == (twins if cross_cell else np.zeros((5, 2), bool).tolist())
    kept = decision.outcome[:, :2] == OUTCOMES.index("kept")
    assert kept.tolist() == [[True, cross_cell], [cross_cell, True], [False, False], [False, False], [True, False]]


def test_redrawing_cross_cell_rows_gives_back_the_default_samplings_rows():
    """tfbs.formats.draws.drawn_by_default keeps, of the negatives cross-cell sampling wrote, exactly those
    the default sampling writes, draw by draw: the boosted baseline fits on them whatever the model's sampling."""
    rng = np.random.default_rng(3)
    codes = rng.choice([U, U, U, U, B, A], size=(3000, 3))
    bins = _bins(TRAIN, codes, is_open=rng.random((3000, 3)) < 0.3)
    cells = ["c0", "c1", "c2"]
    probabilities = {"c0": (0.2, 0.05), "c1": (0.3, 0.02), "c2": (0.1, 0.1)}
    status = np.full(3000, WINDOW_OK, np.int8)
    negatives = {}
    for cross_cell in (False, True):
        decision = decide(bins, cells, probabilities, 2, SEED, status.__getitem__, frozenset(), cross_cell)
        negatives[cross_cell] = np.nonzero(decision.drawn)  # (bin, cell, draw) of every negative row written
    rows, cols, draws = negatives[True]
    kept = np.zeros(len(rows), bool)
    for c, cell in enumerate(cells):
        mine = cols == c
        kept[mine] = drawn_by_default(
            SEED,
            "CTCF",
            cell,
            "chr2",
            bins.starts[rows[mine]],
            draws[mine],
            bins.open[rows[mine], c],
            probabilities[cell],
        )
    assert 0 < kept.sum() < len(kept)  # there were twins to leave out
    redrawn = sorted(zip(rows[kept].tolist(), cols[kept].tolist(), draws[kept].tolist()))
    assert redrawn == sorted(zip(*(a.tolist() for a in negatives[False])))


# -- class counts ---------------------------------------------------------------


def test_class_counts_per_cell_ignore_blacklist_and_ambiguous():
    codes = [[B, U], [U, U], [U, B], [A, U], [U, A], [B, B], [U, U]]
    is_open = [[0, 1], [1, 1], [0, 0], [1, 0], [1, 1], [1, 0], [1, 0]]
    blacklisted = [False, False, False, False, False, True, True]
    bins = _bins(TRAIN, codes, blacklisted=blacklisted, is_open=is_open)
    counts = class_counts(bins, np.zeros(2, bool))
    # per cell: (bound, open unbound, closed unbound)
    assert counts.dtype == np.int64
    assert counts.tolist() == [[1, 2, 1], [1, 2, 1]]
    # A held-out cell's labels count on the test chromosomes only.
    assert class_counts(bins, np.array([False, True])).tolist() == [[1, 2, 1], [0, 0, 0]]
    assert class_counts(
        _bins(TEST, codes, blacklisted=blacklisted, is_open=is_open), np.array([False, True])
    ).tolist() == [[1, 2, 1], [1, 2, 1]]


def test_class_counts_of_an_empty_chromosome_are_zero():
    bins = ChromBins(
        "CTCF",
        "chr2",
        TRAIN,
        np.zeros(0, np.int64),
        np.zeros((0, 3), np.uint8),
        np.zeros(0, bool),
        np.zeros((0, 3), bool),
    )
    assert class_counts(bins, np.zeros(3, bool)).tolist() == [[0, 0, 0]] * 3


# -- annotation -----------------------------------------------------------------


def _piece(starts, codes) -> LabelPiece:
    return LabelPiece("chr2", np.asarray(starts, np.int64), np.asarray(codes, np.uint8))


def test_annotate_bins_sorts_pieces_and_maps_dnase_proximity_per_cell():
    pieces = [
        _piece([1000, 1050], [[B, U], [U, A]]),
        _piece([0, 50, 600], [[U, U], [A, B], [U, U]]),
    ]
    intervals = {
        BLACKLIST: (np.array([0]), np.array([40])),  # bin 0 only: bin 50 starts at 50
        dnase_source("K562"): (np.array([1240]), np.array([1300])),  # bin 1050 (1050-1250) only
        dnase_source("HepG2"): (np.array([700, 10]), np.array([720, 60])),  # bins 0, 50 and 600
        dnase_source("GM12878"): (np.array([0]), np.array([5000])),  # not one of this TF's cells
    }
    bins = annotate_bins("CTCF", "chr2", VALID, pieces, ["HepG2", "K562"], intervals)
    assert (bins.tf, bins.chrom, bins.split) == ("CTCF", "chr2", VALID)
    assert bins.starts.tolist() == [0, 50, 600, 1000, 1050]
    assert bins.codes.tolist() == [[U, U], [A, B], [U, U], [B, U], [U, A]]
    assert bins.blacklisted.tolist() == [True, False, False, False, False]
    assert (bins.open > 0).tolist() == [[True, False], [True, False], [True, False], [False, False], [False, True]]
    # Proximity of each bin's centre to the peak's midpoint (these peaks have no summit): 1 - d / 1000.
    np.testing.assert_allclose(bins.open[bins.open > 0], [1 - 65 / 1000, 1 - 115 / 1000, 1 - 10 / 1000, 1 - 120 / 1000])


def test_annotate_bins_keeps_a_repeated_bin_twice_with_the_same_flags():
    pieces = [_piece([400, 200], [[B], [U]]), _piece([200], [[A]])]
    intervals = {
        BLACKLIST: (np.array([150]), np.array([210])),
        dnase_source("K562"): (np.array([590]), np.array([600])),
    }
    bins = annotate_bins("CTCF", "chr2", TRAIN, pieces, ["K562"], intervals)
    assert bins.starts.tolist() == [200, 200, 400]
    assert bins.codes[:, 0].tolist() == [U, A, B]  # stable: file order among equal starts
    assert bins.blacklisted.tolist() == [True, True, False]
    assert bins.open[:, 0].tolist() == [0.0, 0.0, pytest.approx(1 - 95 / 1000)]  # centre 500, midpoint 595


def test_annotate_while_reading_annotates_each_chromosome_once_then_reports(tmp_path):
    intervals = {"chr2": {dnase_source("K562"): (np.array([40]), np.array([60]))}}
    pieces = [
        _piece([0, 50], [[B], [U]]),
        _piece([100], [[U]]),  # the same chromosome, continued in the next block
        LabelPiece("chr10", np.array([0, 50], np.int64), np.array([[U], [A]], np.uint8)),
    ]
    report = ReadReport("labels.tsv.gz", n_rows=5)
    splits = {"chr2": TRAIN, "chr10": VALID}
    stored = {}

    def store(bins):
        uri = to_uri(tmp_path / f"{bins.chrom}.bins")
        write_bins(bins, uri)
        stored[bins.chrom] = bins
        return uri

    out = list(annotate_while_reading("CTCF", iter([*pieces, report]), ["K562"], splits, intervals, 2, store))
    assert out[-1] is report and sorted(out[:-1]) == sorted(to_uri(tmp_path / f"{c}.bins") for c in ("chr2", "chr10"))
    chr2 = read_bins(to_uri(tmp_path / "chr2.bins"))
    assert (chr2.split, chr2.starts.tolist(), chr2.codes[:, 0].tolist()) == (TRAIN, [0, 50, 100], [B, U, U])
    # Stored and read back as annotated: proximity values, flags, dtypes.
    for name in ("starts", "codes", "blacklisted", "open"):
        expected, got = getattr(stored["chr2"], name), getattr(chr2, name)
        assert got.dtype == expected.dtype and np.array_equal(got, expected), name
    assert chr2.open[:, 0].tolist() == [pytest.approx(1 - 50 / 1000), pytest.approx(1 - 100 / 1000), 0.0]
    assert read_bins(to_uri(tmp_path / "chr10.bins")).split == VALID


def test_annotate_bins_without_any_intervals_reads_everything_closed_and_clean():
    bins = annotate_bins("CTCF", "chr2", TRAIN, [_piece([200, 0], [[B, U], [U, U]])], ["HepG2", "K562"], {})
    assert bins.starts.tolist() == [0, 200]
    assert bins.open.shape == (2, 2) and not bins.open.any()
    assert bins.blacklisted.shape == (2,) and not bins.blacklisted.any()


@pytest.mark.parametrize("starts", [[0, 50, 100, 150], [50, 100, 200], [300], []])
def test_stored_bins_read_back_equal_whether_or_not_one_run_of_the_grid(tmp_path, starts):
    """A run of 50 bp steps is stored as its first start: every other layout as it is, and all read back alike."""
    n = len(starts)
    codes = (np.arange(2 * n, dtype=np.uint8) % 3).reshape(n, 2)
    proximity = np.zeros((n, 2), np.float32)
    proximity[n // 2 :, 1] = 0.75
    bins = ChromBins("CTCF", "chr2", TRAIN, np.array(starts, np.int64), codes, np.arange(n) % 2 == 0, proximity)
    uri = to_uri(tmp_path / "chr2.bins")
    write_bins(bins, uri)
    back = read_bins(uri)
    for name in ("starts", "codes", "blacklisted", "open"):
        expected, got = getattr(bins, name), getattr(back, name)
        assert got.dtype == expected.dtype and np.array_equal(got, expected), name
    assert (back.tf, back.chrom, back.split) == ("CTCF", "chr2", TRAIN)
