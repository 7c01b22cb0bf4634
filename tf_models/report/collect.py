"""Reading what a model version's report page shows, into one JSON-able dict.

Everything comes from files other stages wrote: the version's
``report.json`` and per-bin ``predictions/`` (evaluate), ``history.json``
and ``lineage.json`` (train), the shard manifest (preprocess), the
generator's oracle tables (generate) and the optional sections other stages
put beside ``report.json`` (``unseen.json``, ``motifs.json``,
``predictions.json``). A missing optional piece becomes a note on the page,
never an error: the report of a run is worth having with a gap in it.
"""

from __future__ import annotations

import base64
import json
import logging
import posixpath
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from tf_models.protocol import JOINED, joined_probability
from tfbs import lineage, storage
from tfbs.errors import MissingInputError, TfbsError

log = logging.getLogger("tfbs.report")

#: The optional sections other stages write beside ``report.json``, in page order.
SECTION_FILES = ("unseen.json", "motifs.json", "predictions.json")
#: The keys every optional section has.
SECTION_KEYS = ("title", "columns", "rows", "notes", "images")
#: Columns of the evaluation's ``predictions/`` that are no scorer's scores.
_NOT_SCORES = frozenset({"tf", "cell", "chrom", "start", "label"})
#: Points kept per curve in the page's JSON (the endpoints always).
CURVE_POINTS = 400


def read_json(uri: str) -> Any | None:
    """The JSON value at ``uri``, or None if there is no such file."""
    return json.loads(storage.read_text(uri)) if storage.exists(uri) else None


def png_data(uri: str) -> str | None:
    """The PNG at ``uri`` as base64 text (for a ``data:`` URI), or None if there is none."""
    if not storage.exists(uri):
        return None
    with storage.open_input(uri, compression=None) as handle:
        return base64.b64encode(handle.read()).decode("ascii")


def _thin(values: np.ndarray, points: int = CURVE_POINTS) -> list[float]:
    if values.shape[0] > points:
        values = values[np.unique(np.linspace(0, values.shape[0] - 1, points).round().astype(np.int64))]
    return [round(float(v), 5) for v in values]


def _curve(labels: np.ndarray, scores: np.ndarray) -> dict[str, list[float]]:
    """PR and ROC points of one scorer, thinned to :data:`CURVE_POINTS` each."""
    from tfbs.formats.metrics import filter_ambiguous, pr_curve, roc_curve

    y, s = filter_ambiguous(labels, scores)
    precision, recall, _ = pr_curve(y, s)
    fpr, tpr, _ = roc_curve(y, s)
    return {
        "precision": _thin(precision),
        "recall": _thin(recall),
        "fpr": _thin(fpr),
        "tpr": _thin(tpr),
    }


def _read_predictions(uri: str) -> dict[str, np.ndarray] | None:
    """The per-bin predictions evaluate saved (Parquet), column by column; None if absent."""
    import pyarrow.parquet as pq

    if not storage.exists(uri):
        return None
    fs, path = storage.filesystem(uri)
    table = pq.read_table(path, filesystem=fs)
    return {name: table[name].to_numpy(zero_copy_only=False) for name in table.column_names}


