"""The challenge's three measures of one prediction, each on binary labels and scores: auROC, auPRC, recall at an FDR."""

from __future__ import annotations

import numpy as np

from tfbs.formats.metrics.step_metrics import auprc_of_steps, auroc_of_steps, check_fdr, recall_at_fdr_of_steps
from tfbs.formats.metrics.steps import check_binary, score_steps


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
    y, s = check_binary(y, s)
    return auroc_of_steps(score_steps(y, s))


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
    y, s = check_binary(y, s)
    return auprc_of_steps(score_steps(y, s))


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
    check_fdr(fdr)
    y, s = check_binary(y, s)
    return recall_at_fdr_of_steps(score_steps(y, s), fdr)
