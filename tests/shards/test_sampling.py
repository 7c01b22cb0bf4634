"""Deterministic negative sampling: the hashed uniform numbers of uniform_draw
and the per-class probabilities of draw_probabilities."""

from __future__ import annotations

import numpy as np
import pytest

from preprocess.sampling import draw_probabilities
from tfbs.formats.draws import uniform_draw
from tfbs.formats.dream import BIN_STEP

#: The coordinates of one draw: seed, draw, TF, cell, chromosome.
BASE = (13, 0, "CTCF", "K562", "chr2")
#: 100k bins of a chromosome's 50 bp grid, the shape of real input.
GRID = np.arange(100_000, dtype=np.int64) * BIN_STEP


def _draw(starts: np.ndarray, **changes) -> np.ndarray:
    """uniform_draw at BASE with some coordinates changed."""
    args = dict(zip(("seed", "draw", "tf", "cell", "chrom"), BASE)) | changes
    return uniform_draw(args["seed"], args["draw"], args["tf"], args["cell"], args["chrom"], starts)


def test_same_coordinates_give_the_same_numbers_in_zero_one():
    first, second = _draw(GRID), _draw(GRID.copy())
    assert first.dtype == np.float64 and first.shape == GRID.shape
    assert np.array_equal(first, second)
    assert first.min() >= 0.0 and first.max() < 1.0


def test_a_bins_number_does_not_depend_on_the_other_bins():
    whole = _draw(GRID[:5000])
    order = np.random.default_rng(0).permutation(5000)
    assert np.array_equal(_draw(GRID[:5000][order]), whole[order])
    pieces = [_draw(part) for part in np.array_split(GRID[:5000], 7)]
    assert np.array_equal(np.concatenate(pieces), whole)
    assert _draw(np.array([GRID[1234]]))[0] == whole[1234]
    # A repeated bin gets the same number both times.
    repeated = _draw(np.array([250, 100, 250]))
    assert repeated[0] == repeated[2] != repeated[1]


@pytest.mark.parametrize(
    "changes", [{"seed": 14}, {"draw": 1}, {"tf": "FOXA1"}, {"cell": "HepG2"}, {"chrom": "chr3"}], ids=str
)
def test_every_coordinate_changes_the_numbers_independently(changes):
    base, other = _draw(GRID[:20_000]), _draw(GRID[:20_000], **changes)
    assert np.mean(base == other) < 1e-3
    assert abs(np.corrcoef(base, other)[0, 1]) < 0.03
    # Kept at p = 0.5 by both: a quarter of the bins if independent.
    both = np.mean((base < 0.5) & (other < 0.5))
    assert 0.23 < both < 0.27


def test_tab_separated_coordinates_do_not_collide():
    # "chr1" + draw 11 must not hash like "chr11" + draw 1 and so on.
    assert not np.array_equal(_draw(GRID[:100], draw=11, chrom="chr1"), _draw(GRID[:100], draw=1, chrom="chr11"))
    assert not np.array_equal(_draw(GRID[:100], seed=1, draw=23), _draw(GRID[:100], seed=12, draw=3))


def test_numbers_are_uniform_on_a_grid_of_starts():
    values = np.sort(_draw(GRID))
    n = len(values)
    # Kolmogorov-Smirnov distance to U(0, 1); 0.0065 is its 0.1% critical value.
    ecdf_high = np.arange(1, n + 1) / n
    distance = max(np.max(ecdf_high - values), np.max(values - (ecdf_high - 1 / n)))
    assert distance < 0.0065
    counts = np.bincount((values * 10).astype(int), minlength=10)
    assert counts.min() > 9_500 and counts.max() < 10_500
    # Neighbouring bins are not correlated.
    unsorted = _draw(GRID)
    assert abs(np.corrcoef(unsorted[:-1], unsorted[1:])[0, 1]) < 0.02


def test_drawing_below_p_keeps_a_share_p_of_the_bins():
    values = _draw(GRID)
    for p in (0.0, 0.01, 0.3, 1.0):
        kept = np.sum(values < p)
        sd = np.sqrt(len(GRID) * p * (1 - p))
        assert abs(kept - p * len(GRID)) <= 5 * sd + 1e-9, p


@pytest.mark.parametrize(
    ("n_bound", "n_open", "n_closed", "ratio", "hard"),
    [(10, 100, 1000, 2.0, 0.5), (50, 400, 10_000, 1.0, 0.3), (7, 1000, 2000, 3.0, 0.0), (7, 1000, 2000, 3.0, 1.0)],
)
def test_expected_negatives_and_hard_share(n_bound, n_open, n_closed, ratio, hard):
    p_open, p_closed = draw_probabilities(n_bound, n_open, n_closed, ratio, hard)
    expected_open, expected_closed = p_open * n_open, p_closed * n_closed
    assert expected_open + expected_closed == pytest.approx(ratio * n_bound)
    assert expected_open == pytest.approx(hard * ratio * n_bound)


def test_closed_bins_make_up_for_too_few_open_ones():
    p_open, p_closed = draw_probabilities(100, 30, 10_000, 2.0, 0.5)  # wants 100 open, has 30
    assert p_open == 1.0
    assert 30 + p_closed * 10_000 == pytest.approx(200)


def test_no_open_bins_at_all_draws_only_closed():
    # Without DNase peaks every bin reads closed.
    p_open, p_closed = draw_probabilities(20, 0, 1000, 2.0, 0.5)
    assert p_open == 0.0
    assert p_closed == pytest.approx(0.04)


def test_probabilities_cap_at_one():
    assert draw_probabilities(100, 10, 20, 5.0, 0.5) == (1.0, 1.0)
    assert max(draw_probabilities(100, 0, 0, 5.0, 0.5)) <= 1.0


def test_no_bound_bins_draw_nothing():
    assert draw_probabilities(0, 100, 1000, 2.0, 0.5) == (0.0, 0.0)
