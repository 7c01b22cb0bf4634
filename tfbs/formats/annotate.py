"""Blacklist and DNase overlap of one chromosome's bins, decided by bedtools.

One ``bedtools intersect -sorted -wa -wb`` pass per task: the chromosome's
bins against one BED that holds the blacklist and each cell's DNase peaks,
told apart by the name column, each interval's summit in the score column.
bedtools writes only the overlapping pairs, so its output stays small; only
the bins within reach of an interval go in (:func:`_near_intervals`), the
rest overlapping nothing.

A bin's DNase input is :func:`peak_proximity`, not a plain overlap flag: an
open region is a few hundred bases wide, and where its summit lies tells
which of the motif matches it covers is the one a factor binds (on the
demo, a model given the flag alone could not tell a forkhead motif at the
summit from a chance match 200 bp beside it).
"""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from tfbs.formats.bedtools import run_bedtools
from tfbs.formats.dream import BIN_SIZE

#: ``{source name: (starts, ends)}`` or ``(starts, ends, summits)`` of the intervals on one chromosome.
Intervals = dict[str, tuple[np.ndarray, ...]]

#: Distance from a bin's centre to the summit beyond which proximity stops falling (see :func:`peak_proximity`).
SUMMIT_REACH_BP = 500

_TSV = pacsv.WriteOptions(include_header=False, delimiter="\t", quoting_style="none")


def _write_bed(
    path: str,
    chrom: str,
    starts: np.ndarray,
    ends: np.ndarray,
    names: np.ndarray | None = None,
    summits: np.ndarray | None = None,
) -> None:
    columns = {
        "chrom": pa.repeat(chrom, len(starts)),
        "start": pa.array(starts, pa.int64()),
        "end": pa.array(ends, pa.int64()),
    }
    if names is not None:
        columns["name"] = pa.array(names, pa.string())
    if summits is not None:
        columns["summit"] = pa.array(summits, pa.int64())
    pacsv.write_csv(pa.table(columns), path, _TSV)


def overlap_flags(
    chrom: str, bin_starts: np.ndarray, intervals: Intervals, scratch: str | None = None
) -> dict[str, np.ndarray]:
    """Which bins overlap each interval source, by ``bedtools intersect``.

    Parameters
    ----------
    chrom
        The chromosome of every bin and interval.
    bin_starts
        Sorted, unique bin starts (bins are ``BIN_SIZE`` long).
    intervals
        ``{source: (starts, ends)}``, e.g. ``{"blacklist": ..., "dnase:K562": ...}``.
    scratch
        Directory for the task's temporary files (default: the system's).

    Returns
    -------
    dict
        ``{source: bool array}`` aligned with ``bin_starts``; a bin overlaps
        when it shares at least one base with an interval (bedtools' rule).
    """
    return {
        source: proximity > 0 for source, proximity in peak_proximity(chrom, bin_starts, intervals, scratch).items()
    }