def scorer_curves(
    report: Mapping[str, Any], report_dir: str, table_uris: Callable[[str], dict[str, str]] | None = None
) -> tuple[dict[str, dict[str, dict]], list[str]]:
    """PR and ROC points per ``TF/cell`` for the model and every baseline with per-bin scores.

    The model's and the motif scan's scores are the evaluation's
    ``predictions/`` columns (``probability``, ``motif_scan``; any further
    score column counts as a baseline of its name, e.g.
    ``coarse_pwm_reference``); the generator's baselines' (oracle, coarse-PWM
    reference) come from its tables at ``table_uris(tf)`` where there are any. Each scorer's areas are the
    report's, so the legends agree with the table to the digit; a baseline
    of the report without per-bin scores gets areas and no points.

    Returns
    -------
    tuple
        ``{key: {scorer: {"precision", "recall", "fpr", "tpr", "auprc", "auroc"}}}``
        and notes on what could not be drawn.
    """
    from tf_models.baselines import OracleTable

    notes: list[str] = []
    columns = _read_predictions(f"{report_dir}/predictions")
    if columns is None:
        notes.append(f"{report_dir}/predictions: not found; curves show the report's areas only")
    tables: dict[str, Any] = {}
    curves: dict[str, dict[str, dict]] = {}
    for key in sorted(report.get("results", {})):
        tf_name, cell = key.split("/", 1)
        figures = {"model": report["results"][key], **report.get("baselines", {}).get(key, {})}
        scores: dict[str, np.ndarray] = {}
        labels = starts = chrom = np.empty(0)
        if columns is not None:
            rows = (columns["tf"] == tf_name) & (columns["cell"] == cell)
            labels, chrom, starts = columns["label"][rows], columns["chrom"][rows], columns["start"][rows]
            scores["model"] = columns["probability"][rows]
            for name in sorted(set(columns) - _NOT_SCORES - {"probability"}):
                if name in figures and not np.isnan(columns[name][rows].astype(np.float64)).any():
                    scores[name] = columns[name][rows]
            if JOINED in figures and "boosted" in scores:
                scores[JOINED] = joined_probability(scores["model"], scores["boosted"])
            for name, uri in (table_uris(tf_name) if table_uris else {}).items():
                if name not in figures or name in scores:
                    continue
                try:
                    if uri not in tables:
                        tables[uri] = OracleTable.read(uri)
                    scores[name] = tables[uri].scores(cell, chrom, starts)
                except (FileNotFoundError, KeyError, ValueError) as err:
                    notes.append(f"{key}: no {name} curve ({err})")
        curves[key] = {}
        for name, metrics in figures.items():
            points = (
                _curve(labels, scores[name])
                if name in scores
                else dict.fromkeys(("precision", "recall", "fpr", "tpr"), [])
            )
            curves[key][name] = {**points, "auprc": metrics.get("auprc"), "auroc": metrics.get("auroc")}
    return curves, notes


def read_section(report_dir: str, name: str) -> dict[str, Any] | None:
    """One optional section beside ``report.json``, its images read in; None if the file is absent.

    A section that is not ``{"title", "columns", "rows", "notes", "images"}``
    comes back with a ``problem`` the page shows instead of its table: one
    stage's broken file must not take the report down.
    """
    uri = f"{report_dir}/{name}"
    try:
        section = read_json(uri)
    except json.JSONDecodeError as err:
        return {"title": name, "problem": f"{uri}: not JSON ({err.msg}, line {err.lineno})"}
    if section is None:
        return None
    missing = [key for key in SECTION_KEYS if not isinstance(section, dict) or key not in section]
    if missing:
        return {"title": name, "problem": f"{uri}: no {', '.join(missing)}"}
    images, notes = [], [str(note) for note in section["notes"]]
    for relative in section["images"]:
        # Relative to the report directory, and kept inside it.
        path = posixpath.normpath(str(relative))
        data = None if path.startswith("..") or posixpath.isabs(path) else png_data(f"{report_dir}/{path}")
        if data is None:
            notes.append(f"image {relative}: not found under {report_dir}")
        else:
            images.append({"name": str(relative), "png": data})
    return {
        "title": str(section["title"]),
        "columns": [str(c) for c in section["columns"]],
        "rows": [list(row) for row in section["rows"]],
        "notes": notes,
        "images": images,
        "source": uri,
    }


