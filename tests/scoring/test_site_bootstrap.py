"""Tests for tfbs.site_bootstrap (site-level bootstrap of the DREAM metrics)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tfbs.formats.metrics import auprc_davis_goadrich, auroc, filter_ambiguous, recall_at_fdr, score_predictions
from tfbs.site_bootstrap import (
    METRICS,
    KeyBins,
    bootstrap_metrics,
    busy_bins,
    resample_regions,
    site_regions,
    weighted_metrics,
)

STEP = 50  # bp between test bins


# ---------------------------------------------------------------------------
# synthetic test chromosomes
# ---------------------------------------------------------------------------
def sites_genome(n_sites: int, rng: np.random.Generator, run: int = 4, gap: int = 30, ambiguous: bool = False) -> dict:
    """One chromosome of ``n_sites`` sites: runs of ``run`` B bins (A at their
    edges if ``ambiguous``) between ``gap`` U bins; ``site`` numbers the bins
    of each site (-1 outside).  Regions come from site_regions."""
    period = run + gap
    n = n_sites * period
    offset = np.arange(n) % period
    site = np.where(offset < run, np.arange(n) // period, -1)
    labels = np.where(site >= 0, "B", "U")
    if ambiguous:
        labels[(offset == run) | (offset == period - 1)] = "A"
    start = np.arange(n) * STEP
    region = site_regions(np.full(n, "chr1"), start, busy_bins([labels]))
    return {"labels": labels, "site": site, "region": region, "n": n}


def site_scores(g: dict, signal: float, rng: np.random.Generator, within: float = 0.1) -> np.ndarray:
    """Scores whose B bins share one draw per site (as overlapping bins do)."""
    effect = rng.normal(signal, 1.0, size=g["site"].max() + 1)
    s = rng.normal(size=g["n"])
    bound = g["site"] >= 0
    s[bound] = effect[g["site"][bound]] + within * rng.normal(size=int(bound.sum()))
    return s


def width(entry: dict) -> float:
    lo, hi = entry["ci"]
    return hi - lo


# ---------------------------------------------------------------------------
# regions
# ---------------------------------------------------------------------------
def test_a_site_is_never_split_and_regions_reach_the_block_size():
    rng = np.random.default_rng(0)
    n = 4000
    start = np.arange(n) * STEP
    busy = np.zeros(n, dtype=bool)
    for first in rng.choice(n - 40, 60, replace=False):
        busy[first : first + rng.integers(1, 40)] = True  # runs up to 2 kb, some merging
    region = site_regions(np.full(n, "chr3"), start, busy, block_bp=1000)
    # ids are consecutive and non-decreasing along the chromosome
    assert region[0] == 0 and set(np.diff(region)) <= {0, 1}
    # a cut never touches a busy bin
    cut = np.flatnonzero(np.diff(region)) + 1
    assert not busy[cut].any() and not busy[cut - 1].any()
    # every region but the last spans >= 1000 bp, and is cut at the first free pair beyond
    firsts = np.r_[0, cut]
    assert (start[cut] - start[firsts[:-1]] >= 1000).all()
    for a, b in zip(firsts[:-1], cut):
        ok = (start[a + 1 : b] - start[a] >= 1000) & ~busy[a + 1 : b] & ~busy[a : b - 1]
        assert not ok.any(), "a region ran on past an allowed cut"


def test_all_free_bins_give_regions_of_exactly_the_block():
    start = np.arange(100) * STEP
    region = site_regions(np.full(100, "chr1"), start, np.zeros(100, dtype=bool), block_bp=1000)
    assert np.bincount(region).tolist() == [20] * 5
    region = site_regions(np.full(100, "chr1"), start, np.zeros(100, dtype=bool), block_bp=1001)
    assert np.bincount(region).tolist() == [21, 21, 21, 21, 16]


def test_chromosome_boundaries_start_a_region_and_any_row_order_is_accepted():
    chrom = np.array(["chr1"] * 30 + ["chr21"] * 7 + ["chr8"] * 30)
    start = np.r_[np.arange(30), np.arange(7), np.arange(30)] * STEP
    busy = np.zeros(chrom.shape[0], dtype=bool)
    busy[[28, 29, 30, 31]] = True  # a site at chr1's end and one at chr21's start
    region = site_regions(chrom, start, busy, block_bp=1000)
    for c in np.unique(chrom):
        inside = np.unique(region[chrom == c])
        assert not np.isin(inside, region[chrom != c]).any()
    assert len(np.unique(region[chrom == "chr21"])) == 1  # short chromosome: one region
    perm = np.random.default_rng(1).permutation(chrom.shape[0])
    assert (site_regions(chrom[perm], start[perm], busy[perm], block_bp=1000) == region[perm]).all()


def test_busy_bins_and_bad_region_input():
    busy = busy_bins([np.array(["U", "B", "U", "U"]), np.array([0, 0, -1, 0])])
    assert busy.tolist() == [False, True, True, False]
    with pytest.raises(ValueError, match="length"):
        busy_bins([np.array(["U"]), np.array(["U", "B"])])
    with pytest.raises(ValueError, match="block_bp"):
        site_regions(["chr1"], [0], [False], block_bp=0)
    with pytest.raises(ValueError, match="differ in length"):
        site_regions(["chr1", "chr1"], [0], [False])
    assert site_regions(np.array([], dtype=str), np.array([], dtype=np.int64), np.array([], dtype=bool)).size == 0


def test_resample_regions_is_a_draw_with_replacement_and_seeded():
    m = resample_regions(300, n_resamples=250, seed=4)
    assert m.shape == (250, 300) and (m.sum(axis=1) == 300).all()
    assert np.mean(m == 0) == pytest.approx((1 - 1 / 300) ** 300, abs=0.01)  # ~e^-1 of regions left out
    assert (resample_regions(300, n_resamples=250, seed=4) == m).all()
    assert (resample_regions(300, n_resamples=120, seed=4) == m[:120]).all()
    assert not (resample_regions(300, n_resamples=250, seed=5) == m).all()


# ---------------------------------------------------------------------------
# weighted metrics = metrics on repeated rows
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("decimals", [None, 1, 0])  # continuous scores, ties, heavy ties
def test_weighted_metrics_equal_the_metrics_on_repeated_rows(decimals):
    rng = np.random.default_rng(7)
    g = sites_genome(40, rng, gap=12, ambiguous=True)
    s = site_scores(g, 1.0, rng, within=0.5)
    if decimals is not None:
        s = np.round(s, decimals)
    mult = resample_regions(int(g["region"].max()) + 1, n_resamples=12, seed=3)
    got = weighted_metrics(g["labels"], s, g["region"], mult)
    for r in range(mult.shape[0]):
        w = mult[r, g["region"]]
        y, sr = filter_ambiguous(np.repeat(g["labels"], w), np.repeat(s, w))
        assert got["auroc"][r] == auroc(y, sr)  # exact
        assert got["recall_at_fdr_10"][r] == recall_at_fdr(y, sr, 0.1)  # exact
        assert got["auprc"][r] == pytest.approx(auprc_davis_goadrich(y, sr), rel=1e-12, abs=0)


def test_per_bin_weights_and_unit_weights():
    rng = np.random.default_rng(8)
    y = (rng.uniform(size=300) < 0.2).astype(int)
    s = np.round(rng.normal(size=300) + y, 1)
    w = rng.integers(0, 4, size=(5, 300))
    got = weighted_metrics(y, s, np.arange(300), w)
    for r in range(5):
        yr, sr = np.repeat(y, w[r]), np.repeat(s, w[r])
        assert got["auroc"][r] == auroc(yr, sr)
        assert got["auprc"][r] == pytest.approx(auprc_davis_goadrich(yr, sr), rel=1e-12, abs=0)
    ones = weighted_metrics(y, s, np.arange(300), np.ones((1, 300), dtype=int))
    official = score_predictions(y, s)
    assert ones["auroc"][0] == official["auroc"]
    assert ones["recall_at_fdr_10"][0] == official["recall_at_fdr_10"]
    assert ones["auprc"][0] == pytest.approx(official["auprc"], rel=1e-12, abs=0)


def test_a_resample_without_positives_is_undefined():
    # B bins in region 0 only: a resample leaving region 0 out has no auPRC
    y = np.array([1, 1, 0, 0, 0, 0])
    got = weighted_metrics(y, np.arange(6.0), np.array([0, 0, 1, 1, 2, 2]), np.array([[0, 2, 1], [1, 1, 1]]))
    assert all(np.isnan(got[m][0]) and np.isfinite(got[m][1]) for m in METRICS)


# ---------------------------------------------------------------------------
# keys, groups, differences
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def report() -> dict:
    """Three cells of one TF on one genome; 'model' beats 'gbm' clearly, 'weak' is a coin flip."""
    rng = np.random.default_rng(11)
    g = sites_genome(300, rng, gap=20, ambiguous=True)
    keys = {}
    for cell in ("HepG2", "K562", "GM12878"):
        scores = {"model": site_scores(g, 2.5, rng), "gbm": site_scores(g, 1.0, rng)}
        if cell != "GM12878":
            scores["weak"] = rng.normal(size=g["n"])
        keys[f"CTCF/{cell}"] = KeyBins(g["labels"], g["region"], scores)
    groups = {"training cells": ["CTCF/HepG2", "CTCF/K562"], "held-out cells": ["CTCF/GM12878"]}
    result = bootstrap_metrics(
        keys,
        groups=groups,
        pairs=[("model", "gbm"), ("model", "model"), ("gbm", "weak")],
        gaps=[("model", "training cells", "held-out cells"), ("weak", "training cells", "held-out cells")],
        n_resamples=200,
        seed=1,
    )
    return {"keys": keys, "result": result, "genome": g}


def test_point_estimates_are_the_official_scores_and_intervals_contain_them(report):
    result = report["result"]
    for key, kb in report["keys"].items():
        for method, s in kb.scores.items():
            official = score_predictions(kb.labels, s)
            entry = result["keys"][key]["methods"][method]
            for m in METRICS:
                assert entry[m]["estimate"] == official[m]
            for m in ("auprc", "auroc"):
                lo, hi = entry[m]["ci"]
                assert lo <= entry[m]["estimate"] <= hi
    counts = result["keys"]["CTCF/HepG2"]
    g = report["genome"]
    assert counts["n_bins"] == int(np.sum(g["labels"] != "A"))
    assert counts["n_positive_sites"] == 300
    assert counts["n_regions"] == len(np.unique(g["region"]))
    assert counts["resamples_used"] == 200


def test_layout_is_json_ready_and_missing_methods_have_no_entry(report):
    result = report["result"]
    assert json.loads(json.dumps(result, allow_nan=False)) == result
    assert result["bootstrap"] == {
        "n_resamples": 200,
        "seed": 1,
        "percentiles": [2.5, 97.5],
        "n_regions": int(report["genome"]["region"].max()) + 1,
        "metrics": list(METRICS),
    }
    assert "weak" not in result["keys"]["CTCF/GM12878"]["methods"]
    held_out = result["groups"]["held-out cells"]
    assert set(held_out["methods"]) == {"model", "gbm"}
    assert [(d["a"], d["b"]) for d in held_out["differences"]] == [("model", "gbm"), ("model", "model")]
    assert [g["method"] for g in result["gaps"]] == ["model"]  # 'weak' has no held-out key
    training = result["groups"]["training cells"]["methods"]["model"]
    assert training["n_keys"] == 2 and training["resamples_used"] == 200
    keys = ["CTCF/HepG2", "CTCF/K562"]
    mean = np.mean([result["keys"][k]["methods"]["model"]["auprc"]["estimate"] for k in keys])
    assert training["auprc"]["estimate"] == pytest.approx(mean, abs=1e-15)


def test_difference_of_a_method_with_itself_is_exactly_zero(report):
    for group in report["result"]["groups"].values():
        same = next(d for d in group["differences"] if d["a"] == d["b"] == "model")
        for m in METRICS:
            assert same[m] == {"estimate": 0.0, "ci": [0.0, 0.0]}


def test_a_clearly_better_method_has_a_difference_interval_above_zero(report):
    groups = report["result"]["groups"]
    for name in ("training cells", "held-out cells"):
        diff = next(d for d in groups[name]["differences"] if (d["a"], d["b"]) == ("model", "gbm"))
        for m in ("auprc", "auroc"):
            assert diff[m]["ci"][0] > 0
    # a weaker but real signal still beats a coin flip
    diff = next(d for d in groups["training cells"]["differences"] if d["b"] == "weak")
    assert diff["auroc"]["ci"][0] > 0
    gap = report["result"]["gaps"][0]
    assert (gap["method"], gap["a"], gap["b"], gap["n_keys_a"], gap["n_keys_b"]) == (
        "model",
        "training cells",
        "held-out cells",
        2,
        1,
    )
    assert gap["auprc"]["ci"][0] <= gap["auprc"]["estimate"] <= gap["auprc"]["ci"][1]


def test_the_same_regions_are_drawn_for_every_key():
    # two keys with the very same bins and scores get the very same resamples
    rng = np.random.default_rng(12)
    g = sites_genome(60, rng)
    kb = KeyBins(g["labels"], g["region"], {"model": site_scores(g, 1.0, rng)})
    result = bootstrap_metrics(
        {"A/x": kb, "A/y": kb},
        groups={"x": ["A/x"], "y": ["A/y"]},
        gaps=[("model", "x", "y")],
        n_resamples=100,
        seed=3,
    )
    assert result["keys"]["A/x"]["methods"] == result["keys"]["A/y"]["methods"]
    assert all(result["gaps"][0][m]["ci"] == [0.0, 0.0] for m in METRICS)


def test_same_seed_same_intervals_other_seed_others():
    rng = np.random.default_rng(13)
    g = sites_genome(60, rng)
    keys = {"A/x": KeyBins(g["labels"], g["region"], {"model": site_scores(g, 1.0, rng)})}
    first = bootstrap_metrics(keys, n_resamples=150, seed=9)
    assert bootstrap_metrics(keys, n_resamples=150, seed=9) == first
    other = bootstrap_metrics(keys, n_resamples=150, seed=10)
    assert (
        other["keys"]["A/x"]["methods"]["model"]["auprc"]["ci"]
        != first["keys"]["A/x"]["methods"]["model"]["auprc"]["ci"]
    )


def test_intervals_narrow_as_sites_grow_in_number():
    rng = np.random.default_rng(14)
    widths = {}
    for n_sites in (50, 800):
        g = sites_genome(n_sites, rng)
        keys = {"A/x": KeyBins(g["labels"], g["region"], {"model": site_scores(g, 1.0, rng)})}
        entry = bootstrap_metrics(keys, n_resamples=200, seed=0)["keys"]["A/x"]["methods"]["model"]
        widths[n_sites] = {m: width(entry[m]) for m in ("auprc", "auroc")}
    for m in ("auprc", "auroc"):  # 16x the sites: about 4x narrower
        assert widths[800][m] < 0.5 * widths[50][m]


def test_resampling_bins_instead_of_sites_gives_far_too_narrow_intervals():
    # The 4 B bins of a site share its score (overlapping bins see the same
    # sequence and signal): 200 sites hold 800 B bins but only 200
    # independent draws.  A bin bootstrap (each bin its own region) counts
    # 800, so its interval is about half as wide as the site bootstrap's.
    rng = np.random.default_rng(15)
    g = sites_genome(200, rng, run=4, gap=30)
    scores = {"model": site_scores(g, 1.0, rng, within=0.05)}
    by_site = bootstrap_metrics({"A/x": KeyBins(g["labels"], g["region"], scores)}, n_resamples=300, seed=0)
    by_bin = bootstrap_metrics({"A/x": KeyBins(g["labels"], np.arange(g["n"]), scores)}, n_resamples=300, seed=0)
    site_entry = by_site["keys"]["A/x"]["methods"]["model"]
    bin_entry = by_bin["keys"]["A/x"]["methods"]["model"]
    for m in ("auprc", "auroc"):
        assert bin_entry[m]["estimate"] == site_entry[m]["estimate"]
        assert width(bin_entry[m]) < 0.7 * width(site_entry[m])


def test_a_key_with_few_sites_reports_the_resamples_it_could_use():
    # one bound site: ~1/e of the resamples leave it out and are undefined
    rng = np.random.default_rng(16)
    g = sites_genome(1, rng, gap=400)
    keys = {"A/x": KeyBins(g["labels"], g["region"], {"model": site_scores(g, 1.0, rng)})}
    result = bootstrap_metrics(keys, groups={"all": ["A/x"]}, n_resamples=200, seed=0)
    used = result["keys"]["A/x"]["resamples_used"]
    n_regions = len(np.unique(g["region"]))
    expected = 200 * (1 - (1 - 1 / n_regions) ** n_regions)
    assert abs(used - expected) < 4 * np.sqrt(200 * 0.25)
    assert result["groups"]["all"]["methods"]["model"]["resamples_used"] == used
    assert result["keys"]["A/x"]["methods"]["model"]["auprc"]["ci"] is not None


def test_bad_input_is_refused_with_the_key_named():
    labels = np.array(["U", "U", "A", "U"])
    with pytest.raises(ValueError, match="CTCF/HepG2.*B"):
        bootstrap_metrics({"CTCF/HepG2": KeyBins(labels, np.zeros(4, dtype=int), {"m": np.zeros(4)})})
    ok = KeyBins(np.array(["U", "B"]), np.array([0, 1]), {"m": np.array([0.0, 1.0])})
    with pytest.raises(ValueError, match="unknown keys"):
        bootstrap_metrics({"a": ok}, groups={"g": ["a", "b"]})
    with pytest.raises(ValueError, match="unknown group"):
        bootstrap_metrics({"a": ok}, groups={"g": ["a"]}, gaps=[("m", "g", "h")])
    with pytest.raises(ValueError, match="NaN"):
        bootstrap_metrics({"a": KeyBins(ok.labels, ok.region, {"m": np.array([0.0, np.nan])})})
    with pytest.raises(ValueError, match="region"):
        bootstrap_metrics({"a": KeyBins(ok.labels, np.array([0, -1]), ok.scores)})
