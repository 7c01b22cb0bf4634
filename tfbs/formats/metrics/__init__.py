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

One module per operation: :mod:`.labels` (the U/B/A alphabet),
:mod:`.steps` (the one sort), :mod:`.step_metrics` (each measure from it),
:mod:`.summary` (each measure of labels and scores), :mod:`.curves` (points
to plot) and :mod:`.score` (the challenge's whole result).
"""

from tfbs.formats.metrics.curves import pr_curve, roc_curve
from tfbs.formats.metrics.labels import filter_ambiguous
from tfbs.formats.metrics.score import score_predictions
from tfbs.formats.metrics.summary import auprc_davis_goadrich, auroc, recall_at_fdr

__all__ = [
    "filter_ambiguous",
    "auroc",
    "auprc_davis_goadrich",
    "recall_at_fdr",
    "pr_curve",
    "roc_curve",
    "score_predictions",
]
