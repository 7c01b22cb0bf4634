"""Several keys and methods on the same resamples: intervals, group means, paired differences, gaps."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from tfbs.formats.metrics.step_metrics import auprc_of_steps, auroc_of_steps, recall_at_fdr_of_steps
from tfbs.formats.metrics.steps import score_steps
from tfbs.site_bootstrap.regions import multiplicity_blocks
from tfbs.site_bootstrap.weighted import FDR, METRICS, key_data, key_rows, method_scores, prepare_scores

#: Percentiles of the reported interval.
PERCENTILES: tuple[float, float] = (2.5, 97.5)


@dataclass(frozen=True)
class KeyBins:
    """One TF/cell's bins: labels, region ids and each method's scores.

    Attributes
    ----------
    labels : np.ndarray
        ``'U'``/``'B'``/``'A'`` or 0/1/-1 per bin.
    region : np.ndarray
        Region id of each bin (:func:`site_regions` over the genomic bins of
        all keys, aligned to the bin each row is).
    scores : Mapping[str, np.ndarray]
        ``{method: scores}``, each aligned to ``labels``.
    """

    labels: np.ndarray
    region: np.ndarray
    scores: Mapping[str, np.ndarray]


class _Samples(NamedTuple):
    """A quantity's value on all bins and in every resample (NaN: undefined)."""

    estimate: float
    values: np.ndarray


def _interval(sample: _Samples) -> dict:
    """``{"estimate", "ci"}`` with the percentile interval over the defined resamples."""
    finite = sample.values[np.isfinite(sample.values)]
    ci = [float(v) for v in np.percentile(finite, PERCENTILES)] if finite.size else None
    return {"estimate": float(sample.estimate), "ci": ci}


def _used(values: np.ndarray) -> int:
    return int(np.count_nonzero(np.isfinite(values)))


def _mean(samples: Sequence[_Samples]) -> _Samples:
    return _Samples(
        float(np.mean([s.estimate for s in samples])), np.mean(np.stack([s.values for s in samples]), axis=0)
    )


def _minus(a: _Samples, b: _Samples) -> _Samples:
    return _Samples(a.estimate - b.estimate, a.values - b.values)


def _point_estimates(y: np.ndarray, s: np.ndarray) -> dict[str, float]:
    """The metrics on all bins, by the very functions of score_predictions."""
    st = score_steps(y, s)
    return {
        "auprc": auprc_of_steps(st),
        "auroc": auroc_of_steps(st),
        "recall_at_fdr_10": recall_at_fdr_of_steps(st, FDR),
    }


def _bootstrap_keys(
    keys: Mapping[str, KeyBins], n_resamples: int, seed: int
) -> tuple[int, dict[str, dict], dict[str, dict[str, dict[str, _Samples]]]]:
    """Per key: counts, and per method and metric the point estimate and resampled values."""
    if not keys:
        raise ValueError("no keys given")
    n_regions = 1 + max(int(np.max(np.asarray(k.region), initial=-1)) for k in keys.values())
    if n_regions == 0:
        raise ValueError("no bins given")
    data, preps, points, info = {}, {}, {}, {}
    for name, kb in keys.items():
        try:
            key = data[name] = key_data(kb.labels, kb.region, n_regions)
            scored = {m: method_scores(key, s) for m, s in kb.scores.items()}
        except ValueError as e:
            raise ValueError(f"{name}: {e}") from None
        preps[name] = {m: prepare_scores(key.y, s, key.region, n_regions) for m, s in scored.items()}
        points[name] = {m: _point_estimates(key.y, s) for m, s in scored.items()}
        info[name] = {
            "n_bins": int(key.y.shape[0]),
            "n_regions": int(np.count_nonzero(key.pos_per_region + key.neg_per_region)),
            "n_positive_sites": int(np.count_nonzero(key.pos_per_region)),
        }
    values = {n: {m: {x: np.empty(n_resamples) for x in METRICS} for m in preps[n]} for n in keys}
    used = {n: 0 for n in keys}
    first = 0
    # One draw of multiplicities per resample, applied to every key and method.
    for block in multiplicity_blocks(n_regions, n_resamples, seed):
        mult = block.astype(np.float64)
        rows = slice(first, first + block.shape[0])
        for name in keys:
            defined, out = key_rows(data[name], preps[name], mult)
            used[name] += int(np.count_nonzero(defined))
            for m, metrics in out.items():
                for x, v in metrics.items():
                    values[name][m][x][rows] = v
        first += block.shape[0]
    for name in keys:
        info[name]["resamples_used"] = used[name]
    samples = {n: {m: {x: _Samples(points[n][m][x], values[n][m][x]) for x in METRICS} for m in preps[n]} for n in keys}
    return n_regions, info, samples


