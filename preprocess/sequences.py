"""Sequence windows around 200 bp bins, read from an indexed genome FASTA."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from pyfaidx import Fasta

from preprocess.dream_formats import BIN_SIZE


def window_bounds(start: int, window: int) -> tuple[int, int]:
    """The ``window``-bp interval centred on the bin that starts at ``start``.

    Examples
    --------
    >>> window_bounds(1000, 1000)
    (600, 1600)
    """
    centre = start + BIN_SIZE // 2
    return centre - window // 2, centre - window // 2 + window


class WindowReader:
    """Reads windows from a FASTA with a ``.fai`` index, caching the last one.

    Rows of one bin in several cells come one after the other, so caching a
    single window avoids reading the same bases once per cell.
    """

    def __init__(self, fasta_path: str, window: int) -> None:
        self._fasta = Fasta(fasta_path, as_raw=True, sequence_always_upper=True, rebuild=False)
        self._window = window
        self._key: tuple[str, int] | None = None
        self._value: bytes | None = None

    def chromosomes(self) -> set[str]:
        """Names of the sequences in the FASTA."""
        return set(self._fasta.keys())

    def read(self, chrom: str, start: int) -> bytes | None:
        """Window bytes for the bin at ``chrom:start``; None if it leaves the chromosome."""
        if self._key == (chrom, start):
            return self._value
        low, high = window_bounds(start, self._window)
        record = self._fasta[chrom]
        value = None if low < 0 or high > len(record) else record[low:high].encode("ascii")
        self._key, self._value = (chrom, start), value
        return value


def attach_windows(rows: Iterable[tuple], fasta_path: str, window: int) -> Iterator[tuple]:
    """Append the window bytes to ``(chrom, start, ...)`` rows (None if out of bounds)."""
    reader = WindowReader(fasta_path, window)
    for row in rows:
        yield (*row, reader.read(row[0], row[1]))
