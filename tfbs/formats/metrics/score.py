"""One TF / cell type's prediction scored the ENCODE-DREAM way: A bins dropped, then every measure from one sort."""

from __future__ import annotations

import numpy as np

from tfbs.formats.metrics.labels import filter_ambiguous
from tfbs.formats.metrics.step_metrics import (
    auprc_of_steps,
    auroc_of_steps,
    recall_at_fdr_of_steps,
    threshold_at_fdr_of_steps,
)
from tfbs.formats.metrics.steps import check_binary, score_steps


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
    y, s = check_binary(y, s)
    st = score_steps(y, s)
    return {
        "auroc": auroc_of_steps(st),
        "auprc": auprc_of_steps(st),
        "recall_at_fdr_10": recall_at_fdr_of_steps(st, 0.10),
        "recall_at_fdr_50": recall_at_fdr_of_steps(st, 0.50),
        "threshold_at_fdr_10": threshold_at_fdr_of_steps(st, 0.10),
        "n_pos": st.n_pos,
        "n_neg": st.n_neg,
        "n_ambiguous": n_total - (st.n_pos + st.n_neg),
    }