def class_balance(manifest: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per TF/cell and split: bound, unbound and ambiguous rows kept (the manifest's ``counts``)."""
    rows = []
    for tf_name, cells in sorted(manifest.get("counts", {}).items()):
        for cell, outcomes in sorted(cells.items()):
            for split in ("train", "valid", "test"):
                kept = outcomes.get("kept", {}).get(split, {})
                bound, unbound = kept.get("B", 0), kept.get("U", 0)
                rows.append(
                    {
                        "key": f"{tf_name}/{cell}",
                        "split": split,
                        "B": bound,
                        "U": unbound,
                        "A": kept.get("A", 0),
                        "unbound_per_bound": round(unbound / bound, 2) if bound else None,
                    }
                )
    return rows


#: The manifest's outcomes of an input row besides ``kept``, in page order.
ACCOUNTING_OUTCOMES = (
    "excluded_blacklist",
    "excluded_ambiguous",
    "dropped_sampling",
    "dropped_window_out_of_bounds",
    "dropped_window_n",
    "rejected_bad_line",
)


def accounting(manifest: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per TF/cell: the label file's rows and what became of each (they add up: the manifest checks it)."""
    rows = []
    inputs = manifest.get("inputs", {})
    for tf_name, cells in sorted(manifest.get("counts", {}).items()):
        for cell, outcomes in sorted(cells.items()):
            kept = sum(n for by_label in outcomes.get("kept", {}).values() for n in by_label.values())
            row = {"key": f"{tf_name}/{cell}", "input_rows": inputs.get(tf_name, {}).get("input_rows"), "kept": kept}
            row.update({outcome: outcomes.get(outcome, 0) for outcome in ACCOUNTING_OUTCOMES})
            row["accounted"] = kept + sum(row[outcome] for outcome in ACCOUNTING_OUTCOMES)
            rows.append(row)
    return rows


def _manifest_part(
    manifest: Any, read_manifest: Callable[[str], Any] | None, shards_uri: str, version_lineage: Mapping[str, Any]
) -> tuple[dict[str, Any] | None, list[str]]:
    """The manifest as JSON values (passed in, or read from the lineage's shards), and notes."""
    if manifest is None and read_manifest is not None and shards_uri:
        try:
            manifest = read_manifest(shards_uri)
        except TfbsError as err:
            return None, [f"no class balance or accounting: {err}"]
    if manifest is None:
        return None, ["no class balance or accounting: no manifest given"]
    tree = lineage.manifest_tree(manifest)
    notes = []
    digest = lineage.manifest_digest(tree)
    if version_lineage.get("manifest_digest") and digest != version_lineage["manifest_digest"]:
        notes.append(
            f"the shards at {shards_uri} (manifest {digest[:12]}) are not the ones this version was trained "
            f"from ({version_lineage['manifest_digest'][:12]}): balance and accounting are of the shards now there"
        )
    return tree, notes


def collect(
    run_dir: str,
    version: str,
    manifest: Any = None,
    read_manifest: Callable[[str], Any] | None = None,
    table_uris: Callable[[str], dict[str, str]] | None = None,
) -> dict[str, Any]:
    """Everything the report page of ``version`` shows, as JSON values.

    Parameters
    ----------
    run_dir, version
        The run and the model version whose report directory
        (:func:`tfbs.lineage.report_uri`) holds ``report.json``.
    manifest
        The shard manifest (pydantic object, dict or JSON text); if None,
        ``read_manifest(shards_uri)`` of the version's lineage, if given.
    read_manifest
        Reads a shard directory's manifest (``tfbs.formats.manifest.read_manifest``).
    table_uris
        ``tf -> {baseline: URI}`` of the generator's per-bin tables
        (``DataConfig.generator_table_uris``), for the oracle's and the
        coarse-PWM reference's curves; None draws none.

    Raises
    ------
    MissingInputError
        If the version has no ``report.json`` (run ``tfbs evaluate`` first).
    """
    report_dir = lineage.report_uri(run_dir, version)
    report = read_json(f"{report_dir}/report.json")
    if report is None:
        raise MissingInputError(f"{report_dir}/report.json: not found (run `tfbs evaluate` first)")
    version_lineage = report.get("lineage")
    if version_lineage is None:
        found = lineage.read_lineage(run_dir, version)
        version_lineage = found.model_dump(mode="json") if found else {}
    notes: list[str] = []
    curves, curve_notes = scorer_curves(report, report_dir, table_uris)
    notes += curve_notes
    history = read_json(f"{lineage.model_uri(run_dir, version)}/history.json")
    if history is None:
        notes.append(f"{lineage.model_uri(run_dir, version)}/history.json: not found (no training history)")
    tree, manifest_notes = _manifest_part(
        manifest, read_manifest, version_lineage.get("shards_uri", ""), version_lineage
    )
    notes += manifest_notes
    sections = {}
    for name in SECTION_FILES:
        section = read_section(report_dir, name)
        if section is not None:
            sections[name.removesuffix(".json")] = section
    for note in notes:
        log.info("report of %s: %s", version, note)
    return {
        "run_dir": run_dir,
        "version": version,
        "report_dir": report_dir,
        "report": report,
        "lineage": version_lineage,
        "curves": curves,
        "history": history or [],
        "class_balance": class_balance(tree) if tree else [],
        "accounting": accounting(tree) if tree else [],
        "manifest": {key: tree.get(key) for key in ("tfs", "cells", "window", "dnase", "negative_draws", "splits")}
        if tree
        else None,
        "baselines_png": png_data(f"{report_dir}/baselines.png"),
        "sections": sections,
        "notes": notes,
    }
