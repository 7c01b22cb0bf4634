"""The one sort every metric shares: binary labels and scores checked, then counted per distinct score.

Every curve and area of :mod:`tfbs.formats.metrics` (and every resample of
:mod:`tfbs.site_bootstrap`) is computed from these :class:`Steps`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


def check_binary(y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Validate binary labels / numeric scores; return (int8 y, scores)."""
    y = np.asarray(y)
    s = np.asarray(s)
    if y.ndim != 1 or s.ndim != 1:
        raise ValueError(f"labels and scores must be 1-D, got shapes {y.shape} and {s.shape}")
    if y.shape[0] != s.shape[0]:
        raise ValueError(f"labels and scores differ in length: {y.shape[0]} != {s.shape[0]}")
    if y.dtype.kind == "b":
        y = y.astype(np.int8)
    elif y.dtype.kind in "iuf":
        ok = (y == 0) | (y == 1)
        if not ok.all():
            bad = y[np.argmin(ok)].item()
            raise ValueError(
                f"binary labels must be 0 or 1, found {bad!r} "
                "(use filter_ambiguous() to map U/B/A labels and drop A bins)"
            )
        y = y.astype(np.int8)
    else:
        raise ValueError(
            f"binary labels must be numeric 0/1, got dtype {y.dtype} (use filter_ambiguous() for 'U'/'B'/'A' labels)"
        )
    if s.dtype.kind not in "iufb":
        raise ValueError(f"scores must be numeric, got dtype {s.dtype}")
    if s.dtype.kind == "b":
        s = s.astype(np.int8)
    if s.dtype.kind == "f" and np.isnan(s).any():
        raise ValueError("scores contain NaN")
    n_pos = int(np.count_nonzero(y))
    n_neg = int(y.shape[0] - n_pos)
    if n_pos == 0 or n_neg == 0:
        raise ValueError(
            "need at least one positive (B) and one negative (U) bin after "
            f"removing ambiguous bins; got {n_pos} positives and {n_neg} negatives"
        )
    return y, s


class Steps(NamedTuple):
    """Cumulative counts at each distinct score, highest score first."""

    thresholds: np.ndarray  # distinct scores, decreasing
    tp: np.ndarray  # int64, bins with score >= threshold that are positive
    fp: np.ndarray  # int64, bins with score >= threshold that are negative
    n_pos: int
    n_neg: int


def score_steps(y: np.ndarray, s: np.ndarray) -> Steps:
    """Cumulative TP/FP per distinct score, tied scores in one step.

    Same steps as PRROC ``compute.pr``/``compute.roc`` (``order(all.scores,
    decreasing=T)``, ``cumsum``, ``cum.use`` keeping the last index of each
    run of equal scores) and sklearn ``_binary_clf_curve``.  Implemented as
    one value sort of all scores (no argsort): the distinct scores are the
    runs of the sorted array, and positives are attributed to their run by
    binary search, which is about 3x faster than an argsort for 10 M scores.
    """
    n = s.shape[0]
    s_sorted = np.sort(s)  # ascending
    new_run = np.empty(n, dtype=bool)
    new_run[0] = True
    np.not_equal(s_sorted[1:], s_sorted[:-1], out=new_run[1:])
    starts = np.flatnonzero(new_run)
    distinct = s_sorted[starts]  # ascending, unique
    del s_sorted, new_run
    sizes = np.diff(starts, append=n)
    run_of_pos = np.searchsorted(distinct, s[y.astype(bool)], side="left")
    pos_per_run = np.bincount(run_of_pos, minlength=distinct.shape[0])
    # highest score first
    tp = np.cumsum(pos_per_run[::-1], dtype=np.int64)
    fp = np.cumsum(sizes[::-1], dtype=np.int64) - tp
    n_pos = int(tp[-1])
    return Steps(distinct[::-1], tp, fp, n_pos, n - n_pos)
