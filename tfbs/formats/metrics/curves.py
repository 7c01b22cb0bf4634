"""Precision-recall and ROC points, one per distinct score, for plotting."""

from __future__ import annotations

import numpy as np

from tfbs.formats.metrics.steps import check_binary, score_steps


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
    y, s = check_binary(y, s)
    st = score_steps(y, s)
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
    y, s = check_binary(y, s)
    st = score_steps(y, s)
    fpr = np.concatenate(([0.0], st.fp / st.n_neg))
    tpr = np.concatenate(([0.0], st.tp / st.n_pos))
    thr = np.concatenate(([np.inf], st.thresholds.astype(np.float64)))
    return fpr, tpr, thr
