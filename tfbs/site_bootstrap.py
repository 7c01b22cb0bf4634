"""95 % intervals of the ENCODE-DREAM metrics from a bootstrap over test sites.

Test bins are 200 bp at a 50 bp step, so one bound site is a run of ~3-5
consecutive ``B`` (or ``A``) bins whose labels and scores move together.
Resampling *bins* treats those as independent draws and gives intervals far
too narrow; this module resamples genomic *regions* instead:

1. :func:`site_regions` cuts each test chromosome into regions of at least
   ``block_bp`` that never split a run of busy (``B`` or ``A`` in any key)
   bins.  The regions are shared by every TF/cell ("key") and method, so a
   resample picks the same genome pieces for all of them.
2. :func:`resample_regions` draws, per resample, how many times each region
   is taken (regions drawn with replacement, as many draws as regions); a
   bin's weight is its region's multiplicity.
3. :func:`weighted_metrics` evaluates auPRC (Davis-Goadrich, PRROC
   ``auc.davis.goadrich``), auROC and recall at 10 % FDR on the weighted
   bins of many resamples at once.  With integer weights each value equals
   the :mod:`tfbs.metrics` value on the data with every row repeated its
   weight times (auROC and recall bit for bit, auPRC up to the order of a
   floating-point sum).  Recall at 50 % FDR is not bootstrapped.
4. :func:`bootstrap_metrics` scores several keys and methods on the same
   resamples and summarises them as a JSON-ready dict (layout below).

A bins are removed before any metric (the official rule) but still make
their region busy.  Intervals are percentile intervals ``[2.5, 97.5]``.

JSON layout of :func:`bootstrap_metrics`
----------------------------------------
An *interval* is ``{"estimate": float, "ci": [lo, hi]}``: ``estimate`` is
the value on all bins (for a key, identical to
:func:`tfbs.metrics.score_predictions`), ``ci`` the 2.5 and 97.5
percentiles over the resamples where the value is defined (``null`` if it
is defined in none).  A resample is undefined for a key when it draws no
``B`` or no ``U`` bin of that key; a group mean or difference is undefined
when any of its keys is.  ``METRICS`` names the metric fields::

    {
      "bootstrap": {"n_resamples": 1000, "seed": 0, "percentiles": [2.5, 97.5],
                    "n_regions": 812,                # regions of the whole genome
                    "metrics": ["auprc", "auroc", "recall_at_fdr_10"]},
      "keys": {
        "CTCF/HepG2": {
          "n_bins": 15000,               # U and B bins scored
          "n_regions": 800,              # regions holding a U or B bin of this key
          "n_positive_sites": 120,       # regions holding at least one B bin
          "resamples_used": 1000,        # resamples with >= 1 B and >= 1 U bin
          "methods": {
            "model": {"auprc": interval, "auroc": interval, "recall_at_fdr_10": interval},
            "gbm": {...}                 # only the methods this key was scored with
          }
        }
      },
      "groups": {
        "training cells": {
          "keys": ["CTCF/HepG2", ...],
          "methods": {                   # mean over the group's keys that have the method
            "model": {"n_keys": 3, "resamples_used": 1000,
                      "auprc": interval, "auroc": interval, "recall_at_fdr_10": interval}
          },
          "differences": [               # paired: over the keys having both a and b
            {"a": "model", "b": "gbm", "n_keys": 3, "resamples_used": 1000,
             "auprc": interval, ...}     # mean(a) - mean(b)
          ]
        }
      },
      "gaps": [                          # mean over group a minus mean over group b
        {"method": "gbm", "a": "training cells", "b": "held-out cells",
         "n_keys_a": 3, "n_keys_b": 1, "resamples_used": 1000, "auprc": interval, ...}
      ]
    }

A method pair (a gap) without a key having both methods (the method in both
groups) has no entry.  Every resample draws the region multiplicities once
and applies them to all keys and methods, so differences and gaps are
paired.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from tfbs.metrics import (
    _auprc_dg_steps,
    _auroc_steps,
    _check_binary,
    _encode_labels,
    _recall_at_fdr_steps,
    _steps,
)

__all__ = [
    "METRICS",
    "PERCENTILES",
    "KeyBins",
    "busy_bins",
    "site_regions",
    "resample_regions",
    "weighted_metrics",
    "bootstrap_metrics",
]

#: Metrics bootstrapped, in the order of the JSON entries.
METRICS: tuple[str, ...] = ("auprc", "auroc", "recall_at_fdr_10")
#: Percentiles of the reported interval.
PERCENTILES: tuple[float, float] = (2.5, 97.5)

# Resamples drawn per block: block b's multiplicities depend on (seed, b)
# only, so results do not depend on how the work is chunked in memory, and
# the first k blocks of a longer run are those of a shorter one.
_BLOCK = 100
# Gathered weights per sub-chunk of resamples (float64: ~32 MB per array).
_MAX_CELLS = 1 << 22
_FDR = 0.10


# ---------------------------------------------------------------------------
# regions
# ---------------------------------------------------------------------------
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
        codes = _encode_labels(np.asarray(one)) != 0
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
def _multiplicity_blocks(n_regions: int, n_resamples: int, seed: int) -> Iterator[np.ndarray]:
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
    return np.concatenate(list(_multiplicity_blocks(n_regions, n_resamples, seed)))


# ---------------------------------------------------------------------------
# weighted metrics
# ---------------------------------------------------------------------------
class _Prepared(NamedTuple):
    """One method's scores of one key, reduced to what weighted metrics need.

    The curve is evaluated only at the *positive steps* (distinct scores,
    highest first, holding at least one B bin): auROC, the Davis-Goadrich
    area and recall at an FDR change only there.  Bins are grouped into
    (step, region) pairs so one gathered weight serves all the bins of a
    region that share a step.  U bins fall into buckets: bucket ``2k``
    holds those scored between positive steps ``k - 1`` and ``k``, bucket
    ``2k + 1`` those tied with step ``k``; U bins below the last positive
    step only count in the total of U bins.
    """

    pos_region: np.ndarray  # region of each (positive step, region) pair, by step
    pos_count: np.ndarray  # float64: B bins in the pair
    pos_first: np.ndarray  # index of each positive step's first pair
    neg_region: np.ndarray  # region of each (bucket, region) pair of U bins, by bucket
    neg_count: np.ndarray  # float64: U bins in the pair
    neg_first: np.ndarray  # index of each non-empty bucket's first pair
    neg_before: np.ndarray  # per positive step: non-empty buckets scored above it
    neg_through: np.ndarray  # per positive step: non-empty buckets scored above or tied


def _prepare(y: np.ndarray, s: np.ndarray, region: np.ndarray, n_regions: int) -> _Prepared:
    """Group one method's B and U bins by positive step and region (one sort)."""
    distinct, inverse = np.unique(s, return_inverse=True)
    step = distinct.shape[0] - 1 - inverse  # 0 = highest score
    pos = y.astype(bool)
    pos_steps = np.unique(step[pos])
    n_steps = pos_steps.shape[0]
    # B bins: pair key (positive step, region).
    k = np.searchsorted(pos_steps, step[pos])
    pos_pairs, pos_count = np.unique(k * n_regions + region[pos], return_counts=True)
    # U bins: pair key (bucket, region), bucket 2k above step k, 2k + 1 tied with it.
    neg_step = step[~pos]
    k = np.searchsorted(pos_steps, neg_step)
    inside = k < n_steps
    tied = np.zeros(k.shape[0], dtype=bool)
    tied[inside] = pos_steps[k[inside]] == neg_step[inside]
    bucket = (2 * k + tied)[inside]
    neg_pairs, neg_count = np.unique(bucket * n_regions + region[~pos][inside], return_counts=True)
    neg_bucket = neg_pairs // n_regions
    buckets = np.unique(neg_bucket)
    two_k = 2 * np.arange(n_steps)
    return _Prepared(
        pos_region=pos_pairs % n_regions,
        pos_count=pos_count.astype(np.float64),
        pos_first=np.searchsorted(pos_pairs // n_regions, np.arange(n_steps)),
        neg_region=neg_pairs % n_regions,
        neg_count=neg_count.astype(np.float64),
        neg_first=np.searchsorted(neg_bucket, buckets),
        neg_before=np.searchsorted(buckets, two_k + 1),
        neg_through=np.searchsorted(buckets, two_k + 2),
    )


class _Curve(NamedTuple):
    """Weighted counts for each resample (rows) at each positive step (columns)."""

    d: np.ndarray  # weighted B bins of the step
    tp: np.ndarray  # weighted B bins at or above the step
    fp: np.ndarray  # weighted U bins at or above the step
    fp_prev: np.ndarray  # weighted U bins above the step


def _pair_sums(mult: np.ndarray, region: np.ndarray, count: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Per resample, the weighted bins of each group of consecutive pairs.

    ``np.take`` along axis 1 returns a C-ordered (resamples, pairs) array,
    on which ``reduceat`` along axis 1 is several times faster than on the
    transposed layout or on ``mult[:, region]`` (not C-ordered).
    """
    weights = np.take(mult, region, axis=1)
    if count.max() > 1:  # continuous scores rarely put two bins of a region in one group
        weights *= count
    return np.add.reduceat(weights, first, axis=1)


def _curve(prep: _Prepared, mult: np.ndarray) -> _Curve:
    """Weighted TP/FP at the positive steps for multiplicities ``mult`` (resamples, n_regions)."""
    d = _pair_sums(mult, prep.pos_region, prep.pos_count, prep.pos_first)
    cum = np.zeros((mult.shape[0], prep.neg_first.shape[0] + 1))
    if prep.neg_first.shape[0]:
        np.cumsum(_pair_sums(mult, prep.neg_region, prep.neg_count, prep.neg_first), axis=1, out=cum[:, 1:])
    return _Curve(d, np.cumsum(d, axis=1), cum[:, prep.neg_through], cum[:, prep.neg_before])


def _weighted_auroc(c: _Curve, n_pos: np.ndarray, n_neg: np.ndarray) -> np.ndarray:
    # 2U = sum over positive steps of d * (2 * U bins below + U bins tied):
    # the same integer as tfbs.metrics' sum dFP * (TP + TP_prev), and exact
    # in float64 (integers below 2**53), so the quotient is bit-identical.
    num = np.sum(c.d * (2.0 * n_neg[:, None] - c.fp - c.fp_prev), axis=1)
    return num / (2.0 * n_pos * n_neg)


def _weighted_auprc(c: _Curve, n_pos: np.ndarray) -> np.ndarray:
    """Davis-Goadrich area per resample, the rule of ``tfbs.metrics._auprc_dg_steps``.

    A positive step with nothing drawn above it is the first step of the
    weighted curve (flat at its own precision); the previous point of any
    other step is the cumulative count just above it, which is the previous
    step of the weighted curve, since steps drawing no bin add nothing.
    """
    tp_prev = c.tp - c.d
    with np.errstate(invalid="ignore", divide="ignore"):
        prec = c.tp / (c.tp + c.fp)
        prec_prev = tp_prev / (tp_prev + c.fp_prev)
    has = c.d > 0
    first = has & (tp_prev + c.fp_prev == 0)
    later = has & ~first
    interp = later & (c.d > 1) & (prec != prec_prev)
    # A straight step is the trapezoid d/P * (prec_prev + prec) / 2; an
    # interpolated one is d trapezoids of width 1/P, i.e. 1/P times the two
    # end points' mean plus the d - 1 interior points (added below).
    width = np.where(interp, 1.0, c.d)
    trapezoid = np.where(later, width * (prec_prev + prec) / 2.0, 0.0)
    flat = np.where(first, c.tp * prec, 0.0)
    area = (trapezoid.sum(axis=1) + flat.sum(axis=1)) / n_pos
    if interp.any():
        area += _interior_points(c, tp_prev, interp) / n_pos
    return area


def _interior_points(c: _Curve, tp_prev: np.ndarray, interp: np.ndarray) -> np.ndarray:
    """Sum per resample of the interior Davis-Goadrich points of interpolated steps.

    At ``x = 1 .. d - 1`` true positives beyond ``tp_prev`` the false
    positives have grown by ``x * (fp - fp_prev) / d``, so the precision is
    ``(tp_prev + x) / (tp_prev + x + fp_prev + h * x)``.  Steps are grouped
    by ``d`` (few distinct values) so each group is one broadcast.
    """
    rows, steps = np.nonzero(interp)
    d = c.d[rows, steps]
    by_d = np.argsort(d, kind="stable")  # one sort, then a slice per distinct d
    rows, steps, d = rows[by_d], steps[by_d], d[by_d]
    a, b = tp_prev[rows, steps], c.fp_prev[rows, steps]
    h = (c.fp[rows, steps] - b) / d
    inner = np.empty(d.shape[0])
    values, firsts = np.unique(d, return_index=True)
    for v, lo, hi in zip(values, firsts, np.append(firsts[1:], d.shape[0])):
        x = np.arange(1.0, v)
        aa, bb, hh = a[lo:hi, None], b[lo:hi, None], h[lo:hi, None]
        inner[lo:hi] = ((aa + x) / (aa + x + bb + hh * x)).sum(axis=1)
    return np.bincount(rows, weights=inner, minlength=c.d.shape[0])


def _weighted_recall(c: _Curve, n_pos: np.ndarray) -> np.ndarray:
    # Largest recall over thresholds with 1 - precision <= 10 %, as
    # tfbs.metrics._recall_at_fdr_steps; a step adding only U bins has a
    # lower precision at the same recall, so positive steps suffice.
    with np.errstate(invalid="ignore", divide="ignore"):
        ok = (1 - c.tp / (c.tp + c.fp)) <= _FDR
    return np.where(ok, c.tp, 0.0).max(axis=1) / n_pos


def _metric_rows(prep: _Prepared, mult: np.ndarray, n_pos: np.ndarray, n_neg: np.ndarray) -> dict[str, np.ndarray]:
    """The metrics of every resample (row of ``mult``); NaN where no B or no U bin is drawn."""
    c = _curve(prep, mult)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = {
            "auprc": _weighted_auprc(c, n_pos),
            "auroc": _weighted_auroc(c, n_pos, n_neg),
            "recall_at_fdr_10": _weighted_recall(c, n_pos),
        }
    undefined = (n_pos == 0) | (n_neg == 0)
    for values in out.values():
        values[undefined] = np.nan
    return out


def _row_chunks(n_rows: int, width: int) -> Iterator[slice]:
    """Slices of rows so that rows x width gathered weights stay under ``_MAX_CELLS``."""
    step = max(1, _MAX_CELLS // max(width, 1))
    for first in range(0, n_rows, step):
        yield slice(first, min(n_rows, first + step))


class _KeyData(NamedTuple):
    """One key's U/B bins (A removed) with its per-region class counts."""

    y: np.ndarray  # int8 0/1
    region: np.ndarray  # int64
    keep: np.ndarray  # bool over the input rows: not A
    pos_per_region: np.ndarray  # float64 (n_regions,)
    neg_per_region: np.ndarray  # float64 (n_regions,)


def _key_data(labels: np.ndarray, region: np.ndarray, n_regions: int) -> _KeyData:
    """Encode labels, drop A bins and count B/U bins per region."""
    codes = _encode_labels(np.asarray(labels))
    reg = np.asarray(region)
    if reg.shape != codes.shape:
        raise ValueError(f"labels and region differ in shape: {codes.shape} != {reg.shape}")
    if reg.size and (reg.dtype.kind not in "iu" or reg.min() < 0 or reg.max() >= n_regions):
        raise ValueError(f"region ids must be integers in [0, {n_regions})")
    keep = codes >= 0
    y, reg = codes[keep], reg[keep].astype(np.int64)
    if not (y.any() and not y.all()):
        raise ValueError(f"need at least one B and one U bin, got {int(y.sum())} B of {y.shape[0]} U/B bins")
    pos = np.bincount(reg[y == 1], minlength=n_regions).astype(np.float64)
    neg = np.bincount(reg[y == 0], minlength=n_regions).astype(np.float64)
    return _KeyData(y, reg, keep, pos, neg)


def _method_scores(key: _KeyData, scores: np.ndarray) -> np.ndarray:
    """The scores of the key's U/B bins, validated as tfbs.metrics does."""
    s = np.asarray(scores)
    if s.shape != key.keep.shape:
        raise ValueError(f"scores and labels differ in shape: {s.shape} != {key.keep.shape}")
    return _check_binary(key.y, s[key.keep])[1]


def _key_rows(
    key: _KeyData, preps: Mapping[str, _Prepared], mult: np.ndarray
) -> tuple[np.ndarray, dict[str, dict[str, np.ndarray]]]:
    """All methods' metrics of one key for the rows of ``mult``, memory-chunked."""
    width = max([key.y.shape[0]] + [p.pos_region.shape[0] + p.neg_region.shape[0] for p in preps.values()])
    n_pos = mult @ key.pos_per_region
    n_neg = mult @ key.neg_per_region
    out = {m: {name: np.empty(mult.shape[0]) for name in METRICS} for m in preps}
    for rows in _row_chunks(mult.shape[0], width):
        for method, prep in preps.items():
            for name, values in _metric_rows(prep, mult[rows], n_pos[rows], n_neg[rows]).items():
                out[method][name][rows] = values
    return (n_pos > 0) & (n_neg > 0), out


def weighted_metrics(
    labels: np.ndarray, scores: np.ndarray, region: np.ndarray, multiplicity: np.ndarray
) -> dict[str, np.ndarray]:
    """Metrics of one key and method under each row of region multiplicities.

    Bin ``i`` has weight ``multiplicity[r, region[i]]`` in resample ``r``.
    Each value equals the :mod:`tfbs.metrics` value on the U/B bins repeated
    their weight times: ``auroc`` and ``recall_at_fdr_10`` bit for bit,
    ``auprc`` (Davis-Goadrich) up to float rounding of a differently
    ordered sum.  Recall at 50 % FDR is not computed.

    Parameters
    ----------
    labels : np.ndarray
        ``'U'``/``'B'``/``'A'`` or 0/1/-1; A bins are removed.
    scores : np.ndarray
        Scores, same length.
    region : np.ndarray
        Non-negative integer region id of each bin (``np.arange(n)`` makes
        the multiplicities per-bin weights).
    multiplicity : np.ndarray
        Non-negative integers, (n_resamples, n_regions) with n_regions >
        ``region.max()``.

    Returns
    -------
    dict[str, np.ndarray]
        ``{metric: float64 (n_resamples,)}`` for each name in
        :data:`METRICS`; NaN in a resample drawing no B or no U bin.

    Examples
    --------
    Weights 2, 1, 1 are the data with the first bin twice:

    >>> w = weighted_metrics(["B", "U", "B"], [0.9, 0.5, 0.1], np.arange(3), np.array([[2, 1, 1]]))
    >>> from tfbs.metrics import auroc
    >>> float(w["auroc"][0]) == auroc(np.array([1, 1, 0, 1]), np.array([0.9, 0.9, 0.5, 0.1]))
    True
    """
    mult = np.asarray(multiplicity)
    if mult.ndim != 2 or mult.dtype.kind not in "iu" or (mult.size and mult.min() < 0):
        raise ValueError("multiplicity must be a 2-D array of non-negative integers")
    key = _key_data(labels, region, mult.shape[1])
    prep = _prepare(key.y, _method_scores(key, scores), key.region, mult.shape[1])
    return _key_rows(key, {"m": prep}, mult.astype(np.float64))[1]["m"]


# ---------------------------------------------------------------------------
# several keys, groups, differences
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class KeyBins:
    """One TF/cell's bins: labels, region ids and each method's scores.

    Attributes
    ----------
    labels : np.ndarray
        ``'U'``/``'B'``/``'A'`` or 0/1/-1 per bin.
    region : np.ndarray
        Region id of each bin (:func:`site_regions` over the genomic bins of
        all keys, aligned to the bin each row is).
    scores : Mapping[str, np.ndarray]
        ``{method: scores}``, each aligned to ``labels``.
    """

    labels: np.ndarray
    region: np.ndarray
    scores: Mapping[str, np.ndarray]


class _Samples(NamedTuple):
    """A quantity's value on all bins and in every resample (NaN: undefined)."""

    estimate: float
    values: np.ndarray


def _interval(sample: _Samples) -> dict:
    """``{"estimate", "ci"}`` with the percentile interval over the defined resamples."""
    finite = sample.values[np.isfinite(sample.values)]
    ci = [float(v) for v in np.percentile(finite, PERCENTILES)] if finite.size else None
    return {"estimate": float(sample.estimate), "ci": ci}


def _used(values: np.ndarray) -> int:
    return int(np.count_nonzero(np.isfinite(values)))


def _mean(samples: Sequence[_Samples]) -> _Samples:
    return _Samples(
        float(np.mean([s.estimate for s in samples])), np.mean(np.stack([s.values for s in samples]), axis=0)
    )


def _minus(a: _Samples, b: _Samples) -> _Samples:
    return _Samples(a.estimate - b.estimate, a.values - b.values)


def _point_estimates(y: np.ndarray, s: np.ndarray) -> dict[str, float]:
    """The metrics on all bins, by the very functions of score_predictions."""
    st = _steps(y, s)
    return {"auprc": _auprc_dg_steps(st), "auroc": _auroc_steps(st), "recall_at_fdr_10": _recall_at_fdr_steps(st, _FDR)}


def _bootstrap_keys(
    keys: Mapping[str, KeyBins], n_resamples: int, seed: int
) -> tuple[int, dict[str, dict], dict[str, dict[str, dict[str, _Samples]]]]:
    """Per key: counts, and per method and metric the point estimate and resampled values."""
    if not keys:
        raise ValueError("no keys given")
    n_regions = 1 + max(int(np.max(np.asarray(k.region), initial=-1)) for k in keys.values())
    if n_regions == 0:
        raise ValueError("no bins given")
    data, preps, points, info = {}, {}, {}, {}
    for name, kb in keys.items():
        try:
            key = data[name] = _key_data(kb.labels, kb.region, n_regions)
            scored = {m: _method_scores(key, s) for m, s in kb.scores.items()}
        except ValueError as e:
            raise ValueError(f"{name}: {e}") from None
        preps[name] = {m: _prepare(key.y, s, key.region, n_regions) for m, s in scored.items()}
        points[name] = {m: _point_estimates(key.y, s) for m, s in scored.items()}
        info[name] = {
            "n_bins": int(key.y.shape[0]),
            "n_regions": int(np.count_nonzero(key.pos_per_region + key.neg_per_region)),
            "n_positive_sites": int(np.count_nonzero(key.pos_per_region)),
        }
    values = {n: {m: {x: np.empty(n_resamples) for x in METRICS} for m in preps[n]} for n in keys}
    used = {n: 0 for n in keys}
    first = 0
    # One draw of multiplicities per resample, applied to every key and method.
    for block in _multiplicity_blocks(n_regions, n_resamples, seed):
        mult = block.astype(np.float64)
        rows = slice(first, first + block.shape[0])
        for name in keys:
            defined, out = _key_rows(data[name], preps[name], mult)
            used[name] += int(np.count_nonzero(defined))
            for m, metrics in out.items():
                for x, v in metrics.items():
                    values[name][m][x][rows] = v
        first += block.shape[0]
    for name in keys:
        info[name]["resamples_used"] = used[name]
    samples = {n: {m: {x: _Samples(points[n][m][x], values[n][m][x]) for x in METRICS} for m in preps[n]} for n in keys}
    return n_regions, info, samples


def _entry(per_metric: Mapping[str, _Samples], **extra: object) -> dict:
    """A JSON entry: extra fields, ``resamples_used`` and one interval per metric."""
    return {
        **extra,
        "resamples_used": _used(per_metric[METRICS[0]].values),
        **{x: _interval(per_metric[x]) for x in METRICS},
    }


def _group_means(samples: Mapping[str, Mapping[str, Mapping[str, _Samples]]], keys: Sequence[str]) -> dict:
    """``{method: (n_keys, {metric: mean samples})}`` over the keys having the method."""
    methods = list(dict.fromkeys(m for k in keys for m in samples[k]))
    out = {}
    for m in methods:
        having = [k for k in keys if m in samples[k]]
        out[m] = (len(having), {x: _mean([samples[k][m][x] for k in having]) for x in METRICS})
    return out


def _group_entry(samples: Mapping, keys: Sequence[str], pairs: Sequence[tuple[str, str]]) -> dict:
    """One group's method means and paired differences."""
    methods = {m: _entry(means, n_keys=n) for m, (n, means) in _group_means(samples, keys).items()}
    differences = []
    for a, b in pairs:
        both = [k for k in keys if a in samples[k] and b in samples[k]]
        if not both:
            continue
        per_metric = {
            x: _minus(_mean([samples[k][a][x] for k in both]), _mean([samples[k][b][x] for k in both])) for x in METRICS
        }
        differences.append(_entry(per_metric, a=a, b=b, n_keys=len(both)))
    return {"keys": list(keys), "methods": methods, "differences": differences}


def _gap_entries(samples: Mapping, groups: Mapping[str, Sequence[str]], gaps: Sequence[tuple[str, str, str]]) -> list:
    """Differences of one method's means between two groups."""
    out = []
    for method, ga, gb in gaps:
        for g in (ga, gb):
            if g not in groups:
                raise ValueError(f"gap {(method, ga, gb)!r} names unknown group {g!r}")
        means_a = _group_means(samples, groups[ga]).get(method)
        means_b = _group_means(samples, groups[gb]).get(method)
        if means_a is None or means_b is None:
            continue
        per_metric = {x: _minus(means_a[1][x], means_b[1][x]) for x in METRICS}
        out.append(_entry(per_metric, method=method, a=ga, b=gb, n_keys_a=means_a[0], n_keys_b=means_b[0]))
    return out


def bootstrap_metrics(
    keys: Mapping[str, KeyBins],
    groups: Mapping[str, Sequence[str]] | None = None,
    pairs: Sequence[tuple[str, str]] = (),
    gaps: Sequence[tuple[str, str, str]] = (),
    n_resamples: int = 1000,
    seed: int = 0,
) -> dict:
    """Site-bootstrap intervals of auPRC, auROC and recall at 10 % FDR.

    Every resample draws region multiplicities once (:func:`resample_regions`)
    and weights the bins of every key and method by them; the layout of the
    result is in the module docstring.

    Parameters
    ----------
    keys : Mapping[str, KeyBins]
        ``{"TF/cell": KeyBins}``; region ids must come from one
        :func:`site_regions` call over the genomic bins of all keys.
    groups : Mapping[str, Sequence[str]] | None
        Named lists of keys, e.g. ``{"training cells": [...], "held-out
        cells": [...]}``; each method's mean is over the group's keys that
        have it.
    pairs : Sequence[tuple[str, str]]
        Method pairs ``(a, b)``: in each group, the paired difference
        ``mean(a) - mean(b)`` over the keys having both.
    gaps : Sequence[tuple[str, str, str]]
        ``(method, group_a, group_b)``: the method's mean over ``group_a``
        minus its mean over ``group_b``.
    n_resamples : int
        Number of resamples.
    seed : int
        Seed of the resamples.

    Returns
    -------
    dict
        JSON-ready (no NaN): ``bootstrap``, ``keys``, ``groups``, ``gaps``.

    Raises
    ------
    ValueError
        On invalid labels or scores (as :func:`tfbs.metrics.score_predictions`),
        a key without B or U bins, or a group naming an unknown key.
    """
    groups = dict(groups or {})
    for g, members in groups.items():
        unknown = [k for k in members if k not in keys]
        if unknown:
            raise ValueError(f"group {g!r} names unknown keys {unknown}")
    if n_resamples <= 0:
        raise ValueError(f"n_resamples must be positive, got {n_resamples}")
    n_regions, info, samples = _bootstrap_keys(keys, n_resamples, seed)
    return {
        "bootstrap": {
            "n_resamples": n_resamples,
            "seed": seed,
            "percentiles": list(PERCENTILES),
            "n_regions": n_regions,
            "metrics": list(METRICS),
        },
        "keys": {
            name: {**info[name], "methods": {m: {x: _interval(v) for x, v in per.items()} for m, per in ms.items()}}
            for name, ms in samples.items()
        },
        "groups": {g: _group_entry(samples, members, pairs) for g, members in groups.items()},
        "gaps": _gap_entries(samples, groups, gaps),
    }
