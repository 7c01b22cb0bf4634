"""The challenge's protocol in a report: training cells and held-out cells apart, baselines beside, intervals over sites.

ENCODE-DREAM's final round scored held-out chromosomes in cell types whose
labels no team trained on. A report keeps that split: each TF/cell is of a
*training cell* or a *held-out cell* (``data.heldout_cells``), and every
figure is given for each group, as a mean over its TF/cells with a 95 %
interval from a bootstrap over test sites (:mod:`tfbs.site_bootstrap`),
beside the baselines scored on the same rows, and the model minus the best
baseline of the group with its paired interval.

Baselines are methods a user could run instead of the model; the
generator's oracle and coarse-PWM reference are references, never the best
baseline. Beside them the report scores the model joined to the boosted
baseline (:func:`joined_probability`), and that joined scorer minus the boosted
baseline: whether the network carries what the winners' kind of model
lacks, whether or not it beats it alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tfbs.site_bootstrap import KeyBins, bootstrap_metrics, busy_bins, site_regions

TRAINING, HELD_OUT = "training cells", "held-out cells"
#: Methods a user could run instead of the model, in the order reports show them.
BASELINES = ("boosted", "dnase_motif", "dnase", "motif_scan")
#: What the generator knows and no method does.
REFERENCES = ("coarse_pwm_reference", "oracle")
#: The model joined to the boosted baseline (:func:`joined_probability`).
JOINED = "model_and_boosted"
#: Every scorer beside the model, in report order.
SCORERS = (*BASELINES, JOINED, *REFERENCES)


def log_odds(probability: np.ndarray) -> np.ndarray:
    """``log(p / (1 - p))``, with ``p`` clipped to ``[1e-7, 1 - 1e-7]`` so a saturated score still ranks.

    Examples
    --------
    >>> round(float(log_odds(np.array([0.9]))[0]), 6) == round(float(np.log(9)), 6)
    True
    >>> bool(np.isfinite(log_odds(np.array([0.0, 1.0]))).all())
    True
    """
    p = np.clip(np.asarray(probability, dtype=np.float64), 1e-7, 1 - 1e-7)
    return np.log(p) - np.log1p(-p)


def joined_probability(model: np.ndarray, boosted: np.ndarray) -> np.ndarray:
    """The probability whose log-odds are the model's and the boosted baseline's (:func:`log_odds`) averaged.

    An equal-weight ensemble: with no weight to choose, no choice is made on
    the data it is scored on. It is what ``tfbs predict`` writes where the
    version kept its baseline (:mod:`tf_models.kept_baseline`).

    Examples
    --------
    >>> joined_probability(np.array([0.5, 0.9]), np.array([0.5, 0.1])).round(12).tolist()
    [0.5, 0.5]
    >>> round(float(joined_probability(np.array([0.9]), np.array([0.9]))[0]), 12)
    0.9
    """
    return 1.0 / (1.0 + np.exp(-(log_odds(model) + log_odds(boosted)) / 2))


def group_of(cell: str, heldout_cells: Sequence[str]) -> str:
    """The group of a cell's TF/cells."""
    return HELD_OUT if cell in heldout_cells else TRAINING


def report_groups(keys: Sequence[str], heldout_cells: Sequence[str]) -> dict[str, list[str]]:
    """The groups a report gives: training and held-out cells, and each TF within them (non-empty only).

    Examples
    --------
    >>> report_groups(["CTCF/A", "CTCF/B", "EGR1/A"], ["B"])
    {'training cells': ['CTCF/A', 'EGR1/A'], 'held-out cells': ['CTCF/B'], 'CTCF training cells': ['CTCF/A'], 'CTCF held-out cells': ['CTCF/B'], 'EGR1 training cells': ['EGR1/A']}
    """
    groups: dict[str, list[str]] = {TRAINING: [], HELD_OUT: []}
    for key in sorted(keys):
        tf, cell = key.split("/", 1)
        group = group_of(cell, heldout_cells)
        groups[group].append(key)
        groups.setdefault(f"{tf} {group}", []).append(key)
    return {name: members for name, members in groups.items() if members}


