"""The official metrics on weighted bins, for many resamples at once."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import NamedTuple

import numpy as np

from tfbs.formats.metrics.labels import encode_labels
from tfbs.formats.metrics.steps import check_binary

#: Metrics bootstrapped, in the order of the JSON entries.
METRICS: tuple[str, ...] = ("auprc", "auroc", "recall_at_fdr_10")

# Gathered weights per sub-chunk of resamples (float64: ~32 MB per array).
_MAX_CELLS = 1 << 22
FDR = 0.10


class PreparedScores(NamedTuple):
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


def prepare_scores(y: np.ndarray, s: np.ndarray, region: np.ndarray, n_regions: int) -> PreparedScores:
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
    return PreparedScores(
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


def _curve(prep: PreparedScores, mult: np.ndarray) -> _Curve:
    """Weighted TP/FP at the positive steps for multiplicities ``mult`` (resamples, n_regions)."""
    d = _pair_sums(mult, prep.pos_region, prep.pos_count, prep.pos_first)
    cum = np.zeros((mult.shape[0], prep.neg_first.shape[0] + 1))
    if prep.neg_first.shape[0]:
        np.cumsum(_pair_sums(mult, prep.neg_region, prep.neg_count, prep.neg_first), axis=1, out=cum[:, 1:])
    return _Curve(d, np.cumsum(d, axis=1), cum[:, prep.neg_through], cum[:, prep.neg_before])


def _weighted_auroc(c: _Curve, n_pos: np.ndarray, n_neg: np.ndarray) -> np.ndarray:
    # 2U = sum over positive steps of d * (2 * U bins below + U bins tied):
    # the same integer as tfbs.formats.metrics' sum dFP * (TP + TP_prev), and exact
    # in float64 (integers below 2**53), so the quotient is bit-identical.
    num = np.sum(c.d * (2.0 * n_neg[:, None] - c.fp - c.fp_prev), axis=1)
    return num / (2.0 * n_pos * n_neg)


def _weighted_auprc(c: _Curve, n_pos: np.ndarray) -> np.ndarray:
    """Davis-Goadrich area per resample, the rule of ``tfbs.formats.metrics.step_metrics.auprc_of_steps``.

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
    # tfbs.formats.metrics.step_metrics.recall_at_fdr_of_steps; a step adding only U bins has a
    # lower precision at the same recall, so positive steps suffice.
    with np.errstate(invalid="ignore", divide="ignore"):
        ok = (1 - c.tp / (c.tp + c.fp)) <= FDR
    return np.where(ok, c.tp, 0.0).max(axis=1) / n_pos


def _metric_rows(prep: PreparedScores, mult: np.ndarray, n_pos: np.ndarray, n_neg: np.ndarray) -> dict[str, np.ndarray]:
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


class KeyData(NamedTuple):
    """One key's U/B bins (A removed) with its per-region class counts."""

    y: np.ndarray  # int8 0/1
    region: np.ndarray  # int64
    keep: np.ndarray  # bool over the input rows: not A
    pos_per_region: np.ndarray  # float64 (n_regions,)
    neg_per_region: np.ndarray  # float64 (n_regions,)


def key_data(labels: np.ndarray, region: np.ndarray, n_regions: int) -> KeyData:
    """Encode labels, drop A bins and count B/U bins per region."""
    codes = encode_labels(np.asarray(labels))
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
    return KeyData(y, reg, keep, pos, neg)


def method_scores(key: KeyData, scores: np.ndarray) -> np.ndarray:
    """The scores of the key's U/B bins, validated as tfbs.formats.metrics does."""
    s = np.asarray(scores)
    if s.shape != key.keep.shape:
        raise ValueError(f"scores and labels differ in shape: {s.shape} != {key.keep.shape}")
    return check_binary(key.y, s[key.keep])[1]


def key_rows(
    key: KeyData, preps: Mapping[str, PreparedScores], mult: np.ndarray
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
    Each value equals the :mod:`tfbs.formats.metrics` value on the U/B bins repeated
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
    >>> from tfbs.formats.metrics import auroc
    >>> float(w["auroc"][0]) == auroc(np.array([1, 1, 0, 1]), np.array([0.9, 0.9, 0.5, 0.1]))
    True
    """
    mult = np.asarray(multiplicity)
    if mult.ndim != 2 or mult.dtype.kind not in "iu" or (mult.size and mult.min() < 0):
        raise ValueError("multiplicity must be a 2-D array of non-negative integers")
    key = key_data(labels, region, mult.shape[1])
    prep = prepare_scores(key.y, method_scores(key, scores), key.region, mult.shape[1])
    return key_rows(key, {"m": prep}, mult.astype(np.float64))[1]["m"]
