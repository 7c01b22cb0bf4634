"""A/B/U segregation of label bins with bedtools, inside one Spark task.

Each task holds the bins of one or a few chromosomes. It writes them to a
BED file, lets the bedtools binary count overlaps with the blacklist and with
each cell's DNase peaks, and yields one record per (bin, cell) carrying the
label, the DNase overlap and whether the bin is blacklisted.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from preprocess.bedtools import run_bedtools


class BinCell(NamedTuple):
    """One bin in one cell type, after segregation."""

    chrom: str
    start: int
    stop: int
    line: int
    cell: str
    label: str
    dnase: float
    blacklisted: bool


def _write_bins(rows: Iterable[tuple[str, int, int, str, int]], path: str) -> int:
    count = 0
    with open(path, "w") as out:
        for chrom, start, stop, labels, line in rows:
            out.write(f"{chrom}\t{start}\t{stop}\t{labels}\t{line}\n")
            count += 1
    return count


def segregate_bins(
    rows: Iterable[tuple[str, int, int, str, int]],
    cells: list[str],
    dnase_peaks: list[str],
    blacklist: str | None,
    tmp_dir: str | None = None,
) -> Iterator[BinCell]:
    """Annotate bins with bedtools and split them into (bin, cell) records.

    Parameters
    ----------
    rows
        ``(chrom, start, stop, labels, line)`` tuples, ``labels`` holding one
        character per cell in ``cells`` order.
    cells
        Cell names, in label-file order.
    dnase_peaks
        Local paths of each cell's DNase peak file (same order as ``cells``).
    blacklist
        Local path of the blacklist BED, or None.
    tmp_dir
        Where the task's scratch files go (default: the system temp dir).

    Yields
    ------
    BinCell
        One record per bin and cell.
    """
    with tempfile.TemporaryDirectory(prefix="tfbs-segregate-", dir=tmp_dir) as scratch:
        current = os.path.join(scratch, "bins.bed")
        if _write_bins(rows, current) == 0:
            return
        # Each intersect appends one count column: blacklist first, then one
        # per cell. bedtools keeps the extra columns of -a untouched.
        annotations = ([blacklist] if blacklist else []) + list(dnase_peaks)
        for index, other in enumerate(annotations):
            annotated = os.path.join(scratch, f"annotated.{index}.bed")
            run_bedtools(["intersect", "-a", current, "-b", other, "-c"], stdout_path=annotated)
            current = annotated
        first_count = 5
        with open(current) as handle:
            for text in handle:
                fields = text.rstrip("\n").split("\t")
                counts = fields[first_count:]
                blacklisted = bool(blacklist) and counts[0] != "0"
                dnase_counts = counts[1:] if blacklist else counts
                chrom, start, stop, labels, line = fields[:first_count]
                for cell_index, cell in enumerate(cells):
                    yield BinCell(
                        chrom,
                        int(start),
                        int(stop),
                        int(line),
                        cell,
                        labels[cell_index],
                        1.0 if dnase_counts[cell_index] != "0" else 0.0,
                        blacklisted,
                    )
