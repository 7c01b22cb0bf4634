"""Test regions that never split a site, and how often each resample draws each region."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from tfbs.formats.metrics.labels import encode_labels

# Resamples drawn per block: block b's multiplicities depend on (seed, b)
# only, so results do not depend on how the work is chunked in memory, and
# the first k blocks of a longer run are those of a shorter one.
_BLOCK = 100


def busy_bins(labels: Iterable[np.ndarray]) -> np.ndarray:
    """Bins that are ``B`` or ``A`` in any key.

    Parameters
    ----------
    labels : Iterable[np.ndarray]
        One label array per key (``'U'``/``'B'``/``'A'`` or 0/1/-1), all
        aligned to the same genomic bins.

    Returns
    -------
    np.ndarray
        bool, True where any key has ``B`` or ``A``.

    Examples
    --------
    >>> busy_bins([np.array(["U", "B", "U"]), np.array([0, 0, -1])]).tolist()
    [False, True, True]
    """
    busy: np.ndarray | None = None
    for one in labels:
        codes = encode_labels(np.asarray(one)) != 0
        if busy is not None and busy.shape != codes.shape:
            raise ValueError(f"label arrays differ in length: {busy.shape[0]} != {codes.shape[0]}")
        busy = codes if busy is None else busy | codes
    if busy is None:
        raise ValueError("no label arrays given")
    return busy


def site_regions(chrom: np.ndarray, start: np.ndarray, busy: np.ndarray, block_bp: int = 1000) -> np.ndarray:
    """Region id of each genomic bin, for a bootstrap over sites.

    Each chromosome's bins are walked in order of ``start``; a region is cut
    before bin ``i`` only if bins ``i - 1`` and ``i`` are both free (not
    busy) and ``start[i] - start[first] >= block_bp``, ``first`` being the
    region's first bin.  A run of busy bins (a site) is therefore never
    split, a region is at least ``block_bp`` long unless it ends its
    chromosome, and each chromosome starts a new region.

    Parameters
    ----------
    chrom : np.ndarray
        Chromosome of each bin (any order of rows).
    start : np.ndarray
        Start of each bin (bp).
    busy : np.ndarray
        bool, True where the bin is ``B`` or ``A`` in any key
        (:func:`busy_bins`).
    block_bp : int
        Minimum region length in bp.

    Returns
    -------
    np.ndarray
        int64 region ids ``0 .. n_regions - 1`` aligned to the input rows,
        numbered by (chromosome name, start).

    Examples
    --------
    The site in bins 2-3 stretches the first region beyond 100 bp:

    >>> chrom = ["chr1"] * 8 + ["chr2"] * 2
    >>> start = [0, 50, 100, 150, 200, 250, 300, 350, 0, 50]
    >>> busy = [False, False, True, True, False, False, False, False, False, False]
    >>> site_regions(chrom, start, busy, block_bp=100).tolist()
    [0, 0, 0, 0, 0, 1, 1, 2, 3, 3]

    Rows may come in any order:

    >>> site_regions(["chr2", "chr1", "chr1"], [0, 100, 0], [False] * 3, block_bp=100).tolist()
    [2, 1, 0]
    """
    chrom_arr, start_arr, busy_arr = _region_inputs(chrom, start, busy, block_bp)
    n = start_arr.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    _, chrom_code = np.unique(chrom_arr, return_inverse=True)
    order = np.lexsort((start_arr, chrom_code))
    code, pos, free = chrom_code[order], start_arr[order], ~busy_arr[order]
    new_chrom = np.ones(n, dtype=bool)
    new_chrom[1:] = code[1:] != code[:-1]
    # A cut may fall only between two free bins of one chromosome.
    cuttable = np.zeros(n, dtype=bool)
    cuttable[1:] = free[1:] & free[:-1] & ~new_chrom[1:]
    new_region = _cut_regions(pos, new_chrom, np.flatnonzero(cuttable), block_bp)
    ids = np.empty(n, dtype=np.int64)
    ids[order] = np.cumsum(new_region) - 1
    return ids


def _region_inputs(
    chrom: np.ndarray, start: np.ndarray, busy: np.ndarray, block_bp: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validated 1-D arrays of :func:`site_regions`."""
    chrom_arr, start_arr, busy_arr = np.asarray(chrom), np.asarray(start), np.asarray(busy)
    if not (chrom_arr.ndim == start_arr.ndim == busy_arr.ndim == 1):
        raise ValueError("chrom, start and busy must be 1-D")
    if not (chrom_arr.shape == start_arr.shape == busy_arr.shape):
        raise ValueError(
            f"chrom, start and busy differ in length: {chrom_arr.shape}, {start_arr.shape}, {busy_arr.shape}"
        )
    if start_arr.size and start_arr.dtype.kind not in "iu":
        raise ValueError(f"start must be integers, got dtype {start_arr.dtype}")
    if busy_arr.size and busy_arr.dtype.kind != "b":
        raise ValueError(f"busy must be bool, got dtype {busy_arr.dtype}")
    if block_bp <= 0:
        raise ValueError(f"block_bp must be positive, got {block_bp}")
    return chrom_arr, start_arr.astype(np.int64), busy_arr.astype(bool)


