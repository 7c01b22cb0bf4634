"""Sequence windows from an indexed genome FASTA, a chromosome at a time.

A task loads one chromosome into a ``uint8`` array through the ``.fai``
offsets (a byte-range read, so ``gs://`` and ``hdfs://`` genomes work
without staging the whole FASTA), then cuts every window it needs with one
vectorised gather. Windows are centred on the 200 bp bin.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tfbs import uri as storage
from tfbs.dream import BIN_SIZE

#: Status of a bin's window, as counted in the manifest.
WINDOW_OK, WINDOW_OUT_OF_BOUNDS, WINDOW_TOO_MANY_N = 0, 1, 2

_N = ord("N")


@dataclass(frozen=True)
class FaiEntry:
    """One line of a ``.fai`` index."""

    length: int
    offset: int
    line_bases: int
    line_width: int


def read_fai(fasta_uri: str) -> dict[str, FaiEntry]:
    """Read ``<fasta>.fai`` into ``{chrom: FaiEntry}``."""
    entries = {}
    for line in storage.read_text(f"{fasta_uri}.fai").splitlines():
        if line.strip():
            name, length, offset, line_bases, line_width = line.split("\t")[:5]
            entries[name] = FaiEntry(int(length), int(offset), int(line_bases), int(line_width))
    return entries


def load_chromosome(fasta_uri: str, entry: FaiEntry) -> np.ndarray:
    """The bases of one chromosome, upper-cased, as a ``uint8`` array."""
    n_full, rest = divmod(entry.length, entry.line_bases)
    n_bytes = n_full * entry.line_width + rest
    raw = np.frombuffer(storage.read_range(fasta_uri, entry.offset, n_bytes), dtype=np.uint8)
    bases = np.empty(entry.length, dtype=np.uint8)
    full_lines = bases[: n_full * entry.line_bases].reshape(n_full, entry.line_bases)
    full_lines[:] = raw[: n_full * entry.line_width].reshape(n_full, entry.line_width)[:, : entry.line_bases]
    bases[n_full * entry.line_bases :] = raw[n_full * entry.line_width :][:rest]
    # FASTA holds letters only: clearing bit 5 upper-cases them in place.
    np.bitwise_and(bases, 0xDF, out=bases)
    return bases


def window_starts(bin_starts: np.ndarray, window: int) -> np.ndarray:
    """First base of the ``window``-bp interval centred on each bin.

    Examples
    --------
    >>> window_starts(np.array([1000]), 1000).tolist()
    [600]
    """
    return np.asarray(bin_starts, dtype=np.int64) + BIN_SIZE // 2 - window // 2


def window_status(
    chromosome: np.ndarray, bin_starts: np.ndarray, window: int, max_n_fraction: float, pad: bool
) -> np.ndarray:
    """Classify each bin's window: OK, out of bounds, or too many N.

    Parameters
    ----------
    chromosome
        The chromosome's bases (:func:`load_chromosome`).
    bin_starts
        Bin starts on this chromosome.
    window
        Window length in bp.
    max_n_fraction
        Windows with a larger share of N (padding included) are
        :data:`WINDOW_TOO_MANY_N`.
    pad
        Windows that leave the chromosome are padded with N instead of being
        :data:`WINDOW_OUT_OF_BOUNDS`.
    """
    low = window_starts(bin_starts, window)
    high = low + window
    inside_low, inside_high = np.clip(low, 0, len(chromosome)), np.clip(high, 0, len(chromosome))
    # N counts by binary search over the N positions: one pass over the
    # chromosome for every window, memory in proportion to its Ns.
    n_positions = np.flatnonzero(chromosome == _N)
    inside_n = np.searchsorted(n_positions, inside_high) - np.searchsorted(n_positions, inside_low)
    n_count = inside_n + (inside_low - low) + (high - inside_high)
    status = np.full(len(low), WINDOW_OK, dtype=np.int8)
    status[n_count > max_n_fraction * window] = WINDOW_TOO_MANY_N
    if not pad:
        status[(low < 0) | (high > len(chromosome))] = WINDOW_OUT_OF_BOUNDS
    return status


def gather_windows(chromosome: np.ndarray, bin_starts: np.ndarray, window: int) -> np.ndarray:
    """Window bytes for each bin, N where a window leaves the chromosome.

    Returns
    -------
    numpy.ndarray
        ``uint8`` array (n_bins, window) of ASCII bases.
    """
    starts = window_starts(bin_starts, window)
    inside = (starts >= 0) & (starts + window <= len(chromosome))
    windows = np.full((len(starts), window), _N, dtype=np.uint8)
    if len(chromosome) >= window:
        # Rows of a strided view: one contiguous copy per window, no index arrays.
        windows[inside] = np.lib.stride_tricks.sliding_window_view(chromosome, window)[starts[inside]]
    for row in np.flatnonzero(~inside):  # windows that leave the chromosome: rare
        low, high = max(starts[row], 0), min(starts[row] + window, len(chromosome))
        if high > low:
            windows[row, low - starts[row] : high - starts[row]] = chromosome[low:high]
    return windows
