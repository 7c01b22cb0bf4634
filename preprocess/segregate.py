"""A/B/U segregation and sampling of one chromosome's bins for one TF.

The label rows of a chromosome arrive as pieces; they are sorted, annotated
by bedtools (blacklist, DNase peak and summit per cell), and every (bin, cell) gets
an outcome from :data:`tfbs.formats.manifest.OUTCOMES`:

- test chromosomes keep every bin (A included: evaluation removes it the
  official way), unless blacklisted or its window is unusable;
- train/valid keep all B, never A, and U when a negative draw picks it;
  several draws can pick different U, and positives are shared by all;
  with ``cross_cell``, every draw also keeps the U bins that are B in
  another training cell;
- a held-out cell's rows outside the test split are excluded before any
  decision reads their labels (``excluded_heldout_cell``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from preprocess.label_reader import CODE_A, CODE_B, CODE_U, LabelPiece, ReadReport
from tfbs.formats.annotate import Intervals, peak_proximity
from tfbs.formats.draws import draw_threshold, uniform_draw
from tfbs.formats.dream import TEST
from tfbs.formats.genome import WINDOW_OK, WINDOW_OUT_OF_BOUNDS
from tfbs.formats.manifest import OUTCOMES

BLACKLIST = "blacklist"

_T = TypeVar("_T")


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
    inverse: np.ndarray | slice
    if np.all(starts[1:] > starts[:-1]):
        # A sorted file without repeats (the usual case): no sort, no mapping.
        unique, inverse = starts, slice(None)
    else:
        order = np.argsort(starts, kind="stable")
        starts, codes = starts[order], codes[order]
        # Each distinct bin goes to bedtools once, even if a file repeats it.
        unique, inverse = np.unique(starts, return_inverse=True)
    proximity = peak_proximity(chrom, unique, intervals)
    missing = np.zeros(len(unique), dtype=np.float32)
    blacklisted = proximity.get(BLACKLIST, missing)[inverse] > 0
    is_open = np.empty((len(starts), len(cells)), dtype=np.float32)
    for c, cell in enumerate(cells):
        is_open[:, c] = proximity.get(dnase_source(cell), missing)[inverse]
    return ChromBins(tf, chrom, split, starts, codes, blacklisted, is_open)


def annotate_while_reading(
    tf: str,
    items: Iterable[LabelPiece | ReadReport],
    cells: list[str],
    splits: dict[str, str],
    intervals: dict[str, Intervals],
    threads: int,
    then: Callable[[ChromBins], _T],
) -> Iterator[_T | ReadReport]:
    """Annotate each chromosome of a label file as soon as its rows end, while the next ones are read.

    A ``.gz`` label file is read by one task; annotating in ``threads``
    background threads (bedtools runs as a child process, the rest is mostly
    numpy and Arrow, which release the GIL) puts the second core to work
    during the read instead of after it.

    Parameters
    ----------
    tf
        The file's TF.
    items
        :func:`preprocess.label_reader.read_label_file`'s pieces, each
        chromosome's together, then its report.
    cells, splits, intervals
        As for :func:`annotate_bins`; ``splits`` and ``intervals`` by chromosome.
    threads
        Chromosomes annotated at once; as many more wait, read, before the
        reader pauses, so memory stays bounded by a few chromosomes.
    then
        Applied to each chromosome's bins in its thread (to store them, say).

    Yields
    ------
    object or ReadReport
        ``then(bins)`` of every chromosome (in the order they finish), then
        the report.
    """

    def annotate(chrom: str, pieces: list[LabelPiece]) -> _T:
        return then(annotate_bins(tf, chrom, splits[chrom], pieces, cells, intervals.get(chrom, {})))

    in_flight: deque[Future[_T]] = deque()
    with ThreadPoolExecutor(threads, thread_name_prefix=f"annotate-{tf}") as pool:

        def submit(pieces: list[LabelPiece]) -> None:
            in_flight.append(pool.submit(annotate, pieces[0].chrom, pieces))

        pieces: list[LabelPiece] = []  # of the chromosome being read
        for item in items:
            if isinstance(item, ReadReport):
                if pieces:
                    submit(pieces)
                while in_flight:
                    yield in_flight.popleft().result()
                yield item
                return
            if pieces and item.chrom != pieces[0].chrom:
                submit(pieces)
                pieces = []
            pieces.append(item)
            while in_flight and (in_flight[0].done() or len(in_flight) > 2 * threads):
                yield in_flight.popleft().result()


def _per_column(mask: np.ndarray) -> np.ndarray:
    """int64 count of True in each column of a (bins, cells) mask.

    Column by column on a transposed copy: ``mask.sum(axis=0)`` walks a
    handful of columns in a strided inner loop, five times slower on a
    chromosome's 5 M bins in 5 cells.

    Examples
    --------
    >>> _per_column(np.array([[True, False], [True, True], [False, False]])).tolist()
    [2, 1]
    """
    return np.array([np.count_nonzero(column) for column in np.ascontiguousarray(mask.T)], dtype=np.int64)


def class_counts(bins: ChromBins, heldout: np.ndarray) -> np.ndarray:
    """Per cell: (bound, open unbound, closed unbound) bins outside the blacklist.

    Parameters
    ----------
    heldout
        Per cell, True for a held-out cell: its counts outside the test
        split stay zero (its labels there are never read).

    Returns
    -------
    numpy.ndarray
        int64 (n_cells, 3).
    """
    usable = ~bins.blacklisted[:, None]
    unbound = (bins.codes == CODE_U) & usable
    counts = np.stack(
        [
            _per_column((bins.codes == CODE_B) & usable),
            _per_column(unbound & (bins.open > 0)),
            _per_column(unbound & (bins.open == 0)),
        ],
        axis=1,
    )
    if bins.split != TEST:
        counts[heldout] = 0
    return counts


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
    window_status_of: Callable[[np.ndarray], np.ndarray],
    heldout: frozenset[str] = frozenset(),
    cross_cell: bool = False,
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
    window_status_of
        The :func:`tfbs.formats.genome.window_status` of the bins at the indices it
        is given. Asked only for the bins some cell would keep: on a
        training chromosome a few per cent of them.
    heldout
        Held-out cells: outside the test split their rows are excluded
        (``excluded_heldout_cell``) whatever their label.
    cross_cell
        Every draw also keeps each U bin that is B in another cell outside
        ``heldout`` (``preprocess.cross_cell_negatives``).
    """
    code = {name: i for i, name in enumerate(OUTCOMES)}
    n, n_cells = bins.codes.shape
    outcome = np.full((n, n_cells), code["kept"], dtype=np.int8)
    drawn = np.zeros((n, n_cells, n_draws), dtype=bool)
    if bins.split != TEST:
        bound_elsewhere = None
        if cross_cell:
            # A held-out cell's labels are never read here, so they make no bin bound elsewhere.
            read = [c for c, cell in enumerate(cells) if cell not in heldout]
            bound_elsewhere = (bins.codes[:, read] == CODE_B).any(axis=1)
        for c, cell in enumerate(cells):
            if cell in heldout:
                outcome[:, c] = code["excluded_heldout_cell"]
                continue
            # Whole columns, not the unbound bins picked out: nearly every bin is unbound, and
            # picking them out and putting the draws back cost more than drawing for all.
            unbound = bins.codes[:, c] == CODE_U
            threshold = draw_threshold(bins.open[:, c], *probabilities[cell])
            kept_by_any = np.zeros(n, dtype=bool)
            for d in range(n_draws):
                picked = uniform_draw(seed, d, bins.tf, cell, bins.chrom, bins.starts) < threshold
                if bound_elsewhere is not None:
                    picked |= bound_elsewhere
                picked &= unbound
                drawn[:, c, d] = picked
                kept_by_any |= picked
            column = outcome[:, c]
            column[unbound & ~kept_by_any] = code["dropped_sampling"]
            column[bins.codes[:, c] == CODE_A] = code["excluded_ambiguous"]
    # Test bins all need their window; train/valid bins where a cell keeps them.
    rows = np.flatnonzero((outcome == code["kept"]).any(axis=1))
    status = window_status_of(rows)
    bad = status != WINDOW_OK
    bad_rows = rows[bad]
    reason = np.where(
        status[bad] == WINDOW_OUT_OF_BOUNDS, code["dropped_window_out_of_bounds"], code["dropped_window_n"]
    )
    affected = outcome[bad_rows]
    kept = affected == code["kept"]
    affected[kept] = np.broadcast_to(reason[:, None].astype(np.int8), affected.shape)[kept]
    outcome[bad_rows] = affected
    outcome[bins.blacklisted] = code["excluded_blacklist"]
    if bins.split != TEST:
        # A held-out cell's label is never read there, blacklisted or not.
        outcome[:, [c for c, cell in enumerate(cells) if cell in heldout]] = code["excluded_heldout_cell"]
    drawn &= (outcome == code["kept"])[:, :, None]
    return Decision(outcome, drawn)