def _cut_regions(pos: np.ndarray, new_chrom: np.ndarray, cuttable: np.ndarray, block_bp: int) -> np.ndarray:
    """Flags of the bins (sorted by chromosome, start) that start a region.

    Greedy: from a region's first bin, the next region starts at the first
    cuttable bin at least ``block_bp`` further.  One binary search per
    region: 5 M bins (250,000 regions) take about 2 s with the sort.
    """
    new_region = new_chrom.copy()
    bounds = np.append(np.flatnonzero(new_chrom), pos.shape[0])
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        cand = cuttable[np.searchsorted(cuttable, lo) : np.searchsorted(cuttable, hi)]
        cand_pos = pos[cand]
        first = lo
        while True:
            j = int(np.searchsorted(cand_pos, pos[first] + block_bp, side="left"))
            if j == cand.shape[0]:
                break
            first = cand[j]
            new_region[first] = True
    return new_region


# ---------------------------------------------------------------------------
# resampling
# ---------------------------------------------------------------------------
def multiplicity_blocks(n_regions: int, n_resamples: int, seed: int) -> Iterator[np.ndarray]:
    """Blocks of up to ``_BLOCK`` resamples: int64 array (resamples, n_regions)."""
    for b, first in enumerate(range(0, n_resamples, _BLOCK)):
        rows = min(_BLOCK, n_resamples - first)
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(b,)))
        drawn = rng.integers(0, n_regions, size=(rows, n_regions))
        # Count each row's draws at once: offset row r's ids by r * n_regions.
        flat = (drawn + (np.arange(rows) * n_regions)[:, None]).ravel()
        yield np.bincount(flat, minlength=rows * n_regions).reshape(rows, n_regions)


def resample_regions(n_regions: int, n_resamples: int = 1000, seed: int = 0) -> np.ndarray:
    """How many times each region is drawn in each resample.

    Each resample draws ``n_regions`` regions uniformly with replacement.

    Parameters
    ----------
    n_regions : int
        Number of regions (``max(region id) + 1``).
    n_resamples : int
        Number of resamples.
    seed : int
        Seed; the same seed gives the same multiplicities, and the first
        ``k`` rows do not depend on ``n_resamples``.

    Returns
    -------
    np.ndarray
        int64 array (n_resamples, n_regions); every row sums to ``n_regions``.

    Examples
    --------
    >>> m = resample_regions(5, n_resamples=3, seed=1)
    >>> m.shape, m.sum(axis=1).tolist()
    ((3, 5), [5, 5, 5])
    """
    if n_regions <= 0 or n_resamples <= 0:
        raise ValueError(f"need n_regions > 0 and n_resamples > 0, got {n_regions} and {n_resamples}")
    return np.concatenate(list(multiplicity_blocks(n_regions, n_resamples, seed)))
