"""ENCODE-DREAM official scoring metrics, vectorised with numpy.

This module re-implements the scoring of the ENCODE-DREAM in vivo
Transcription Factor Binding Site Prediction Challenge (see
``DESIGN.md``, section "Official scoring").  The reference is the
challenge scoring script ``score.py`` ("Scoring script for ENCODE-DREAM in
vivo Transcription Factor Binding Site Prediction Challenge"), which

* maps the label file's ``B`` to 1, ``U`` to 0 and ``A`` to -1 and drops
  every bin whose label is not ``> -0.5`` (i.e. the ambiguous ``A`` bins)
  before any metric is computed;
* computes auROC with ``sklearn.metrics.roc_auc_score``;
* computes auPRC with the R package PRROC through rpy2::

      pr.curve(scores.class0=pred, weights.class0=labels)$auc.davis.goadrich

  (``dg.compute`` defaults to ``TRUE``), i.e. the Davis & Goadrich (2006)
  interpolated area, *not* scikit-learn's average precision;
* computes recall at 10 % and 50 % FDR with::

      precision, recall, thresholds = precision_recall_curve(y_true, y_score)
      fdr = 1 - precision
      cutoff_index = next(i for i, x in enumerate(fdr) if x <= fdr_cutoff)
      return recall[cutoff_index]

Every curve is built from one sort of the scores (highest first), with all
bins sharing a score collapsed into a single threshold step (as PRROC's
``cum.use`` and scikit-learn's ``distinct_value_indices`` both do), so the
cost is O(n log n) and ~10 M scores take a few seconds.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from tfbs.formats.dream import LABEL_CODES

__all__ = [
    "filter_ambiguous",
    "auroc",
    "auprc_davis_goadrich",
    "recall_at_fdr",
    "pr_curve",
    "roc_curve",
    "score_predictions",
]

#: Mapping of the DREAM label alphabet to integers (A = ambiguous).


# ---------------------------------------------------------------------------
# input handling
# ---------------------------------------------------------------------------
def _label_error(bad: object) -> ValueError:
    return ValueError(f"unknown label {bad!r}: expected 'U', 'B' or 'A' (or the integers 0 = U, 1 = B, -1 = A)")


def _encode_labels(labels: np.ndarray) -> np.ndarray:
    """Return labels as an int8 array with values in {-1, 0, 1}."""
    arr = np.asarray(labels)
    if arr.ndim != 1:
        raise ValueError(f"labels must be 1-D, got shape {arr.shape}")
    kind = arr.dtype.kind
    if kind in "US":
        if kind == "S":
            arr = arr.astype("U")
        out = np.full(arr.shape, -2, dtype=np.int8)
        if arr.dtype.itemsize == 4:  # single characters: compare code points
            chars = arr.astype("=U1", copy=False).view(np.uint32)
            for name, code in LABEL_CODES.items():
                out[chars == ord(name)] = code
        else:
            for name, code in LABEL_CODES.items():
                out[arr == name] = code
        bad = out == -2
        if bad.any():
            raise _label_error(arr[np.argmax(bad)].item())
        return out
    if kind == "b":
        return arr.astype(np.int8)
    if kind in "iuf":
        if kind == "f" and np.isnan(arr).any():
            raise _label_error(float("nan"))
        ok = (arr == 0) | (arr == 1) | (arr == -1)
        if not ok.all():
            raise _label_error(arr[np.argmin(ok)].item())
        return arr.astype(np.int8)
    if kind == "O":
        out = np.empty(arr.shape, dtype=np.int8)
        for i, v in enumerate(arr.tolist()):
            if isinstance(v, bytes):
                v = v.decode()
            if isinstance(v, str) and v in LABEL_CODES:
                out[i] = LABEL_CODES[v]
            elif isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and v in (0, 1, -1):
                out[i] = int(v)
            else:
                raise _label_error(v)
        return out
    raise ValueError(f"labels have unsupported dtype {arr.dtype}")


def filter_ambiguous(labels: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Drop ambiguous bins and return binary labels with their scores.

    Follows the DREAM ``score.py``: ``B`` -> 1, ``U`` -> 0, ``A`` -> -1 and
    ``index = labels > -0.5`` keeps only U/B bins, before any metric.

    Parameters
    ----------
    labels : np.ndarray
        1-D labels, either strings ``'U'``/``'B'``/``'A'`` or integers
        ``0`` (U), ``1`` (B), ``-1`` (A).
    scores : np.ndarray
        1-D prediction scores, same length as ``labels``.

    Returns
    -------
    tuple[np.ndarray, np.ndarray]
        ``(y, s)``: int8 labels in {0, 1} and the matching scores, with all
        ``A`` bins removed (original order kept).

    Raises
    ------
    ValueError
        If a label other than U/B/A (0/1/-1) occurs (the message names it),
        or if the lengths differ.
    """
    codes = _encode_labels(labels)
    s = np.asarray(scores)
    if s.ndim != 1:
        raise ValueError(f"scores must be 1-D, got shape {s.shape}")
    if codes.shape[0] != s.shape[0]:
        raise ValueError(f"labels and scores differ in length: {codes.shape[0]} != {s.shape[0]}")
    keep = codes > -0.5
    if keep.all():
        return codes, s
    return codes[keep], s[keep]


