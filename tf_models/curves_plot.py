"""PR and ROC curve figures for ENCODE-DREAM style evaluations.

Uses matplotlib's Agg canvas directly (``matplotlib.figure.Figure`` +
``matplotlib.backends.backend_agg.FigureCanvasAgg``), so no display is
needed and pyplot's global backend state is left untouched.
"""

from __future__ import annotations

import os

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from tf_models.metrics import (
    auprc_davis_goadrich,
    auroc,
    filter_ambiguous,
    pr_curve,
    roc_curve,
)

__all__ = ["plot_curves"]

#: Curves longer than this are thinned before drawing (keeps endpoints).
MAX_POINTS = 5000


def _thin(*arrays: np.ndarray, max_points: int = MAX_POINTS) -> tuple[np.ndarray, ...]:
    n = arrays[0].shape[0]
    if n <= max_points:
        return arrays
    idx = np.unique(np.linspace(0, n - 1, max_points).round().astype(np.int64))
    return tuple(a[idx] for a in arrays)


def _resolve(key: str, entry: dict) -> dict:
    """Return a dict with precision/recall/fpr/tpr arrays and the two AUCs."""
    if not isinstance(entry, dict):
        raise TypeError(f"curves[{key!r}] must be a dict, got {type(entry).__name__}")
    have_curves = all(k in entry for k in ("precision", "recall", "fpr", "tpr"))
    if have_curves:
        out = {k: np.asarray(entry[k], dtype=np.float64)
               for k in ("precision", "recall", "fpr", "tpr")}
        out["auprc"] = entry.get("auprc")
        out["auroc"] = entry.get("auroc")
        return out
    if "labels" in entry and "scores" in entry:
        y, s = filter_ambiguous(entry["labels"], entry["scores"])
        precision, recall, _ = pr_curve(y, s)
        fpr, tpr, _ = roc_curve(y, s)
        return {
            "precision": precision,
            "recall": recall,
            "fpr": fpr,
            "tpr": tpr,
            "auprc": entry["auprc"] if "auprc" in entry else auprc_davis_goadrich(y, s),
            "auroc": entry["auroc"] if "auroc" in entry else auroc(y, s),
        }
    raise ValueError(
        f"curves[{key!r}] needs either 'precision', 'recall', 'fpr', 'tpr' "
        "arrays (plus optional 'auprc', 'auroc') or 'labels' and 'scores'"
    )


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{float(value):.3f}"


def plot_curves(curves: dict[str, dict], out_png: str) -> None:
    """Draw PR (left) and ROC (right) panels, one line per TF / cell key.

    Parameters
    ----------
    curves : dict[str, dict]
        Maps a label such as ``"CTCF/PC-3"`` to either

        * ``{"precision", "recall", "fpr", "tpr"}`` arrays, e.g. from
          :func:`tf_models.metrics.pr_curve` and
          :func:`tf_models.metrics.roc_curve`, with optional float
          ``"auprc"`` / ``"auroc"`` for the legend; or
        * ``{"labels", "scores"}`` (U/B/A or 0/1/-1 labels); A bins are
          removed and curves plus auPRC (Davis-Goadrich) and auROC are
          computed here.
    out_png : str
        Output PNG path; missing parent directories are created.

    Raises
    ------
    ValueError
        If ``curves`` is empty or an entry has neither form.
    """
    if not curves:
        raise ValueError("curves is empty: nothing to plot")
    fig = Figure(figsize=(12, 5.5))
    FigureCanvasAgg(fig)
    ax_pr, ax_roc = fig.subplots(1, 2)

    for key, entry in curves.items():
        c = _resolve(str(key), entry)
        recall, precision = c["recall"], c["precision"]
        if recall.size:
            # PRROC draws the first point's precision back to recall 0.
            recall = np.concatenate(([0.0], recall))
            precision = np.concatenate((precision[:1], precision))
        recall, precision = _thin(recall, precision)
        fpr, tpr = _thin(c["fpr"], c["tpr"])
        (line,) = ax_pr.plot(recall, precision, lw=1.5,
                             label=f"{key} (auPRC={_fmt(c['auprc'])})")
        ax_roc.plot(fpr, tpr, lw=1.5, color=line.get_color(),
                    label=f"{key} (auROC={_fmt(c['auroc'])})")

    ax_roc.plot([0, 1], [0, 1], ls="--", lw=0.8, color="grey")
    ax_pr.set(xlim=(0, 1), ylim=(0, 1.02), xlabel="Recall", ylabel="Precision",
              title="Precision-recall (auPRC: Davis-Goadrich)")
    ax_roc.set(xlim=(0, 1), ylim=(0, 1.02), xlabel="False positive rate",
               ylabel="True positive rate", title="ROC")
    for ax in (ax_pr, ax_roc):
        ax.grid(alpha=0.3)
        ax.legend(loc="lower left" if ax is ax_pr else "lower right",
                  fontsize="small")
    fig.tight_layout()

    parent = os.path.dirname(os.path.abspath(out_png))
    os.makedirs(parent, exist_ok=True)
    fig.savefig(out_png, dpi=120)
