"""The gradient-boosted baseline kept with its model version, so that submissions score the model joined to it.

``tfbs evaluate`` fits the baseline on the version's training rows
(:mod:`tf_models.boosted_fit`) and keeps it under
``<run_dir>/models/<version>/boosted/`` (:func:`keep_baseline`): the
classifiers, pickled with the scikit-learn version that fitted them; the
motifs' log-odds matrices; the inputs' names, each cell's expression and
the TFs classified, in ``inputs.json``, written last so that it marks a
whole copy. ``tfbs predict`` then scores each bin with both and writes the
joined probability (:func:`tf_models.protocol.joined_probability`): on the
challenge's tuning seeds the network alone is level with the baseline,
and joined to it ahead in the training and the held-out cells
(docs/model-quality.md). ``predict.joined: false`` writes the network's
own probability.

The pickle is read from the run's own folder, as the SavedModel beside
it is: whoever can write there already decides what prediction runs.
"""

from __future__ import annotations

import io
import json
import pickle
from dataclasses import dataclass, replace

import numpy as np

from tf_models.boosted import BoostedInputs, feature_matrix, predict_boosted
from tf_models.boosted_fit import BoostedBaseline
from tf_models.motif_features import region_features
from tf_models.protocol import JOINED
from tfbs import lineage, storage
from tfbs.config import PipelineConfig
from tfbs.errors import BadInputError

CLASSIFIERS = "classifiers.pkl"
MATRICES = "motifs.npz"
#: Written last: a kept baseline without it is not whole and is not read.
INPUTS = "inputs.json"


@dataclass(frozen=True)
class KeptBaseline:
    """A version's fitted baseline, as prediction reads it."""

    inputs: BoostedInputs
    matrices: list[np.ndarray]
    #: ``{tf: classifier}``.
    models: dict

    def motif_features(self, bases: np.ndarray, starts: np.ndarray) -> np.ndarray:
        """The motif columns of bins of one chromosome (``bases``), every TF's alike."""
        return region_features(bases, self.matrices, starts)

    def probabilities(self, motif_features: np.ndarray, dnase: np.ndarray, cell: str, tf_name: str) -> np.ndarray:
        """P(bound) of bins of one cell for one TF the baseline classifies."""
        n = motif_features.shape[0]
        features = feature_matrix(self.inputs, motif_features, dnase, np.full(n, cell))
        return predict_boosted(self.models, features, np.full(n, tf_name))


def _sklearn_version() -> str:
    import sklearn

    return sklearn.__version__


def keep_baseline(uri: str, baseline: BoostedBaseline) -> None:
    """Write ``baseline``'s classifiers, motifs and inputs under ``uri`` (``inputs.json`` last)."""
    storage.write_bytes(f"{uri}/{CLASSIFIERS}", pickle.dumps(baseline.models, protocol=pickle.HIGHEST_PROTOCOL))
    matrices = io.BytesIO()
    np.savez(matrices, *baseline.matrices)
    storage.write_bytes(f"{uri}/{MATRICES}", matrices.getvalue())
    inputs = baseline.inputs
    record = {
        "motifs": inputs.motifs,
        "genes": inputs.genes,
        "expression": {cell: levels.tolist() for cell, levels in inputs.expression.items()},
        "tfs": sorted(baseline.models),
        "scikit_learn": _sklearn_version(),
    }
    storage.write_text(f"{uri}/{INPUTS}", json.dumps(record, indent=2, sort_keys=True))


def _read_record(uri: str) -> dict | None:
    """``inputs.json`` of the baseline kept under ``uri``, or None when there is no whole copy."""
    return json.loads(storage.read_text(f"{uri}/{INPUTS}")) if storage.exists(f"{uri}/{INPUTS}") else None


def read_kept_baseline(uri: str) -> KeptBaseline | None:
    """The baseline kept under ``uri``; None when there is none.

    Raises
    ------
    BadInputError
        If scikit-learn's version differs from the one that fitted it (a
        pickle is only read by the version that wrote it).
    """
    record = _read_record(uri)
    if record is None:
        return None
    if record["scikit_learn"] != _sklearn_version():
        raise BadInputError(
            f"{uri}/{CLASSIFIERS}",
            0,
            f"fitted with scikit-learn {record['scikit_learn']}, this environment has {_sklearn_version()}: "
            "run `tfbs evaluate` again to refit it, or set predict.joined false",
        )
    with storage.open_input(f"{uri}/{MATRICES}", compression=None) as handle:
        stored = np.load(io.BytesIO(handle.read()))
        matrices = [stored[f"arr_{i}"] for i in range(len(record["motifs"]))]
    with storage.open_input(f"{uri}/{CLASSIFIERS}", compression=None) as handle:
        models = pickle.loads(handle.read())
    expression = {cell: np.asarray(levels, np.float32) for cell, levels in record["expression"].items()}
    return KeptBaseline(BoostedInputs(record["motifs"], record["genes"], expression), matrices, models)


def submission_scorers(config: PipelineConfig, version: str, tfs: list[str]) -> dict[str, str]:
    """What scores each TF's submissions: :data:`tf_models.protocol.JOINED` or ``model``.

    Joined where ``predict.joined`` is on and the version's evaluation kept a
    classifier for the TF; the network alone for a TF the baseline never
    classified (one the model was not trained on) or a version not evaluated.
    """
    record = _read_record(lineage.boosted_uri(config.run_dir, version)) if config.predict.joined else None
    classified = set(record["tfs"]) if record else set()
    return {tf: JOINED if tf in classified else "model" for tf in tfs}


def _with_cells(kept: KeptBaseline, uri: str, config: PipelineConfig, cells: list[str]) -> KeptBaseline:
    """``kept`` with the expression of the ``cells`` it lacks, read from ``data.rnaseq_dir``."""
    from tf_models.expression_inputs import run_expression, run_genes

    missing = [cell for cell in cells if cell not in kept.inputs.expression]
    if not kept.inputs.genes or not missing:
        return kept
    if run_genes(config) != kept.inputs.genes:
        raise BadInputError(
            f"{uri}/{INPUTS}",
            0,
            f"the baseline reads genes {kept.inputs.genes}; the configuration names {run_genes(config)}, so "
            f"{', '.join(missing)} cannot be read alike (set predict.joined false to score with the network alone)",
        )
    expression = run_expression(config, missing) if config.data.rnaseq_dir is not None else {}
    if not expression:
        raise BadInputError(
            config.data.rnaseq_dir or "data.rnaseq_dir (null)",
            0,
            f"no RNA-seq of {', '.join(missing)}: the version's gradient-boosted baseline reads each cell's "
            "expression (set predict.joined false to score with the network alone)",
        )
    return replace(kept, inputs=replace(kept.inputs, expression={**kept.inputs.expression, **expression}))


def joined_baseline(config: PipelineConfig, version: str, cells: list[str]) -> KeptBaseline | None:
    """The baseline submissions of ``version`` join, able to score ``cells``; None when they are the network's alone.

    Raises
    ------
    BadInputError
        If the baseline reads expression and a cell has no RNA-seq, or its
        pickle was written by another scikit-learn.
    """
    if not config.predict.joined:
        return None
    uri = lineage.boosted_uri(config.run_dir, version)
    kept = read_kept_baseline(uri)
    return None if kept is None else _with_cells(kept, uri, config, cells)
