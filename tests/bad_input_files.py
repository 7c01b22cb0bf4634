"""Small input files for the bad-input tests: label rows, peak lines, files written plain or gzipped."""

from __future__ import annotations

import gzip
from pathlib import Path

LABEL_HEADER = "chr\tstart\tstop\tHepG2\tK562\n"
MEME_HEAD = ["MEME version 4", "", "ALPHABET= ACGT", "", "strands: + -", ""]


def peak_line(chrom: str, start: object, end: object, columns: int = 10) -> str:
    """A narrowPeak line (its first ``columns`` fields)."""
    return "\t".join([chrom, str(start), str(end), ".", "500", ".", "9.1", "4.2", "3.3", "80"][:columns]) + "\n"


def write_file(path: Path, text: str) -> str:
    """Write ``text`` (gzipped when the name ends in ``.gz``); return its ``file://`` URI."""
    path.write_bytes(gzip.compress(text.encode()) if path.name.endswith(".gz") else text.encode())
    return f"file://{path}"


def label_file(tmp: Path, text: str) -> str:
    """A CTCF label file of HepG2 and K562 holding ``text`` after the header."""
    return write_file(tmp / "CTCF.train.labels.tsv.gz", LABEL_HEADER + text)