def _check_binary(y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


class _Steps(NamedTuple):
    """Cumulative counts at each distinct score, highest score first."""

    thresholds: np.ndarray  # distinct scores, decreasing
    tp: np.ndarray  # int64, bins with score >= threshold that are positive
    fp: np.ndarray  # int64, bins with score >= threshold that are negative
    n_pos: int
    n_neg: int


def _steps(y: np.ndarray, s: np.ndarray) -> _Steps:
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
    return _Steps(distinct[::-1], tp, fp, n_pos, n - n_pos)


# ---------------------------------------------------------------------------
# metrics on precomputed steps
# ---------------------------------------------------------------------------
def _auroc_steps(st: _Steps) -> float:
    # Trapezoid through (0,0) and every (FP/N, TP/P), as sklearn
    # roc_auc_score (auc(roc_curve)) and PRROC compute.roc; done in exact
    # integer arithmetic: sum dFP * (TP + TP_prev) / (2 P N).
    tp_prev = np.concatenate(([0], st.tp[:-1]))
    dfp = np.diff(st.fp, prepend=0)
    num = int(np.dot(dfp, st.tp + tp_prev))
    return num / (2 * st.n_pos * st.n_neg)


def _auprc_dg_steps(st: _Steps) -> float:
    # Port of PRROC compute.pr (v1.3-1.4, davis.and.goadrich branch) for
    # hard 0/1 labels.  Steps adding no true positive contribute
    # (tp-tp.prev)/r.fg * ... = 0 there, so only steps with positives are
    # evaluated (O(P) work after the O(U) difference).
    r_fg = float(st.n_pos)
    tp_i, fp_i = st.tp, st.fp
    d_i = np.diff(tp_i, prepend=0)

    # First step (prev point is 0/0): R replaces its NaN trapezoid by
    # (tp-tp.prev)/r.fg * tp/(tp+fp), i.e. flat at its own precision
    # (0 if it holds no positive).
    total = float((tp_i[0] / r_fg) * (tp_i[0] / (tp_i[0] + fp_i[0])))

    sel = np.flatnonzero(d_i[1:] > 0) + 1  # later steps that add positives
    if sel.size == 0:
        return total
    tp = tp_i[sel].astype(np.float64)
    fp = fp_i[sel].astype(np.float64)
    tp_prev = tp_i[sel - 1].astype(np.float64)
    fp_prev = fp_i[sel - 1].astype(np.float64)
    diff = tp - tp_prev
    prec = tp / (tp + fp)
    prec_prev = tp_prev / (tp_prev + fp_prev)
    # idxs <- which(tp-tp.prev>1 & tp/(tp+fp)!=tp.prev/(tp.prev+fp.prev))
    # (the first step is never in idxs: its comparison with NaN is NA.)
    interp = (diff > 1) & (prec != prec_prev)

    # Other steps: trapezoid (m[,2]-m[,1])/r.fg * (prec.prev + prec)/2.
    lin = ~interp
    total += float(np.sum((diff[lin] / r_fg) * (prec_prev[lin] + prec[lin]) / 2.0))

    if interp.any():
        # For each interpolated step, x = 0..diff true positives beyond
        # tp.prev with FP growing linearly, h2 = (fp-fp.prev)/diff:
        # prcs <- (tp.prev+x)/(tp.prev+x+fp.prev+h2*x);
        # area += sum(1/r.fg * (prcs[-1] + prcs[-length(prcs)]) / 2).
        counts = diff[interp].astype(np.int64)
        tpp = np.repeat(tp_prev[interp], counts)
        fpp = np.repeat(fp_prev[interp], counts)
        h2 = np.repeat((fp[interp] - fp_prev[interp]) / diff[interp], counts)
        starts = np.cumsum(counts) - counts
        x = (np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(starts, counts) + 1).astype(np.float64)
        p_hi = (tpp + x) / (tpp + x + fpp + h2 * x)
        xm = x - 1.0
        p_lo = (tpp + xm) / (tpp + xm + fpp + h2 * xm)
        total += float(np.sum(1.0 / r_fg * (p_hi + p_lo) / 2.0))
    return total


def _fdr_cutoff_index(st: _Steps, fdr: float) -> int | None:
    """The step of :func:`recall_at_fdr`: the lowest threshold whose FDR is within ``fdr``."""
    precision = st.tp / (st.tp + st.fp)
    ok = (1 - precision) <= _check_fdr(fdr)
    return int(np.flatnonzero(ok)[-1]) if ok.any() else None


def _threshold_at_fdr_steps(st: _Steps, fdr: float) -> float | None:
    """The score at which :func:`recall_at_fdr` calls bins bound (``score >= it``); None if no threshold qualifies."""
    i = _fdr_cutoff_index(st, fdr)
    return None if i is None else float(st.thresholds[i])


def _recall_at_fdr_steps(st: _Steps, fdr: float) -> float:
    fdr = _check_fdr(fdr)
    # sklearn precision_recall_curve: precision = tps / (tps + fps) and
    # recall = tps / tps[-1] at each distinct threshold, ordered by
    # *increasing* threshold, with a final sentinel (precision 1, recall 0).
    # The DREAM script takes the first index in that order (lowest
    # threshold, highest recall) with 1 - precision <= cutoff.  Recall is
    # non-increasing along that order, so this is the largest recall over
    # thresholds meeting the cutoff, or 0.0 (the sentinel) if none does.
    # (Old sklearn versions truncated the curve at the first threshold
    # reaching full recall; the dropped points have recall 1 and lower
    # precision than the kept one, so the answer is unchanged.)
    precision = st.tp / (st.tp + st.fp)  # float64, same as sklearn
    ok = (1 - precision) <= fdr
    if not ok.any():
        return 0.0
    # Highest threshold index is 0 here; lowest threshold is the last.
    i = int(np.flatnonzero(ok)[-1])
    return float(st.tp[i] / st.tp[-1])


def _check_fdr(fdr: float) -> float:
    try:
        f = float(fdr)
    except (TypeError, ValueError):
        raise ValueError(f"fdr must be a number in [0, 1], got {fdr!r}") from None
    if not (0.0 <= f <= 1.0):
        raise ValueError(f"fdr must be a number in [0, 1], got {fdr!r}")
    return f


# ---------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------
def auroc(y: np.ndarray, s: np.ndarray) -> float:
    """Area under the ROC curve.

    Follows the DREAM ``score.py``, which calls
    ``sklearn.metrics.roc_auc_score(positives, predicted_prbs)``: the
    trapezoidal area through (0, 0) and the (FPR, TPR) point of every
    distinct score (tied scores form one step, i.e. ties count 1/2 as in
    the Mann-Whitney U statistic).  PRROC ``roc.curve`` computes the same
    trapezoid.  Evaluated exactly with integer counts.

    Parameters
    ----------
    y : np.ndarray
        Binary labels (0 = U, 1 = B); ambiguous bins must already be
        removed (see :func:`filter_ambiguous`).
    s : np.ndarray
        Scores, higher = more likely bound.

    Returns
    -------
    float
        auROC in [0, 1].

    Raises
    ------
    ValueError
        If labels are not 0/1, lengths differ, scores contain NaN, or
        there are no positives or no negatives.
    """
    y, s = _check_binary(y, s)
    return _auroc_steps(_steps(y, s))


def auprc_davis_goadrich(y: np.ndarray, s: np.ndarray) -> float:
    """Area under the PR curve with Davis-Goadrich interpolation.

    Follows R PRROC ``pr.curve(scores.class0=pred,
    weights.class0=labels)$auc.davis.goadrich`` (``dg.compute=TRUE``) as
    called by the DREAM ``score.py``; ported from ``compute.pr`` in
    ``R/PRROC.R`` of PRROC 1.3-1.4 (cran/PRROC).  PRROC 1.1 (2015, loop
    implementation) computes the same quantity.  The rule is:

    * scores are sorted decreasingly and all bins with one score form one
      threshold step with cumulative counts ``tp``, ``fp``;
    * the first step is flat: ``tp/P * tp/(tp+fp)`` (recall 0 up to its
      recall at its own precision);
    * a later step that adds more than one true positive *and* changes the
      precision is interpolated as in Davis & Goadrich (2006): for each of
      its ``x = 1..dTP`` true positives the false positives grow by
      ``dFP/dTP``; precision ``(tp_prev+x)/(tp_prev+x+fp_prev+x*dFP/dTP)``
      is evaluated at each integer ``x`` and joined by trapezoids of width
      ``1/P``;
    * every other step is a straight trapezoid
      ``dTP/P * (prec_prev + prec)/2`` (zero if it adds no positives).

    This differs from ``sklearn.metrics.average_precision_score`` (a
    right-endpoint step sum) and from ``auc(recall, precision)``.

    Parameters
    ----------
    y : np.ndarray
        Binary labels (0 = U, 1 = B), ambiguous bins already removed.
    s : np.ndarray
        Scores, higher = more likely bound.

    Returns
    -------
    float
        auPRC (Davis-Goadrich) in [0, 1].

    Raises
    ------
    ValueError
        If labels are not 0/1, lengths differ, scores contain NaN, or
        there are no positives or no negatives.
    """
    y, s = _check_binary(y, s)
    return _auprc_dg_steps(_steps(y, s))


def recall_at_fdr(y: np.ndarray, s: np.ndarray, fdr: float) -> float:
    """Recall at a false discovery rate cutoff, as in the DREAM script.

    Follows ``recall_at_fdr`` of the DREAM ``score.py``::

        precision, recall, thresholds = precision_recall_curve(y_true, y_score)
        fdr = 1 - precision
        cutoff_index = next(i for i, x in enumerate(fdr) if x <= fdr_cutoff)
        return recall[cutoff_index]

    ``sklearn.metrics.precision_recall_curve`` lists one point per distinct
    score in order of *increasing* threshold (decreasing recall) and ends
    with the sentinel (precision 1, recall 0).  "The first point where
    1 - precision <= cutoff" is therefore met walking thresholds from the
    *lowest* score upwards, which yields the largest recall attained at any
    threshold whose FDR is within the cutoff (0.0 if none is).  It is not
    the first crossing met walking down from the highest score, which would
    usually be the top-scored bin alone.  Tied scores form a single
    threshold.  The comparison ``1 - tp/(tp+fp) <= fdr`` is done in float64
    exactly as the script does.

    Parameters
    ----------
    y : np.ndarray
        Binary labels (0 = U, 1 = B), ambiguous bins already removed.
    s : np.ndarray
        Scores, higher = more likely bound.
    fdr : float
        FDR cutoff as a fraction in [0, 1] (0.1 and 0.5 in the challenge).

    Returns
    -------
    float
        Recall in [0, 1].

    Raises
    ------
    ValueError
        For invalid labels/scores, no positives or negatives, or ``fdr``
        outside [0, 1].
    """
    _check_fdr(fdr)
    y, s = _check_binary(y, s)
    return _recall_at_fdr_steps(_steps(y, s), fdr)


def pr_curve(y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Precision-recall points, one per distinct score (for plotting).

    The points are the un-interpolated PR points PRROC builds before its
    Davis-Goadrich interpolation (``cbind(tp/r.fg, tp/(tp+fp),
    all.scores)``), ordered from the highest threshold to the lowest.

    Parameters
    ----------
    y : np.ndarray
        Binary labels (0 = U, 1 = B), ambiguous bins already removed.
    s : np.ndarray
        Scores, higher = more likely bound.

    Returns
    -------
    precision : np.ndarray
        ``tp / (tp + fp)`` at each threshold (float64).
    recall : np.ndarray
        ``tp / P`` at each threshold, non-decreasing; ends at 1.
    thresholds : np.ndarray
        Distinct scores, decreasing; point ``i`` calls ``s >= thresholds[i]``
        bound.

    Raises
    ------
    ValueError
        For invalid input or no positives / no negatives.
    """
    y, s = _check_binary(y, s)
    st = _steps(y, s)
    return st.tp / (st.tp + st.fp), st.tp / st.n_pos, st.thresholds


def roc_curve(y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ROC points, one per distinct score plus the origin (for plotting).

    Same points as PRROC ``roc.curve(..., curve=TRUE)`` and
    ``sklearn.metrics.roc_curve(drop_intermediate=False)``; the trapezoid
    through them is :func:`auroc`.

    Parameters
    ----------
    y : np.ndarray
        Binary labels (0 = U, 1 = B), ambiguous bins already removed.
    s : np.ndarray
        Scores, higher = more likely bound.

    Returns
    -------
    fpr : np.ndarray
        False positive rate, starting at 0 and ending at 1.
    tpr : np.ndarray
        True positive rate, starting at 0 and ending at 1.
    thresholds : np.ndarray
        float64; ``inf`` for the origin, then the distinct scores,
        decreasing.

    Raises
    ------
    ValueError
        For invalid input or no positives / no negatives.
    """
    y, s = _check_binary(y, s)
    st = _steps(y, s)
    fpr = np.concatenate(([0.0], st.fp / st.n_neg))
    tpr = np.concatenate(([0.0], st.tp / st.n_pos))
    thr = np.concatenate(([np.inf], st.thresholds.astype(np.float64)))
    return fpr, tpr, thr


def score_predictions(labels: np.ndarray, scores: np.ndarray) -> dict:
    """Score one TF / cell type prediction the ENCODE-DREAM way.

    Follows the DREAM ``score.py`` (``ClassificationResult``): A bins are
    removed first, then auROC (:func:`auroc`), auPRC
    (:func:`auprc_davis_goadrich`, PRROC Davis-Goadrich) and recall at 10 %
    and 50 % FDR (:func:`recall_at_fdr`).  The scores are sorted once.

    Parameters
    ----------
    labels : np.ndarray
        ``'U'``/``'B'``/``'A'`` strings or integers 0/1/-1.
    scores : np.ndarray
        Scores, higher = more likely bound, same length as ``labels``.

    Returns
    -------
    dict
        ``{"auroc", "auprc", "recall_at_fdr_10", "recall_at_fdr_50"}`` as
        floats, ``threshold_at_fdr_10`` (the score from which bins are
        called bound at 10 % FDR, None if no score reaches it) and
        ``{"n_pos", "n_neg", "n_ambiguous"}`` as ints.

    Raises
    ------
    ValueError
        On an unknown label, a length mismatch, NaN scores, or when no
        positive or no negative bin is left after removing A bins.
    """
    n_total = int(np.asarray(labels).reshape(-1).shape[0])
    y, s = filter_ambiguous(labels, scores)
    y, s = _check_binary(y, s)
    st = _steps(y, s)
    return {
        "auroc": _auroc_steps(st),
        "auprc": _auprc_dg_steps(st),
        "recall_at_fdr_10": _recall_at_fdr_steps(st, 0.10),
        "recall_at_fdr_50": _recall_at_fdr_steps(st, 0.50),
        "threshold_at_fdr_10": _threshold_at_fdr_steps(st, 0.10),
        "n_pos": st.n_pos,
        "n_neg": st.n_neg,
        "n_ambiguous": n_total - (st.n_pos + st.n_neg),
    }
