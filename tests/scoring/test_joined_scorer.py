"""The model joined to the boosted baseline: its scores, its place in the intervals, the report's lines."""

from __future__ import annotations

import numpy as np
import pytest

from tf_models.protocol import JOINED, group_summary, headline, joined_probability, site_intervals

STEP = 50


def _two_scorers_of_the_same_sites(rng: np.random.Generator, n_sites: int = 120, period: int = 20) -> dict:
    """One TF/cell per cell: 4 B bins per site, U between; 'model' and 'boosted' see each site through their own noise."""
    n = n_sites * period
    site = np.where(np.arange(n) % period < 4, np.arange(n) // period, -1)
    labels = np.where(site >= 0, 1, 0)
    per_key = {}
    for cell in ("K562", "HepG2"):
        arrays = {"chrom": np.full(n, "chr1"), "start": np.arange(n) * STEP, "label": labels}
        for name in ("model", "boosted"):
            strength = rng.normal(1.2, 1.0, size=n_sites)
            logit = rng.normal(size=n)
            logit[site >= 0] = strength[site[site >= 0]]
            arrays[name] = 1 / (1 + np.exp(-logit))
        arrays[JOINED] = joined_probability(arrays["model"], arrays["boosted"])
        per_key[f"CTCF/{cell}"] = arrays
    return per_key


@pytest.fixture(scope="module")
def intervals() -> dict:
    return site_intervals(_two_scorers_of_the_same_sites(np.random.default_rng(5)), ["HepG2"], 200, seed=0)


def test_the_joined_probability_has_the_mean_log_odds_and_saturated_scores_still_rank() -> None:
    model, boosted = np.array([0.8, 0.5, 0.2]), np.array([0.2, 0.5, 0.9])
    log_odds = np.log(joined_probability(model, boosted)) - np.log1p(-joined_probability(model, boosted))
    np.testing.assert_allclose(log_odds, [0.0, 0.0, (np.log(0.25) + np.log(9)) / 2], atol=1e-12)
    # A probability of exactly 0 or 1 is clipped, so the other scorer still orders the bins.
    saturated = joined_probability(np.array([1.0, 1.0, 0.0]), np.array([0.3, 0.6, 0.99]))
    assert np.isfinite(saturated).all() and saturated[1] > saturated[0] > saturated[2]


def test_the_intervals_pair_the_joined_scorer_with_the_boosted_baseline_only(intervals) -> None:
    for group in ("training cells", "held-out cells"):
        pairs = [(d["a"], d["b"]) for d in intervals["groups"][group]["differences"]]
        assert pairs == [("model", "boosted"), (JOINED, "boosted")]


def test_two_scorers_with_their_own_noise_joined_beat_each_and_the_summary_says_by_how_much(intervals) -> None:
    summary = group_summary(intervals)
    for group in ("training cells", "held-out cells"):
        auprc = {name: summary[group]["auprc"][name]["estimate"] for name in ("model", "boosted", JOINED)}
        assert auprc[JOINED] > max(auprc["model"], auprc["boosted"])
        minus = summary[group]["joined_minus_boosted"]
        assert minus["estimate"] == pytest.approx(auprc[JOINED] - auprc["boosted"])
        assert minus["ci"][0] < minus["estimate"] < minus["ci"][1]
        # The joined scorer is no baseline: the model is still measured against the best of those.
        assert summary[group]["best_baseline"] == "boosted"
    lines = headline({"groups": summary, "heldout_cells": ["HepG2"]})
    assert lines[0].startswith("held-out cells (HepG2; 1 TF/cells)") and "; joined to boosted 0." in lines[0]