def peak_proximity(
    chrom: str, bin_starts: np.ndarray, intervals: Intervals, scratch: str | None = None
) -> dict[str, np.ndarray]:
    """How close each bin's centre lies to the summit of a peak it overlaps, by ``bedtools intersect``.

    Parameters
    ----------
    chrom
        The chromosome of every bin and interval.
    bin_starts
        Sorted, unique bin starts (bins are ``BIN_SIZE`` long).
    intervals
        ``{source: (starts, ends, summits)}``, summits as positions on the
        chromosome; without summits (``(starts, ends)``) an interval's
        midpoint stands in.
    scratch
        Directory for the task's temporary files (default: the system's).

    Returns
    -------
    dict
        ``{source: float32 array}`` aligned with ``bin_starts``: 0 where the
        bin overlaps no interval (bedtools' rule: one shared base), else
        ``1 - min(d, SUMMIT_REACH_BP) / (2 * SUMMIT_REACH_BP)`` for the
        nearest summit ``d`` bases from the bin's centre among the intervals
        it overlaps, so 1 at a summit and never below 0.5 inside a peak.

    Examples
    --------
    >>> peaks = {"dnase": (np.array([0]), np.array([1000]), np.array([300]))}
    >>> peak_proximity("chr1", np.array([200, 600, 1000]), peaks)["dnase"].tolist()
    [1.0, 0.6000000238418579, 0.0]
    """
    proximity = {source: np.zeros(len(bin_starts), dtype=np.float32) for source in intervals}
    sources = [source for source, columns in intervals.items() if len(columns[0])]
    if len(bin_starts) == 0 or not sources:
        return proximity
    if np.any(bin_starts[1:] <= bin_starts[:-1]):
        raise ValueError(f"{chrom}: bin starts out of order or repeated; peak_proximity needs them sorted and unique")
    starts = np.concatenate([intervals[s][0] for s in sources])
    ends = np.concatenate([intervals[s][1] for s in sources])
    near = bin_starts[_near_intervals(bin_starts, starts, ends)]
    if len(near) == 0:
        return proximity
    with tempfile.TemporaryDirectory(prefix="tfbs-annotate-", dir=scratch) as work:
        bins_bed, intervals_bed, hits_tsv = (os.path.join(work, name) for name in ("bins.bed", "b.bed", "hits.tsv"))
        _write_bed(bins_bed, chrom, near, near + BIN_SIZE)
        summits = np.concatenate([_summits(intervals[s]) for s in sources])
        # Sources go to bedtools as numbers, so its output parses as integers.
        names = np.concatenate([np.full(len(intervals[s][0]), str(i), dtype=object) for i, s in enumerate(sources)])
        order = np.lexsort((ends, starts))
        _write_bed(intervals_bed, chrom, starts[order], ends[order], names[order], summits[order])
        run_bedtools(["intersect", "-sorted", "-wa", "-wb", "-a", bins_bed, "-b", intervals_bed], stdout_path=hits_tsv)
        if os.path.getsize(hits_tsv) == 0:
            return proximity
        hits = pacsv.read_csv(
            hits_tsv,
            read_options=pacsv.ReadOptions(column_names=["c", "start", "end", "c2", "s2", "e2", "source", "summit"]),
            parse_options=pacsv.ParseOptions(delimiter="\t", quote_char=False),
            convert_options=pacsv.ConvertOptions(include_columns=["start", "source", "summit"]),
        )
    hit_starts = hits.column("start").to_numpy()
    hit_sources = hits.column("source").to_numpy()
    distance = np.minimum(np.abs(hits.column("summit").to_numpy() - (hit_starts + BIN_SIZE // 2)), SUMMIT_REACH_BP)
    closeness = (1.0 - distance / (2 * SUMMIT_REACH_BP)).astype(np.float32)
    for i, source in enumerate(sources):
        mine = hit_sources == i
        # A bin inside two peaks takes the nearer summit.
        np.maximum.at(proximity[source], np.searchsorted(bin_starts, hit_starts[mine]), closeness[mine])
    return proximity


def _near_intervals(bin_starts: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Which sorted bins lie within one base of an interval: a superset of those bedtools finds overlapping.

    Only these go to bedtools, which still decides every overlap. The
    others, most of a genome's bins (DNase peaks cover a few per cent of
    it), cannot overlap anything; writing them out for bedtools to pass over
    was most of the seventh of preprocessing's time saved at full size when
    they were left out (docs/benchmarks.md).

    Examples
    --------
    >>> _near_intervals(np.array([0, 200, 400, 600]), np.array([420]), np.array([430])).tolist()
    [False, False, True, False]
    """
    # Bin [b, b + BIN_SIZE) shares a base with [s, e) when s - BIN_SIZE < b < e; one base more each side.
    first = np.searchsorted(bin_starts, starts - BIN_SIZE, side="left")
    stop = np.searchsorted(bin_starts, ends + 1, side="right")
    n_bins = len(bin_starts)
    opened = np.bincount(first, minlength=n_bins + 1) - np.bincount(stop, minlength=n_bins + 1)
    return np.cumsum(opened[:-1]) > 0


def dnase_proximity(chrom: str, starts: np.ndarray, peaks: dict[str, dict]) -> dict[str, np.ndarray]:
    """:func:`peak_proximity` of bins in any order, repeats allowed, per cell (one bedtools run for all cells).

    Parameters
    ----------
    chrom
        The bins' chromosome.
    starts
        Bin starts.
    peaks
        ``{cell: {chrom: (starts, ends, summits)}}`` (:func:`tfbs.formats.dream.read_dnase_peaks`).

    Returns
    -------
    dict
        ``{cell: float32 array}`` aligned with ``starts``.
    """
    unique, inverse = np.unique(starts, return_inverse=True)
    empty = (np.empty(0, np.int64), np.empty(0, np.int64))
    proximity = peak_proximity(chrom, unique, {cell: by_chrom.get(chrom, empty) for cell, by_chrom in peaks.items()})
    return {cell: values[inverse] for cell, values in proximity.items()}


def _summits(columns: tuple[np.ndarray, ...]) -> np.ndarray:
    """The summits of ``(starts, ends[, summits])``, midpoints when there are none."""
    return columns[2] if len(columns) > 2 else (columns[0] + columns[1]) // 2
