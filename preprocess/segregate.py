"""A/B/U segregation and sampling of one chromosome's bins for one TF.

The label rows of a chromosome arrive as pieces; they are sorted, annotated
by bedtools (blacklist, DNase peak and summit per cell), and every (bin, cell) gets
an outcome from :data:`tfbs.manifest.OUTCOMES`:

- test chromosomes keep every bin (A included: evaluation removes it the
  official way), unless blacklisted or its window is unusable;
- train/valid keep all B, never A, and U when a negative draw picks it;
  several draws can pick different U, and positives are shared by all.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from preprocess.label_reader import CODE_A, CODE_B, CODE_U, LabelPiece
from preprocess.sampling import uniform_draw
from tfbs import manifest as outcomes
from tfbs.annotate import Intervals, peak_proximity
from tfbs.dream import TEST
from tfbs.genome import WINDOW_OK, WINDOW_OUT_OF_BOUNDS

BLACKLIST = "blacklist"


def dnase_source(cell: str) -> str:
    """The interval-source name of a cell's DNase peaks."""
    return f"dnase:{cell}"


@dataclass
class ChromBins:
    """One TF's label rows on one chromosome, annotated."""

    tf: str
    chrom: str
    split: str
    starts: np.ndarray  # int64, sorted
    codes: np.ndarray  # uint8 (n, n_cells)
    blacklisted: np.ndarray  # bool (n,)
    open: np.ndarray  # float32 (n, n_cells): proximity to the cell's DNase summits, 0 outside its peaks


def annotate_bins(
    tf: str, chrom: str, split: str, pieces: list[LabelPiece], cells: list[str], intervals: Intervals
) -> ChromBins:
    """Sort a chromosome's pieces and annotate them with bedtools."""
    starts = np.concatenate([p.starts for p in pieces])
    codes = np.concatenate([p.codes for p in pieces])
    order = np.argsort(starts, kind="stable")
    starts, codes = starts[order], codes[order]
    # Each distinct bin goes to bedtools once, even if a file repeats it.
    unique, inverse = np.unique(starts, return_inverse=True)
    proximity = peak_proximity(chrom, unique, intervals)
    missing = np.zeros(len(unique), dtype=np.float32)
    blacklisted = proximity.get(BLACKLIST, missing)[inverse] > 0
    is_open = np.stack([proximity.get(dnase_source(cell), missing)[inverse] for cell in cells], axis=1)
    return ChromBins(tf, chrom, split, starts, codes, blacklisted, is_open.reshape(len(starts), len(cells)))


def class_counts(bins: ChromBins) -> np.ndarray:
    """Per cell: (bound, open unbound, closed unbound) bins outside the blacklist.

    Returns
    -------
    numpy.ndarray
        int64 (n_cells, 3).
    """
    usable = ~bins.blacklisted[:, None]
    unbound = (bins.codes == CODE_U) & usable
    return np.stack(
        [
            ((bins.codes == CODE_B) & usable).sum(axis=0),
            (unbound & (bins.open > 0)).sum(axis=0),
            (unbound & (bins.open == 0)).sum(axis=0),
        ],
        axis=1,
    ).astype(np.int64)


@dataclass
class Decision:
    """The outcome of every (bin, cell), and which draws picked each U."""

    outcome: np.ndarray  # int8 (n, n_cells), index into OUTCOMES
    drawn: np.ndarray  # bool (n, n_cells, n_draws)


def decide(
    bins: ChromBins,
    cells: list[str],
    probabilities: dict[str, tuple[float, float]],
    n_draws: int,
    seed: int,
    window_status: np.ndarray,
) -> Decision:
    """Give every (bin, cell) its outcome.

    Parameters
    ----------
    bins
        The annotated bins.
    cells
        Cell names, in the column order of ``bins.codes``.
    probabilities
        ``{cell: (p_open, p_closed)}`` for train/valid (unused for test).
    n_draws
        Number of negative draws.
    seed
        Sampling seed.
    window_status
        Per bin, from :func:`tfbs.genome.window_status`.
    """
    code = {name: i for i, name in enumerate(outcomes.OUTCOMES)}
    n, n_cells = bins.codes.shape
    outcome = np.full((n, n_cells), code["kept"], dtype=np.int8)
    drawn = np.zeros((n, n_cells, n_draws), dtype=bool)
    window_reason = np.where(
        window_status == WINDOW_OUT_OF_BOUNDS, code["dropped_window_out_of_bounds"], code["dropped_window_n"]
    )
    if bins.split == TEST:
        needs_window = np.ones((n, n_cells), dtype=bool)
    else:
        for c, cell in enumerate(cells):
            unbound = bins.codes[:, c] == CODE_U
            p_open, p_closed = probabilities[cell]
            threshold = np.where(bins.open[unbound, c] > 0, p_open, p_closed)
            for d in range(n_draws):
                pick = uniform_draw(seed, d, bins.tf, cell, bins.chrom, bins.starts[unbound]) < threshold
                drawn[unbound, c, d] = pick
        outcome[(bins.codes == CODE_U) & ~drawn.any(axis=2)] = code["dropped_sampling"]
        outcome[bins.codes == CODE_A] = code["excluded_ambiguous"]
        needs_window = outcome == code["kept"]
    bad_window = needs_window & (window_status != WINDOW_OK)[:, None]
    outcome[bad_window] = np.broadcast_to(window_reason[:, None], outcome.shape)[bad_window]
    outcome[bins.blacklisted] = code["excluded_blacklist"]
    drawn &= (outcome == code["kept"])[:, :, None]
    return Decision(outcome, drawn)