def site_intervals(
    per_key: Mapping[str, Mapping[str, np.ndarray]],
    heldout_cells: Sequence[str],
    n_resamples: int,
    seed: int,
    pairs: Sequence[tuple[str, str]] | None = None,
    gaps: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Intervals over test sites for every TF/cell, group, model-minus-baseline and training-minus-held-out gap.

    Parameters
    ----------
    per_key
        Per TF/cell: ``chrom``, ``start``, ``label`` (codes) and one array
        per scorer (``model`` and the baselines it has).
    heldout_cells
        ``data.heldout_cells``.
    n_resamples, seed
        The bootstrap's (``evaluate.bootstrap_resamples``, ``evaluate.bootstrap_seed``).
    pairs
        Scorer pairs ``(a, b)`` whose paired difference ``a - b`` each group
        gets (default: the model minus each other scorer, and the joined
        scorer minus the boosted baseline).
    gaps
        Scorers whose training-cells mean minus held-out-cells mean is given
        (default: every scorer, when both groups exist).

    Returns
    -------
    dict
        :func:`tfbs.site_bootstrap.bootstrap_metrics`' layout.
    """
    keys = sorted(per_key)
    chrom = np.concatenate([np.asarray(per_key[k]["chrom"]).astype(str) for k in keys])
    start = np.concatenate([np.asarray(per_key[k]["start"], dtype=np.int64) for k in keys])
    labels = np.concatenate([np.asarray(per_key[k]["label"]) for k in keys])
    # One region id per genomic bin, whichever TF/cell it is read from.
    genome_bins, row_bin = np.unique(np.char.add(np.char.add(chrom, ":"), start.astype(str)), return_inverse=True)
    bin_chrom = np.array([name.rsplit(":", 1)[0] for name in genome_bins])
    bin_start = np.array([int(name.rsplit(":", 1)[1]) for name in genome_bins], dtype=np.int64)
    busy = np.zeros(genome_bins.shape[0], dtype=bool)
    np.logical_or.at(busy, row_bin, busy_bins([labels]))
    region_of_bin = site_regions(bin_chrom, bin_start, busy)
    bins, offset = {}, 0
    for key in keys:
        n = len(per_key[key]["label"])
        scores = {
            name: np.asarray(v, dtype=np.float64)
            for name, v in per_key[key].items()
            if name not in ("chrom", "start", "label")
        }
        scores = {name: v for name, v in scores.items() if not np.isnan(v).any()}
        bins[key] = KeyBins(np.asarray(per_key[key]["label"]), region_of_bin[row_bin[offset : offset + n]], scores)
        offset += n
    groups = report_groups(keys, heldout_cells)
    scorers = sorted({name for key in bins.values() for name in key.scores})
    if pairs is None:
        pairs = [("model", name) for name in scorers if name not in ("model", JOINED)]
        pairs += [(JOINED, "boosted")] if {JOINED, "boosted"} <= set(scorers) else []
    both = HELD_OUT in groups and TRAINING in groups
    group_gaps = [(name, TRAINING, HELD_OUT) for name in (scorers if gaps is None else gaps)] if both else []
    return bootstrap_metrics(bins, groups=groups, pairs=pairs, gaps=group_gaps, n_resamples=n_resamples, seed=seed)


def best_baseline(group: Mapping[str, Any]) -> str | None:
    """The baseline with the highest mean auPRC in a group of :func:`site_intervals` (None if it has none)."""
    methods = group.get("methods", {})
    scored = [(methods[name]["auprc"]["estimate"], name) for name in BASELINES if name in methods]
    return max(scored)[1] if scored else None


def group_summary(intervals: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Per group: each scorer's mean auPRC with its interval, the best baseline, the model minus it,
    and the joined scorer minus the boosted baseline.

    Returns
    -------
    dict
        ``{group: {"keys": [...], "auprc": {scorer: interval}, "best_baseline": name,
        "model_minus_best": interval, "joined_minus_boosted": interval}}`` (None where not scored).
    """

    def difference(group: Mapping[str, Any], a: str, b: str | None) -> dict | None:
        found = next((d for d in group.get("differences", []) if d["a"] == a and d["b"] == b), None)
        return found["auprc"] if found else None

    summary = {}
    for name, group in intervals.get("groups", {}).items():
        best = best_baseline(group)
        summary[name] = {
            "keys": group["keys"],
            "auprc": {scorer: entry["auprc"] for scorer, entry in group["methods"].items()},
            "best_baseline": best,
            "model_minus_best": difference(group, "model", best),
            "joined_minus_boosted": difference(group, JOINED, "boosted"),
        }
    return summary


def format_interval(interval: Mapping[str, Any] | None, signed: bool = False) -> str:
    """``0.512 (0.47-0.55)`` for an interval of :func:`site_intervals`.

    Examples
    --------
    >>> format_interval({"estimate": 0.5123, "ci": [0.47, 0.551]})
    '0.512 (0.470-0.551)'
    >>> format_interval({"estimate": -0.02, "ci": [-0.05, 0.01]}, signed=True)
    '-0.020 (-0.050 to +0.010)'
    """
    if not interval:
        return "-"
    spec = "+.3f" if signed else ".3f"
    estimate = format(interval["estimate"], spec)
    if not interval.get("ci"):
        return estimate
    low, high = (format(value, spec) for value in interval["ci"])
    return f"{estimate} ({low} to {high})" if signed else f"{estimate} ({low}-{high})"


def headline(report: Mapping[str, Any]) -> list[str]:
    """A line per group of cells (held-out first): the model's mean auPRC and the best baseline's, with intervals
    (and the model joined to the boosted baseline, where scored).

    Examples
    --------
    >>> iv = {"estimate": 0.5, "ci": [0.4, 0.6]}
    >>> group = {"keys": ["CTCF/B"], "auprc": {"model": iv, "boosted": iv}, "best_baseline": "boosted",
    ...          "model_minus_best": {"estimate": 0.0, "ci": [-0.1, 0.1]}}
    >>> print(headline({"groups": {HELD_OUT: group}, "heldout_cells": ["B"]})[0])
    held-out cells (B; 1 TF/cells): model auPRC 0.500 (0.400-0.600), best baseline boosted 0.500 (0.400-0.600), model - boosted +0.000 (-0.100 to +0.100)
    """
    lines = []
    for name in (HELD_OUT, TRAINING):
        group = report.get("groups", {}).get(name)
        if not group:
            continue
        cells = sorted({key.split("/", 1)[1] for key in group["keys"]})
        best = group["best_baseline"]
        beside = (
            f", best baseline {best} {format_interval(group['auprc'][best])}, "
            f"model - {best} {format_interval(group['model_minus_best'], signed=True)}"
            if best
            else ""
        )
        joined = (
            f"; joined to boosted {format_interval(group['auprc'][JOINED])}, "
            f"minus boosted {format_interval(group['joined_minus_boosted'], signed=True)}"
            if group.get("joined_minus_boosted")
            else ""
        )
        lines.append(
            f"{name} ({', '.join(cells)}; {len(group['keys'])} TF/cells): "
            f"model auPRC {format_interval(group['auprc'].get('model'))}{beside}{joined}"
        )
    return lines
