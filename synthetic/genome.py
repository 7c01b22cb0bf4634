"""A random hg19-like genome: background bases, N gaps, blacklist.

Chromosomes are built as ``uint8`` base codes (see :mod:`tfbs.formats.motifs`)
so motifs can be planted in place before the FASTA is written.
"""

from __future__ import annotations

import numpy as np

from tfbs.formats.motifs import N_CODE


def base_frequencies(gc: float) -> tuple[float, float, float, float]:
    """A, C, G, T frequencies of a genome with G+C fraction ``gc``: the background motif log-odds are scored against.

    Examples
    --------
    >>> base_frequencies(0.4)
    (0.3, 0.2, 0.2, 0.3)
    """
    at = (1.0 - gc) / 2.0
    return (at, gc / 2.0, gc / 2.0, at)


def background_codes(length: int, gc: float, rng: np.random.Generator) -> np.ndarray:
    """I.i.d. random bases with a given GC content.

    Parameters
    ----------
    length
        Number of bases.
    gc
        G+C fraction (hg19: about 0.41).
    rng
        Source of randomness.

    Returns
    -------
    numpy.ndarray
        ``uint8`` codes 0-3 (A, C, G, T).
    """
    at = (1.0 - gc) / 2.0
    cumulative = np.array([at, 0.5, 0.5 + gc / 2.0], dtype=np.float64)
    return np.searchsorted(cumulative, rng.random(length), side="right").astype(np.uint8)


def gap_intervals(length: int, rng: np.random.Generator, telomere: int = 10_000) -> list[tuple[int, int]]:
    """N runs of one chromosome: both telomeres and a few short gaps.

    Parameters
    ----------
    length
        Chromosome length.
    rng
        Source of randomness.
    telomere
        N run at each end, like hg19's 10 kb; capped at 2 % of the length so
        small test chromosomes keep most of their sequence.

    Returns
    -------
    list[tuple[int, int]]
        Sorted, non-overlapping half-open intervals.
    """
    end_run = min(telomere, length // 50)
    gaps = [(0, end_run), (length - end_run, length)]
    inner_low, inner_high = end_run + 1_000, length - end_run - 3_000
    n_short = int(rng.integers(1, 4))
    if inner_high > inner_low:
        starts = np.sort(rng.integers(inner_low, inner_high, size=n_short))
        sizes = rng.integers(100, 2_001, size=n_short)
        previous_end = end_run
        for start, size in zip(starts.tolist(), sizes.tolist()):
            start = max(start, previous_end + 1_000)
            stop = min(start + size, length - end_run)
            if stop > start:
                gaps.append((start, stop))
                previous_end = stop
    return sorted(gaps)


def blacklist_intervals(
    mask: np.ndarray,
    n_regions: int,
    rng: np.random.Generator,
    size_range: tuple[int, int] = (1_000, 5_000),
) -> list[tuple[int, int]]:
    """Blacklisted regions of one chromosome, placed in sequenced (non-N) DNA.

    Parameters
    ----------
    mask
        Boolean, True where the chromosome is N.
    n_regions
        Number of regions.
    rng
        Source of randomness.
    size_range
        Region sizes (a few kb, like the DAC blacklist's typical entries);
        shrunk so all regions together stay under 5 % of the chromosome.

    Returns
    -------
    list[tuple[int, int]]
        Sorted half-open intervals (may be fewer than asked on a tiny chromosome).
    """
    if n_regions == 0:
        return []
    length = mask.shape[0]
    cap = max(200, int(0.05 * length / n_regions))
    regions: list[tuple[int, int]] = []
    taken = mask.copy()
    for _ in range(n_regions):
        size = min(int(rng.integers(size_range[0], size_range[1] + 1)), cap)
        for _attempt in range(50):
            start = int(rng.integers(0, length - size))
            # A margin keeps regions apart, so each stays a separate BED line.
            if not taken[max(0, start - 1_000) : start + size + 1_000].any():
                regions.append((start, start + size))
                taken[start : start + size] = True
                break
    return sorted(regions)


def simulate_chromosome(
    length: int, gc: float, rng: np.random.Generator, telomere: int = 10_000
) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """One chromosome's base codes with its N runs applied.

    Returns
    -------
    tuple[numpy.ndarray, list[tuple[int, int]]]
        ``uint8`` codes (4 in gaps) and the gap intervals.
    """
    codes = background_codes(length, gc, rng)
    gaps = gap_intervals(length, rng, telomere)
    for start, stop in gaps:
        codes[start:stop] = N_CODE
    return codes, gaps
