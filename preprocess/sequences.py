"""Sequence windows around 200 bp bins, read from an indexed genome FASTA."""

from __future__ import annotations

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

    def __init__(self, fasta_path: str, window: int, pad: bool = False) -> None:
        self._fasta = Fasta(fasta_path, as_raw=True, sequence_always_upper=True, rebuild=False)
        self._window = window
        self._pad = pad
        self._key: tuple[str, int] | None = None
        self._value: bytes | None = None

    def chromosomes(self) -> set[str]:
        """Names of the sequences in the FASTA."""
        return set(self._fasta.keys())

    def read(self, chrom: str, start: int) -> bytes | None:
        """Window bytes for the bin at ``chrom:start``.

        A window that leaves the chromosome gives None, or with ``pad`` the
        bases that exist with N for the rest.
        """
        if self._key == (chrom, start):
            return self._value
        low, high = window_bounds(start, self._window)
        record = self._fasta[chrom]
        if 0 <= low and high <= len(record):
            value = record[low:high].encode("ascii")
        elif self._pad:
            inside = record[max(low, 0) : min(high, len(record))].encode("ascii")
            value = b"N" * max(0, -low) + inside + b"N" * max(0, high - len(record))
        else:
            value = None
        self._key, self._value = (chrom, start), value
        return value