def _entry(per_metric: Mapping[str, _Samples], **extra: object) -> dict:
    """A JSON entry: extra fields, ``resamples_used`` and one interval per metric."""
    return {
        **extra,
        "resamples_used": _used(per_metric[METRICS[0]].values),
        **{x: _interval(per_metric[x]) for x in METRICS},
    }


def _group_means(samples: Mapping[str, Mapping[str, Mapping[str, _Samples]]], keys: Sequence[str]) -> dict:
    """``{method: (n_keys, {metric: mean samples})}`` over the keys having the method."""
    methods = list(dict.fromkeys(m for k in keys for m in samples[k]))
    out = {}
    for m in methods:
        having = [k for k in keys if m in samples[k]]
        out[m] = (len(having), {x: _mean([samples[k][m][x] for k in having]) for x in METRICS})
    return out


def _group_entry(samples: Mapping, keys: Sequence[str], pairs: Sequence[tuple[str, str]]) -> dict:
    """One group's method means and paired differences."""
    methods = {m: _entry(means, n_keys=n) for m, (n, means) in _group_means(samples, keys).items()}
    differences = []
    for a, b in pairs:
        both = [k for k in keys if a in samples[k] and b in samples[k]]
        if not both:
            continue
        per_metric = {
            x: _minus(_mean([samples[k][a][x] for k in both]), _mean([samples[k][b][x] for k in both])) for x in METRICS
        }
        differences.append(_entry(per_metric, a=a, b=b, n_keys=len(both)))
    return {"keys": list(keys), "methods": methods, "differences": differences}


def _gap_entries(samples: Mapping, groups: Mapping[str, Sequence[str]], gaps: Sequence[tuple[str, str, str]]) -> list:
    """Differences of one method's means between two groups."""
    out = []
    for method, ga, gb in gaps:
        for g in (ga, gb):
            if g not in groups:
                raise ValueError(f"gap {(method, ga, gb)!r} names unknown group {g!r}")
        means_a = _group_means(samples, groups[ga]).get(method)
        means_b = _group_means(samples, groups[gb]).get(method)
        if means_a is None or means_b is None:
            continue
        per_metric = {x: _minus(means_a[1][x], means_b[1][x]) for x in METRICS}
        out.append(_entry(per_metric, method=method, a=ga, b=gb, n_keys_a=means_a[0], n_keys_b=means_b[0]))
    return out


def bootstrap_metrics(
    keys: Mapping[str, KeyBins],
    groups: Mapping[str, Sequence[str]] | None = None,
    pairs: Sequence[tuple[str, str]] = (),
    gaps: Sequence[tuple[str, str, str]] = (),
    n_resamples: int = 1000,
    seed: int = 0,
) -> dict:
    """Site-bootstrap intervals of auPRC, auROC and recall at 10 % FDR.

    Every resample draws region multiplicities once (:func:`resample_regions`)
    and weights the bins of every key and method by them; the layout of the
    result is in the module docstring.

    Parameters
    ----------
    keys : Mapping[str, KeyBins]
        ``{"TF/cell": KeyBins}``; region ids must come from one
        :func:`site_regions` call over the genomic bins of all keys.
    groups : Mapping[str, Sequence[str]] | None
        Named lists of keys, e.g. ``{"training cells": [...], "held-out
        cells": [...]}``; each method's mean is over the group's keys that
        have it.
    pairs : Sequence[tuple[str, str]]
        Method pairs ``(a, b)``: in each group, the paired difference
        ``mean(a) - mean(b)`` over the keys having both.
    gaps : Sequence[tuple[str, str, str]]
        ``(method, group_a, group_b)``: the method's mean over ``group_a``
        minus its mean over ``group_b``.
    n_resamples : int
        Number of resamples.
    seed : int
        Seed of the resamples.

    Returns
    -------
    dict
        JSON-ready (no NaN): ``bootstrap``, ``keys``, ``groups``, ``gaps``.

    Raises
    ------
    ValueError
        On invalid labels or scores (as :func:`tfbs.formats.metrics.score_predictions`),
        a key without B or U bins, or a group naming an unknown key.
    """
    groups = dict(groups or {})
    for g, members in groups.items():
        unknown = [k for k in members if k not in keys]
        if unknown:
            raise ValueError(f"group {g!r} names unknown keys {unknown}")
    if n_resamples <= 0:
        raise ValueError(f"n_resamples must be positive, got {n_resamples}")
    n_regions, info, samples = _bootstrap_keys(keys, n_resamples, seed)
    return {
        "bootstrap": {
            "n_resamples": n_resamples,
            "seed": seed,
            "percentiles": list(PERCENTILES),
            "n_regions": n_regions,
            "metrics": list(METRICS),
        },
        "keys": {
            name: {**info[name], "methods": {m: {x: _interval(v) for x, v in per.items()} for m, per in ms.items()}}
            for name, ms in samples.items()
        },
        "groups": {g: _group_entry(samples, members, pairs) for g, members in groups.items()},
        "gaps": _gap_entries(samples, groups, gaps),
    }
