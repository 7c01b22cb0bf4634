"""Peak calls from the simulated occupancy: ChIP-seq and DNase narrowPeaks.

Values imitate ENCODE uniform-pipeline peaks: a summit near the site, widths
of a few hundred bp, signal growing with site strength, -log10 p and q
values that follow the signal (q below p), a 0-1000 score.
"""

from __future__ import annotations

import numpy as np

#: Width range and summit jitter of a bound site's conservative ChIP-seq peak.
CHIP_WIDTH_RANGE = (150, 300)
CHIP_SUMMIT_SD = 10.0


def peaks_around(
    chrom: np.ndarray,
    center: np.ndarray,
    strength: np.ndarray,
    rng: np.random.Generator,
    chrom_sizes: np.ndarray,
    width_range: tuple[int, int] = (150, 400),
    signal_range: tuple[float, float] = (10.0, 300.0),
    summit_sd: float = CHIP_SUMMIT_SD,
) -> dict[str, np.ndarray]:
    """One peak per position, with a jittered summit and random width.

    Parameters
    ----------
    chrom, center
        Chromosome index and site centre of each peak.
    strength
        In [0, 1]; the signal is ``low + (high - low) * strength`` times
        log-normal noise.
    rng
        Source of randomness.
    chrom_sizes
        Length of each chromosome, to clip peaks.
    width_range
        Inclusive range of peak widths.
    signal_range
        Signal at strength 0 and 1.
    summit_sd
        Standard deviation of the summit around the centre (bp).

    Returns
    -------
    dict[str, numpy.ndarray]
        narrowPeak columns ``chrom start end score signal p q peak``.
    """
    n = chrom.shape[0]
    summit = center + np.rint(rng.normal(0.0, summit_sd, n)).astype(np.int64)
    width = rng.integers(width_range[0], width_range[1] + 1, size=n)
    left = np.rint(width * rng.uniform(0.35, 0.65, n)).astype(np.int64)
    start = np.maximum(summit - left, 0)
    end = np.minimum(start + width, chrom_sizes[chrom])
    low, high = signal_range
    signal = (low + (high - low) * strength) * rng.lognormal(0.0, 0.25, n)
    p_value = 2.0 + signal * rng.uniform(0.25, 0.45, n)
    q_value = np.maximum(p_value * 0.8 - 1.5, 0.0)
    return {
        "chrom": chrom.astype(np.int64),
        "start": start,
        "end": end,
        "score": np.minimum(1000, np.rint(100 + 3 * signal)).astype(np.int64),
        "signal": signal,
        "p": p_value,
        "q": q_value,
        "peak": np.clip(summit - start, 0, end - start - 1),
    }


def artifact_peaks(
    regions: list[tuple[int, int, int]], rng: np.random.Generator, chrom_sizes: np.ndarray
) -> dict[str, np.ndarray]:
    """Strong peaks inside blacklisted regions, as every real ChIP-seq has.

    They make the blacklist matter: without it, these would become B bins.

    Parameters
    ----------
    regions
        ``(chrom index, start, end)`` of blacklisted regions.
    rng
        Source of randomness.
    chrom_sizes
        Chromosome lengths.
    """
    chrom = np.array([r[0] for r in regions], dtype=np.int64)
    center = np.array([(r[1] + r[2]) // 2 for r in regions], dtype=np.int64)
    peaks = peaks_around(chrom, center, np.ones(len(regions)), rng, chrom_sizes, width_range=(150, 250))
    # Kept inside the region, so the blacklist removes every bin they touch.
    low = np.array([r[1] for r in regions], dtype=np.int64)
    high = np.array([r[2] for r in regions], dtype=np.int64)
    summit = peaks["start"] + peaks["peak"]
    peaks["start"] = np.maximum(peaks["start"], low)
    peaks["end"] = np.minimum(peaks["end"], high)
    peaks["peak"] = np.clip(summit - peaks["start"], 0, peaks["end"] - peaks["start"] - 1)
    return peaks
