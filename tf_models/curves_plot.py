"""PR and ROC curve figures for ENCODE-DREAM style evaluations.

Uses matplotlib's Agg canvas directly (``matplotlib.figure.Figure`` +
``matplotlib.backends.backend_agg.FigureCanvasAgg``), so no display is
needed and pyplot's global backend state is left untouched.
"""

from __future__ import annotations

import os
from typing import IO, Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from tfbs.formats.metrics import (
    auprc_davis_goadrich,
    auroc,
    filter_ambiguous,
    pr_curve,
    roc_curve,
)

__all__ = ["plot_auprc_bars", "plot_curves", "plot_history", "plot_scorers"]

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
        out: dict[str, Any] = {k: np.asarray(entry[k], dtype=np.float64) for k in ("precision", "recall", "fpr", "tpr")}
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


def _drawn_points(name: str, entry: dict) -> tuple[dict, tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """One curve entry resolved, with its PR and ROC points as drawn (thinned)."""
    c = _resolve(name, entry)
    recall, precision = c["recall"], c["precision"]
    if recall.size:
        # PRROC draws the first point's precision back to recall 0.
        recall = np.concatenate(([0.0], recall))
        precision = np.concatenate((precision[:1], precision))
    return c, _thin(recall, precision), _thin(c["fpr"], c["tpr"])


def plot_curves(curves: dict[str, dict], out_png: str) -> None:
    """Draw PR (left) and ROC (right) panels, one line per TF / cell key.

    Parameters
    ----------
    curves : dict[str, dict]
        Maps a label such as ``"CTCF/PC-3"`` to either

        * ``{"precision", "recall", "fpr", "tpr"}`` arrays, e.g. from
          :func:`tfbs.formats.metrics.pr_curve` and
          :func:`tfbs.formats.metrics.roc_curve`, with optional float
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
        c, (recall, precision), (fpr, tpr) = _drawn_points(str(key), entry)
        (line,) = ax_pr.plot(recall, precision, lw=1.5, label=f"{key} (auPRC={_fmt(c['auprc'])})")
        ax_roc.plot(fpr, tpr, lw=1.5, color=line.get_color(), label=f"{key} (auROC={_fmt(c['auroc'])})")

    ax_roc.plot([0, 1], [0, 1], ls="--", lw=0.8, color="grey")
    ax_pr.set(
        xlim=(0, 1),
        ylim=(0, 1.02),
        xlabel="Recall",
        ylabel="Precision",
        title="Precision-recall (auPRC: Davis-Goadrich)",
    )
    ax_roc.set(xlim=(0, 1), ylim=(0, 1.02), xlabel="False positive rate", ylabel="True positive rate", title="ROC")
    for ax in (ax_pr, ax_roc):
        ax.grid(alpha=0.3)
        ax.legend(loc="lower left" if ax is ax_pr else "lower right", fontsize="small")
    fig.tight_layout()

    parent = os.path.dirname(os.path.abspath(out_png))
    os.makedirs(parent, exist_ok=True)
    fig.savefig(out_png, dpi=120)


def plot_auprc_bars(series: dict[str, dict[str, float]], out_png: str, title: str) -> None:
    """Grouped bars of auPRC per TF / cell, one bar per series (a model, a baseline...).

    Parameters
    ----------
    series
        ``{name: {"TF/cell": auPRC}}``; a key missing from a series leaves a gap.
    out_png
        Output PNG path; missing parent directories are created.
    title
        The figure's title.
    """
    keys = sorted({key for values in series.values() for key in values})
    fig = Figure(figsize=(max(6.0, 0.9 * len(keys) + 3.5), 4.5))
    FigureCanvasAgg(fig)
    axes = fig.subplots()
    width = 0.8 / max(len(series), 1)
    for offset, (name, values) in enumerate(series.items()):
        heights = [values.get(key, np.nan) for key in keys]
        axes.bar(np.arange(len(keys)) + offset * width, heights, width, label=name)
    axes.set_xticks(np.arange(len(keys)) + width * (len(series) - 1) / 2, keys, rotation=45, ha="right")
    axes.set(ylim=(0, 1), ylabel="auPRC (Davis-Goadrich)", title=title)
    axes.grid(axis="y", alpha=0.3)
    axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(out_png)), exist_ok=True)
    fig.savefig(out_png, dpi=120)


def plot_history(history: list[dict], out_png: str | IO[bytes]) -> None:
    """Training history: loss, validation auPRC (new bests marked) and throughput by step.

    Parameters
    ----------
    history
        The entries of ``history.json``.
    out_png
        Output PNG path, or a binary stream the PNG is written to.
    """
    fig = Figure(figsize=(13, 3.5))
    FigureCanvasAgg(fig)
    loss_axes, valid_axes, rate_axes = fig.subplots(1, 3)
    steps = [h["step"] for h in history]
    loss_axes.plot(steps, [h["loss"] for h in history], marker="o")
    loss_axes.set(xlabel="step", ylabel="training loss", title="loss")
    scored = [h for h in history if "valid_auprc" in h]
    valid_axes.plot([h["step"] for h in scored], [h["valid_auprc"] for h in scored], marker="o")
    for h in scored:
        if h.get("best"):
            valid_axes.axvline(h["step"], color="grey", lw=0.5)
    valid_axes.set(xlabel="step", ylabel="validation auPRC", title="validation (grey: new best)")
    rate_axes.plot(steps, [h["examples_per_s"] for h in history], marker="o")
    rate_axes.set(xlabel="step", ylabel="examples / s", title="throughput")
    fig.tight_layout()
    fig.savefig(out_png, format="png")


def plot_scorers(curves: dict[str, dict], out_png: str | IO[bytes], title: str, dpi: int = 80) -> None:
    """PR (left) and ROC (right) of one TF / cell, one line per scorer (the model, each baseline).

    Parameters
    ----------
    curves
        ``{scorer: {"precision", "recall", "fpr", "tpr", "auprc", "auroc"}}``
        as :func:`plot_curves` takes them. A scorer whose arrays are empty
        (metrics known, per-bin scores not kept) is named in the legends
        with its areas but draws no line.
    out_png
        Output PNG path, or a binary stream the PNG is written to.
    title
        The figure's title, e.g. ``"CTCF/PC-3"``.

    Raises
    ------
    ValueError
        If ``curves`` is empty or an entry has neither form.
    """
    if not curves:
        raise ValueError("curves is empty: nothing to plot")
    fig = Figure(figsize=(9, 4))
    FigureCanvasAgg(fig)
    ax_pr, ax_roc = fig.subplots(1, 2)
    for name, entry in curves.items():
        c, (recall, precision), (fpr, tpr) = _drawn_points(name, entry)
        style = {"lw": 2.0} if name == "model" else {"lw": 1.2, "ls": "--"}
        (line,) = ax_pr.plot(recall, precision, label=f"{name} ({_fmt(c['auprc'])})", **style)
        ax_roc.plot(fpr, tpr, color=line.get_color(), label=f"{name} ({_fmt(c['auroc'])})", **style)
    ax_roc.plot([0, 1], [0, 1], ls=":", lw=0.8, color="grey")
    ax_pr.set(xlim=(0, 1), ylim=(0, 1.02), xlabel="Recall", ylabel="Precision", title=f"{title}: PR (auPRC)")
    ax_roc.set(xlim=(0, 1), ylim=(0, 1.02), xlabel="False positive rate", ylabel="True positive rate")
    ax_roc.set_title(f"{title}: ROC (auROC)")
    for ax in (ax_pr, ax_roc):
        ax.grid(alpha=0.3)
        ax.legend(loc="upper right" if ax is ax_pr else "lower right", fontsize="small")
    fig.tight_layout()
    fig.savefig(out_png, format="png", dpi=dpi)
