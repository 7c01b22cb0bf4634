"""ENCODE-DREAM facts every stage shares: bins, labels, splits and the file readers.

A label file ``<TF>.train.labels.tsv(.gz)`` starts with the header
``chr start stop <cell>...`` (cells in alphabetical order) followed by one
200 bp bin per line on a 50 bp grid, with one of ``U``, ``B`` or ``A`` per
cell. Preprocessing, training, evaluation and the generator all read these
definitions from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from tfbs import storage
from tfbs.errors import BadInputError
from tfbs.formats.bed import read_bed

BIN_SIZE = 200
BIN_STEP = 50

#: Integer codes used in shards, training records and the metrics (A is
#: removed before scoring).
LABEL_CODES: dict[str, int] = {"U": 0, "B": 1, "A": -1}

#: Chromosomes held out for testing and validation in ENCODE-DREAM practice.
DREAM_TEST_CHROMS = ("chr1", "chr8", "chr21")
DREAM_VALID_CHROMS = ("chr11",)

TRAIN, VALID, TEST = "train", "valid", "test"


def split_of(chrom: str, test_chroms: list[str], valid_chroms: list[str]) -> str:
    """Return the split a chromosome belongs to.

    Examples
    --------
    >>> split_of("chr8", ["chr1", "chr8", "chr21"], ["chr11"])
    'test'
    """
    if chrom in test_chroms:
        return TEST
    if chrom in valid_chroms:
        return VALID
    return TRAIN


@dataclass(frozen=True)
class LabelRow:
    """One parsed label line."""

    chrom: str
    start: int
    stop: int
    labels: str  # one character per cell, in header order


def parse_label_header(line: str, uri: str) -> list[str]:
    """Return the cell names of a DREAM label header.

    Raises
    ------
    BadInputError
        If the first three columns are not ``chr start stop``, no cell is
        named, or the cells are not in alphabetical order.
    """
    fields = line.rstrip("\r\n").split("\t")
    if fields[:3] != ["chr", "start", "stop"]:
        raise BadInputError(uri, 1, f"header must start with chr, start, stop; found {fields[:3]}")
    cells = fields[3:]
    if not cells:
        raise BadInputError(uri, 1, "header names no cell type")
    if cells != sorted(cells) or len(set(cells)) != len(cells):
        raise BadInputError(uri, 1, f"cell columns must be unique and alphabetical; found {cells}")
    return cells


def parse_label_line(line: str, n_cells: int, uri: str, line_number: int) -> LabelRow:
    """Parse and check one data line of a label file.

    Parameters
    ----------
    line
        The raw text line.
    n_cells
        Number of cell columns the header announced.
    uri, line_number
        Where the line comes from (1-based, the header is line 1), for errors.

    Raises
    ------
    BadInputError
        On a wrong column count, non-integer or off-grid coordinates, a bin
        that is not 200 bp, or an unknown label.
    """
    fields = line.rstrip("\r\n").split("\t")
    if len(fields) != 3 + n_cells:
        raise BadInputError(uri, line_number, f"expected {3 + n_cells} columns, found {len(fields)}")
    chrom, start_text, stop_text = fields[:3]
    try:
        start, stop = int(start_text), int(stop_text)
    except ValueError:
        raise BadInputError(uri, line_number, f"start/stop not integers: {start_text!r}, {stop_text!r}") from None
    if stop - start != BIN_SIZE:
        raise BadInputError(uri, line_number, f"bin is {stop - start} bp, expected {BIN_SIZE}")
    if start < 0 or start % BIN_STEP:
        raise BadInputError(uri, line_number, f"start {start} is not on the {BIN_STEP} bp grid")
    labels = fields[3:]
    for value in labels:
        if value not in LABEL_CODES:
            raise BadInputError(uri, line_number, f"unknown label {value!r} (expected U, B or A)")
    return LabelRow(chrom, start, stop, "".join(labels))


def read_chrom_sizes(uri: str) -> dict[str, int]:
    """Read a ``chrom<TAB>size`` file (extra columns are ignored), sizes in file order.

    Raises
    ------
    BadInputError
        On a line that is not ``chrom<TAB>size``, a size that is not a
        positive integer, a chromosome listed twice, or a file without any.
    """
    sizes: dict[str, int] = {}
    first_seen: dict[str, int] = {}
    with storage.open_text(uri) as handle:
        for number, line in enumerate(handle, start=1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) < 2:
                raise BadInputError(uri, number, f"expected 'chrom<TAB>size', found {line.strip()!r}")
            chrom, size = fields[0], fields[1]
            if not (size.isascii() and size.isdigit()) or int(size) == 0:
                raise BadInputError(uri, number, f"size {size!r} of {chrom} is not a positive integer")
            if chrom in first_seen:
                raise BadInputError(uri, number, f"{chrom} is listed twice (first on line {first_seen[chrom]})")
            first_seen[chrom] = number
            sizes[chrom] = int(size)
    if not sizes:
        raise BadInputError(uri, 1, "no chromosome sizes (the file is empty)")
    return sizes


def read_bed_intervals(
    uri: str, chrom_sizes: dict[str, int] | None = None, unknown_chroms: Literal["error", "skip"] = "error"
) -> dict[str, tuple[np.ndarray, ...]]:
    """Read the first three columns of a BED/narrowPeak file, by chromosome: ``{chrom: (starts, ends)}``.

    Every line is checked (see :func:`tfbs.formats.bed.read_bed`, which this is).

    Raises
    ------
    BadInputError
        Naming file, line and reason.
    """
    return read_bed(uri, chrom_sizes, unknown_chroms)


def read_dnase_peaks(uri: str, chrom_sizes: dict[str, int] | None = None) -> dict[str, tuple[np.ndarray, ...]]:
    """Read a DNase narrowPeak file as ``{chrom: (starts, ends, summits)}``, every line checked.

    Summits are positions on the chromosome (a peak's midpoint when the file
    has no summit column or the summit is -1); they place each bin in its
    open region (:func:`tfbs.formats.annotate.peak_proximity`).

    Raises
    ------
    BadInputError
        Naming file, line and reason.
    """
    return read_bed(uri, chrom_sizes, summits=True)
