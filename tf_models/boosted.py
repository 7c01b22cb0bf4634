"""The challenge winners' kind of method: a gradient-boosted classifier per TF over motif scores, DNase and RNA-seq.

ENCODE-DREAM's shared winners (J-Team's Catchitt, Anchor) scored bins with
simple classifiers over motif scores and DNase features; this is that
baseline, scored beside the model in every report, trained on exactly the
model's training rows (the train split's positives and every negative draw,
in the training cells) and scored on the same test rows.

Features of a (bin, cell) row, frozen with the baseline (issue 41: changing
any of them needs new fresh seeds, ``bench/plan/fresh_seeds.json``):

* per motif of ``evaluate.motifs`` (the run's TFs) and ``evaluate.partner_motifs``
  (their partners), the best log-odds match in 100, 200, 300, 400 and 1000 bp
  centred on the bin (:mod:`tf_models.motif_features`);
* the row's DNase input, its proximity to the cell's DNase summit (``dnase``);
* where the run has RNA-seq, ``log2(1 + TPM)`` of each TF and partner gene in
  the row's cell (:mod:`tfbs.formats.expression`): the only thing that tells a
  held-out cell's partners.

One classifier per TF: scikit-learn's histogram gradient boosting (LightGBM's
algorithm), with the settings of :data:`BOOSTED_SETTINGS`, chosen on the
tuning seeds by ``bench/boosted_tuning.py`` and frozen.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tf_models.motif_features import WIDTHS

#: The classifier's settings (scikit-learn ``HistGradientBoostingClassifier``), frozen.
BOOSTED_SETTINGS: dict = {
    "learning_rate": 0.05,
    "max_iter": 300,
    "max_leaf_nodes": 15,
    "min_samples_leaf": 20,
    "l2_regularization": 1.0,
    "early_stopping": True,
    "validation_fraction": 0.1,
    "n_iter_no_change": 20,
    "random_state": 0,
}


@dataclass(frozen=True)
class BoostedInputs:
    """What the baseline reads besides a row's bin: the motifs' order and each cell's expression."""

    motifs: list[str]
    genes: list[str] = field(default_factory=list)
    #: cell -> ``log2(1 + TPM)`` of ``genes``.
    expression: dict[str, np.ndarray] = field(default_factory=dict)

    def feature_names(self) -> list[str]:
        """Column names of :func:`feature_matrix`, in order."""
        return (
            [f"{m}:{width}bp" for width in WIDTHS for m in self.motifs]
            + ["dnase"]
            + [f"{g}:log2tpm" for g in self.genes]
        )


def feature_matrix(
    inputs: BoostedInputs, motif_features: np.ndarray, dnase: np.ndarray, cells: np.ndarray
) -> np.ndarray:
    """The rows' features: motif matches, DNase, and the cell's expression.

    Parameters
    ----------
    motif_features
        :func:`tf_models.motif_features.bin_features` of the rows.
    dnase
        The rows' DNase input.
    cells
        The rows' cell names.

    Raises
    ------
    KeyError
        If a row's cell has no expression while the inputs have genes.
    """
    parts = [np.asarray(motif_features, np.float32), np.asarray(dnase, np.float32)[:, None]]
    if inputs.genes:
        levels = np.zeros((len(cells), len(inputs.genes)), np.float32)
        for cell in np.unique(cells):
            levels[cells == cell] = inputs.expression[str(cell)]
        parts.append(levels)
    return np.concatenate(parts, axis=1)


def fit_boosted(features: np.ndarray, labels: np.ndarray, tfs: np.ndarray) -> dict:
    """One classifier per TF of the rows, with :data:`BOOSTED_SETTINGS`.

    Returns
    -------
    dict
        ``{tf: fitted HistGradientBoostingClassifier}``; a TF whose rows hold
        a single class gets none.
    """
    from sklearn.ensemble import HistGradientBoostingClassifier

    models = {}
    for tf in np.unique(tfs):
        rows = tfs == tf
        if np.unique(labels[rows]).shape[0] < 2:
            continue
        model = HistGradientBoostingClassifier(**BOOSTED_SETTINGS)
        with one_thread():
            models[str(tf)] = model.fit(features[rows], labels[rows])
    return models


def one_thread():
    """A context in which the classifier uses one thread.

    Its OpenMP threads spin for the cores Spark's tasks and other processes
    hold: on 2 busy cores a fit took 7 s with every thread, 0.3 s with one.
    """
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)


def predict_boosted(models: dict, features: np.ndarray, tfs: np.ndarray) -> np.ndarray:
    """P(bound) of each row by its TF's classifier; NaN for a TF without one."""
    out = np.full(features.shape[0], np.nan)
    with one_thread():
        for tf in np.unique(tfs):
            if str(tf) in models:
                rows = tfs == tf
                out[rows] = models[str(tf)].predict_proba(features[rows])[:, 1]
    return out
