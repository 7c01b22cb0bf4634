"""ENCODE-DREAM label files: header and row parsing with precise errors.

A label file ``<TF>.train.labels.tsv(.gz)`` starts with the header
``chr start stop <cell>...`` (cells in alphabetical order) followed by one
200 bp bin per line on a 50 bp grid, with one of ``U``, ``B`` or ``A`` per
cell.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

BIN_SIZE = 200
BIN_STEP = 50

#: Integer codes used in shards and the training records.
LABEL_CODES: dict[str, int] = {"U": 0, "B": 1, "A": -1}


class BadInputError(ValueError):
    """A malformed input; the message names file, line and reason."""

    def __init__(self, uri: str, line: int, reason: str) -> None:
        super().__init__(f"{uri}:{line}: {reason}")
        self.uri = uri
        self.line = line
        self.reason = reason

    @classmethod
    def from_message(cls, message: str) -> "BadInputError":
        """Rebuild the error from its text (it crosses Spark as a string)."""
        found = re.match(r"^(.*):(\d+): (.*)$", message)
        if not found:
            return cls("(unknown file)", 0, message)
        return cls(found.group(1), int(found.group(2)), found.group(3))


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
