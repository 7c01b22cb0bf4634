"""Blacklist and DNase overlap of one chromosome's bins, decided by bedtools.

One ``bedtools intersect -sorted -wa -wb`` pass per task: every bin of the
chromosome against one BED that holds the blacklist and each cell's DNase
peaks, told apart by the name column. bedtools writes only the overlapping
pairs, so its output stays small however many bins go in.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from tfbs.bedtools import run_bedtools
from tfbs.dream import BIN_SIZE

#: ``{source name: (starts, ends)}`` of the intervals on one chromosome.
Intervals = dict[str, tuple[np.ndarray, np.ndarray]]

_TSV = pacsv.WriteOptions(include_header=False, delimiter="\t", quoting_style="none")


def _write_bed(path: str, chrom: str, starts: np.ndarray, ends: np.ndarray, names: np.ndarray | None = None) -> None:
    columns = {
        "chrom": pa.repeat(chrom, len(starts)),
        "start": pa.array(starts, pa.int64()),
        "end": pa.array(ends, pa.int64()),
    }
    if names is not None:
        columns["name"] = pa.array(names, pa.string())
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
    flags = {source: np.zeros(len(bin_starts), dtype=bool) for source in intervals}
    sources = [source for source, (starts, _) in intervals.items() if len(starts)]
    if len(bin_starts) == 0 or not sources:
        return flags
    with tempfile.TemporaryDirectory(prefix="tfbs-annotate-", dir=scratch) as work:
        bins_bed, intervals_bed, hits_tsv = (os.path.join(work, name) for name in ("bins.bed", "b.bed", "hits.tsv"))
        _write_bed(bins_bed, chrom, bin_starts, bin_starts + BIN_SIZE)
        starts = np.concatenate([intervals[s][0] for s in sources])
        ends = np.concatenate([intervals[s][1] for s in sources])
        # Sources go to bedtools as numbers, so its output parses as integers.
        names = np.concatenate([np.full(len(intervals[s][0]), str(i), dtype=object) for i, s in enumerate(sources)])
        order = np.lexsort((ends, starts))
        _write_bed(intervals_bed, chrom, starts[order], ends[order], names[order])
        run_bedtools(["intersect", "-sorted", "-wa", "-wb", "-a", bins_bed, "-b", intervals_bed], stdout_path=hits_tsv)
        if os.path.getsize(hits_tsv) == 0:
            return flags
        hits = pacsv.read_csv(
            hits_tsv,
            read_options=pacsv.ReadOptions(column_names=["c", "start", "end", "c2", "s2", "e2", "source"]),
            parse_options=pacsv.ParseOptions(delimiter="\t", quote_char=False),
            convert_options=pacsv.ConvertOptions(include_columns=["start", "source"]),
        )
    hit_starts = hits.column("start").to_numpy()
    hit_sources = hits.column("source").to_numpy()
    for i, source in enumerate(sources):
        found = np.unique(hit_starts[hit_sources == i])
        flags[source][np.searchsorted(bin_starts, found)] = True
    return flags
