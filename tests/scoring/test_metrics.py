"""Tests for tfbs.formats.metrics (ENCODE-DREAM official scoring)."""

from __future__ import annotations

import math
import random
from fractions import Fraction
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pytest
from sklearn.metrics import (
    average_precision_score,
    precision_recall_curve,
    roc_auc_score,
)
from sklearn.metrics import roc_curve as sk_roc_curve

from tfbs.formats.metrics import (
    auprc_davis_goadrich,
    auroc,
    filter_ambiguous,
    pr_curve,
    recall_at_fdr,
    roc_curve,
    score_predictions,
)

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------
class RRng:
    """R's default RNG (Mersenne-Twister + Inversion) to replay PRROC examples.

    ``set.seed(seed)`` scrambles the seed with 50 rounds of the LCG
    ``seed = 69069 * seed + 1`` and then fills the 625-word MT state with
    further LCG outputs (word 0 is the position, set to 624); ``unif_rand``
    is a 32-bit MT19937 output times 2.328306437080797e-10 and ``norm_rand``
    (Inversion) is ``qnorm((floor(2^27 u1) + u2) / 2^27)``.
    """

    def __init__(self, seed: int) -> None:
        s = seed & 0xFFFFFFFF
        for _ in range(50):
            s = (69069 * s + 1) & 0xFFFFFFFF
        words = []
        for _ in range(625):
            s = (69069 * s + 1) & 0xFFFFFFFF
            words.append(s)
        self._mt = random.Random()
        self._mt.setstate((3, tuple(words[1:]) + (624,), None))

    def unif(self) -> float:
        return self._mt.getrandbits(32) * 2.3283064365386963e-10

    def runif(self, n: int, lo: float = 0.0, hi: float = 1.0) -> np.ndarray:
        return np.array([lo + (hi - lo) * self.unif() for _ in range(n)])

    def rnorm(self, n: int, mean: float = 0.0) -> np.ndarray:
        big = 134217728
        out = []
        for _ in range(n):
            u = int(big * self.unif()) + self.unif()
            out.append(mean + NormalDist().inv_cdf(u / big))
        return np.array(out)


def test_r_rng_replica_matches_known_r_output():
    # set.seed(1); runif(3) -> 0.2655087 0.3721239 0.5728534 in R
    r = RRng(1)
    assert np.allclose(r.runif(3), [0.2655087, 0.3721239, 0.5728534], atol=5e-8)


def dg_reference_loop(y, s) -> float:
    """Slow reference: Davis-Goadrich area walking thresholds upwards.

    Independent re-statement of the PRROC 1.1 loop (``compute.pr``,
    weighted interface with 0/1 weights): start at the lowest threshold
    (recall 1), remove one tie group at a time; whenever a group holds
    positives, step down one true positive at a time with FPs falling
    linearly and add trapezoids; the last (top) group is flat.
    """
    y = [int(v) for v in y]
    s = [float(v) for v in s]
    pos = sum(y)
    neg = len(y) - pos
    groups = {}
    for yi, si in zip(y, s):
        g = groups.setdefault(si, [0, 0])
        g[0 if yi == 1 else 1] += 1
    keys = sorted(groups)
    fn = tn = 0
    rec, prec = 1.0, pos / (pos + neg)
    area = 0.0
    for gi, k in enumerate(keys):
        dp, dn = groups[k]
        fn_old, tn_old = fn, tn
        fn += dp
        tn += dn
        last = gi == len(keys) - 1
        if dp == 0:
            if not last:
                prec = (pos - fn) / (pos - fn + neg - tn)
            continue
        if last:
            area += prec * rec
            break
        slope = (tn - tn_old) / (fn - fn_old)
        h1, h2 = rec, prec
        for c in range(fn_old + 1, fn + 1):
            tp_c = pos - c
            fp_c = neg - (tn_old + slope * (c - fn_old))
            r1, p1 = tp_c / pos, tp_c / (tp_c + fp_c)
            area += (h2 + p1) / 2 * (h1 - r1)
            h1, h2 = r1, p1
        rec, prec = (pos - fn) / pos, (pos - fn) / (pos - fn + neg - tn)
    return area


def dream_recall_at_fdr(y_true, y_score, fdr_cutoff):
    """The DREAM score.py recall_at_fdr, verbatim logic."""
    precision, recall, _ = precision_recall_curve(y_true, y_score)
    fdr = 1 - precision
    cutoff_index = next(i for i, x in enumerate(fdr) if x <= fdr_cutoff)
    return recall[cutoff_index]


# ---------------------------------------------------------------------------
# hand-computed small examples
# ---------------------------------------------------------------------------
def test_no_ties_hand_example_and_difference_from_sklearn_ap():
    # scores 4>3>2>1 with labels 1,0,0,1; P=2.
    # PR points (recall, precision): (.5,1) (.5,.5) (.5,1/3) (1,.5)
    # DG: first step flat .5*1; then +.5*(1/3+1/2)/2 = 5/24 -> 17/24.
    # sklearn AP: .5*1 + .5*.5 = .75 (right-endpoint steps).
    y = np.array([1, 0, 0, 1])
    s = np.array([4.0, 3.0, 2.0, 1.0])
    dg = auprc_davis_goadrich(y, s)
    ap = average_precision_score(y, s)
    assert dg == pytest.approx(17 / 24, abs=1e-15)
    assert ap == pytest.approx(0.75, abs=1e-15)
    assert abs(dg - ap) > 0.04
    assert auroc(y, s) == pytest.approx(0.5, abs=1e-15)


def test_ties_use_dg_interpolation_inside_one_threshold_step():
    # scores 3 | 2 2 2 2 | 1 ; labels 1 | 1 1 0 0 | 0 ; P=3, N=3.
    # Steps (tp, fp): (1,0) (3,2) (3,3).
    # Step 1 flat: 1/3 * 1.
    # Step 2 adds 2 TP and 2 FP in one tie group -> DG: precision at
    # x=0,1,2 TPs is 1, 2/3, 3/5; area = 1/3*[(1+2/3)/2 + (2/3+3/5)/2]
    # = 22/45.  Total 37/45.  (A straight trapezoid would give 13/15;
    # sklearn AP gives 11/15.)
    y = np.array([1, 1, 1, 0, 0, 0])
    s = np.array([3, 2, 2, 2, 2, 1])
    dg = auprc_davis_goadrich(y, s)
    assert dg == pytest.approx(float(Fraction(37, 45)), abs=1e-15)
    assert dg != pytest.approx(13 / 15, abs=1e-6)
    assert average_precision_score(y, s) == pytest.approx(11 / 15)
    # Order of the bins inside the tie group must not matter.
    perm = np.array([5, 3, 1, 0, 4, 2])
    assert auprc_davis_goadrich(y[perm], s[perm]) == pytest.approx(dg, abs=1e-15)
    # auROC: pos@3 beats 3 negs; each pos@2 beats neg@1 and ties 2 negs.
    assert auroc(y, s) == pytest.approx(7 / 9, abs=1e-15)


def test_perfect_separation():
    # PRROC test "AUC-PR - perfect, hard-labeled": auc.davis.goadrich == 1
    rng = np.random.default_rng(0)
    s = np.r_[rng.uniform(size=100), -rng.uniform(size=100)]
    y = np.r_[np.ones(100, int), np.zeros(100, int)]
    assert auprc_davis_goadrich(y, s) == pytest.approx(1.0, abs=1e-12)
    assert auroc(y, s) == 1.0
    assert recall_at_fdr(y, s, 0.1) == 1.0
    assert recall_at_fdr(y, s, 0.0) == 1.0


def test_all_same_scores():
    # One threshold step: flat precision P/(P+N) over recall [0, 1].
    # PRROC test "AUC-PR - one score value": rep(1,500), labels 0/1
    # alternating -> 0.5.
    y = np.tile([0, 1], 250)
    s = np.ones(500)
    assert auprc_davis_goadrich(y, s) == pytest.approx(0.5, abs=1e-15)
    assert auroc(y, s) == pytest.approx(0.5, abs=1e-15)
    # 1 - 0.5 <= 0.5 -> all recalled; no threshold reaches 10% FDR -> 0.
    assert recall_at_fdr(y, s, 0.5) == 1.0
    assert recall_at_fdr(y, s, 0.1) == 0.0
    y2 = np.array([1, 0, 0, 0])
    assert auprc_davis_goadrich(y2, np.full(4, 0.3)) == pytest.approx(0.25)


def test_worst_ranking_hand_formula():
    # All negatives above all positives, distinct scores (PRROC test
    # "AUC-PR - worst, hard-labeled"): every positive is its own step with
    # precision k/(k+n), so DG = sum_k 1/n * ((k-1)/(k-1+n) + k/(k+n))/2.
    n = 1000
    rng = np.random.default_rng(1)
    s = np.r_[-rng.uniform(size=n), rng.uniform(size=n)]
    y = np.r_[np.ones(n, int), np.zeros(n, int)]
    expected = sum(((k - 1) / (k - 1 + n) + k / (k + n)) / 2 / n for k in range(1, n + 1))
    assert auprc_davis_goadrich(y, s) == pytest.approx(expected, abs=1e-12)
    # close to, but not equal to, PRROC's integral value 1 - ln 2
    assert abs(expected - (1 - math.log(2))) < 1e-3
    assert auroc(y, s) == 0.0


# ---------------------------------------------------------------------------
# published PRROC reference values
# ---------------------------------------------------------------------------
def test_prroc_published_value_auc_jar():
    # PRROC tests/testthat/test-PR.R, "AUC-PR - value for random data":
    # set.seed(101); scores0 <- runif(100, 0.3, 1.0);
    # scores1 <- runif(100, 0.0, 0.6);
    # pr.curve(scores0, scores1)$auc.davis.goadrich == 0.9018680216532841
    # ("value from Davis & Goadrich (auc.jar)").
    r = RRng(101)
    s0 = r.runif(100, 0.3, 1.0)
    s1 = r.runif(100, 0.0, 0.6)
    y = np.r_[np.ones(100, int), np.zeros(100, int)]
    s = np.r_[s0, s1]
    assert auprc_davis_goadrich(y, s) == pytest.approx(0.9018680216532841, abs=1e-12)


def test_prroc_vignette_values():
    # PRROC vignette (inst/doc/PRROC.pdf): set.seed(127);
    # fg <- rnorm(300); bg <- rnorm(500, -2)
    # roc.curve -> 0.9162667; pr.curve -> Davis & Goadrich 0.8777661
    # (Integral 0.8777665); "Curve for scores from -4.935784 to 2.888259".
    r = RRng(127)
    fg = r.rnorm(300)
    bg = r.rnorm(500, -2.0)
    s = np.r_[fg, bg]
    y = np.r_[np.ones(300, int), np.zeros(500, int)]
    assert s.min() == pytest.approx(-4.935784, abs=5e-7)
    assert s.max() == pytest.approx(2.888259, abs=5e-7)
    assert auroc(y, s) == pytest.approx(0.9162667, abs=5e-8)
    assert auprc_davis_goadrich(y, s) == pytest.approx(0.8777661, abs=5e-8)


# ---------------------------------------------------------------------------
# agreement with references on random data
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_auroc_matches_sklearn(seed):
    rng = np.random.default_rng(seed)
    n = 5000
    y = (rng.uniform(size=n) < 0.2).astype(int)
    s = rng.normal(size=n) + y
    if seed % 2:  # heavy ties
        s = np.round(s, 1)
    assert auroc(y, s) == pytest.approx(roc_auc_score(y, s), abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_roc_curve_matches_sklearn(seed):
    rng = np.random.default_rng(seed)
    y = (rng.uniform(size=500) < 0.3).astype(int)
    s = np.round(rng.normal(size=500) + y, 1)
    fpr, tpr, thr = roc_curve(y, s)
    sfpr, stpr, sthr = sk_roc_curve(y, s, drop_intermediate=False)
    np.testing.assert_allclose(fpr, sfpr)
    np.testing.assert_allclose(tpr, stpr)
    np.testing.assert_allclose(thr[1:], sthr[1:])
    assert thr[0] == np.inf


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_dg_matches_slow_loop_reference_with_ties(seed):
    rng = np.random.default_rng(seed)
    n = 400
    y = (rng.uniform(size=n) < 0.25).astype(int)
    s = np.round(rng.normal(size=n) + 1.5 * y, 1)  # many tie groups
    assert auprc_davis_goadrich(y, s) == pytest.approx(dg_reference_loop(y, s), abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("fdr", [0.05, 0.1, 0.25, 0.5, 0.9])
def test_recall_at_fdr_matches_dream_script(seed, fdr):
    rng = np.random.default_rng(seed)
    n = 3000
    y = (rng.uniform(size=n) < 0.1).astype(int)
    s = rng.normal(size=n) + 2.0 * y
    if seed % 2:
        s = np.round(s, 1)
    assert recall_at_fdr(y, s, fdr) == pytest.approx(dream_recall_at_fdr(y, s, fdr), abs=1e-15)


def test_recall_at_fdr_worked_example():
    # scores 3 | 2 2 2 2 | 1 ; labels 1 | 1 1 0 0 | 0 ; P=3.
    # sklearn order (threshold low -> high):
    #   s>=1: tp3 fp3 precision .5  recall 1
    #   s>=2: tp3 fp2 precision .6  recall 1
    #   s>=3: tp1 fp0 precision 1   recall 1/3
    #   sentinel precision 1, recall 0
    # first point with 1-precision <= cutoff in that order:
    y = np.array([1, 1, 1, 0, 0, 0])
    s = np.array([3, 2, 2, 2, 2, 1])
    assert recall_at_fdr(y, s, 0.5) == 1.0  # at s>=1 (FDR exactly .5)
    assert recall_at_fdr(y, s, 0.45) == 1.0  # at s>=2
    assert recall_at_fdr(y, s, 0.1) == pytest.approx(1 / 3)
    assert recall_at_fdr(y, s, 0.0) == pytest.approx(1 / 3)
    # Walking from the top score instead would stop at s>=3 (recall 1/3)
    # for every cutoff; the script's answer at 50% FDR is 1.0.
    assert dream_recall_at_fdr(y, s, 0.5) == 1.0


def test_recall_at_fdr_zero_when_unreachable():
    # The top-scored bin is negative and every threshold has FDR > 10%.
    y = np.array([0, 1, 0, 1, 0])
    s = np.array([5, 4, 3, 2, 1])
    assert recall_at_fdr(y, s, 0.1) == 0.0
    assert dream_recall_at_fdr(y, s, 0.1) == 0.0
    # s>=4: precision .5 -> recall .5 ; s>=2: precision 2/4 -> recall 1
    assert recall_at_fdr(y, s, 0.5) == 1.0


def test_pr_curve_points():
    y = np.array([1, 1, 1, 0, 0, 0])
    s = np.array([3, 2, 2, 2, 2, 1])
    precision, recall, thr = pr_curve(y, s)
    np.testing.assert_allclose(precision, [1.0, 0.6, 0.5])
    np.testing.assert_allclose(recall, [1 / 3, 1.0, 1.0])
    np.testing.assert_array_equal(thr, [3, 2, 1])


# ---------------------------------------------------------------------------
# ambiguous bins, score_predictions, errors
# ---------------------------------------------------------------------------
def test_filter_ambiguous_strings_and_ints():
    labels = np.array(["U", "B", "A", "B", "U", "A"])
    scores = np.array([0.1, 0.9, 0.99, 0.8, 0.2, 0.5])
    y, s = filter_ambiguous(labels, scores)
    np.testing.assert_array_equal(y, [0, 1, 1, 0])
    np.testing.assert_array_equal(s, [0.1, 0.9, 0.8, 0.2])
    y2, s2 = filter_ambiguous(np.array([0, 1, -1, 1, 0, -1]), scores)
    np.testing.assert_array_equal(y2, y)
    np.testing.assert_array_equal(s2, s)
    y3, _ = filter_ambiguous([b"U", b"B", b"A", b"B", b"U", b"A"], scores)
    np.testing.assert_array_equal(y3, y)
    y4, _ = filter_ambiguous(np.array(["U", 1, "A", "B", 0, -1], dtype=object), scores)
    np.testing.assert_array_equal(y4, y)


@pytest.mark.parametrize(
    "bad_labels, bad",
    [
        (["U", "B", "X"], "'X'"),
        (["U", "B", "b"], "'b'"),
        ([0, 1, 2], "2"),
        ([0.0, 1.0, 0.5], "0.5"),
    ],
)
def test_filter_ambiguous_unknown_label(bad_labels, bad):
    with pytest.raises(ValueError, match=bad):
        filter_ambiguous(np.array(bad_labels), np.zeros(3))


def test_filter_ambiguous_length_mismatch():
    with pytest.raises(ValueError, match="length"):
        filter_ambiguous(np.array(["U", "B"]), np.zeros(3))


def test_ambiguous_bins_never_count():
    rng = np.random.default_rng(5)
    n = 2000
    codes = rng.choice([0, 1, -1], size=n, p=[0.8, 0.1, 0.1])
    labels = np.array(["U", "B", "A"])[np.where(codes == -1, 2, codes)]
    s = rng.normal(size=n) + (codes != 0) * 2.0  # A bins score high
    res = score_predictions(labels, s)
    keep = codes >= 0
    yk, sk = codes[keep], s[keep]
    assert res["n_pos"] == int((codes == 1).sum())
    assert res["n_neg"] == int((codes == 0).sum())
    assert res["n_ambiguous"] == int((codes == -1).sum())
    assert res["auroc"] == pytest.approx(roc_auc_score(yk, sk), abs=1e-12)
    assert res["auprc"] == pytest.approx(auprc_davis_goadrich(yk, sk), abs=1e-15)
    assert res["recall_at_fdr_10"] == pytest.approx(dream_recall_at_fdr(yk, sk, 0.10))
    assert res["recall_at_fdr_50"] == pytest.approx(dream_recall_at_fdr(yk, sk, 0.50))
    # Treating A as B would change the answer (guards against A leaking in).
    y_wrong = (codes != 0).astype(int)
    assert res["auprc"] != pytest.approx(auprc_davis_goadrich(y_wrong, s), abs=1e-6)
    assert set(res) == {
        "auroc",
        "auprc",
        "recall_at_fdr_10",
        "recall_at_fdr_50",
        "threshold_at_fdr_10",
        "n_pos",
        "n_neg",
        "n_ambiguous",
    }
    assert isinstance(res["n_pos"], int) and isinstance(res["auprc"], float)
    # The threshold is where that recall is reached: bins scoring at least it.
    called = sk >= res["threshold_at_fdr_10"]
    assert (yk[called] == 1).sum() / (yk == 1).sum() == pytest.approx(res["recall_at_fdr_10"])
    false_discovery_rate = 1 - yk[called].mean()
    assert false_discovery_rate <= 0.10


def test_no_positives_or_negatives_raise():
    with pytest.raises(ValueError, match="positive"):
        score_predictions(np.array(["U", "U", "A"]), np.array([0.1, 0.2, 0.3]))
    with pytest.raises(ValueError, match="negative"):
        score_predictions(np.array(["B", "A", "B"]), np.array([0.1, 0.2, 0.3]))
    with pytest.raises(ValueError, match="positive"):
        score_predictions(np.array(["A", "A"]), np.array([0.1, 0.2]))
    for fn in (auroc, auprc_davis_goadrich, pr_curve, roc_curve):
        with pytest.raises(ValueError):
            fn(np.zeros(4, int), np.arange(4.0))
        with pytest.raises(ValueError):
            fn(np.ones(4, int), np.arange(4.0))
    with pytest.raises(ValueError):
        recall_at_fdr(np.ones(4, int), np.arange(4.0), 0.1)


def test_other_input_errors():
    y = np.array([0, 1, 0, 1])
    with pytest.raises(ValueError, match="NaN"):
        auroc(y, np.array([0.1, np.nan, 0.3, 0.4]))
    with pytest.raises(ValueError, match="filter_ambiguous"):
        auprc_davis_goadrich(np.array([0, 1, -1, 1]), np.arange(4.0))
    with pytest.raises(ValueError, match="length"):
        auroc(y, np.arange(3.0))
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="fdr"):
            recall_at_fdr(y, np.arange(4.0), bad)


def test_a_genome_s_worth_of_scores_agrees_with_scikit_learn():
    """2 M float32 scores (ties among them): the areas as scikit-learn computes them.

    auROC exactly; auPRC, interpolated after Davis and Goadrich where
    scikit-learn steps, within 1e-4.
    """
    from sklearn.metrics import average_precision_score, roc_auc_score

    rng = np.random.default_rng(7)
    n = 2_000_000
    y = (rng.uniform(size=n) < 0.02).astype(np.int8)
    s = (rng.normal(size=n) + 2.5 * y).astype(np.float32)
    res = score_predictions(y, s)
    assert res["auroc"] == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    assert res["auprc"] == pytest.approx(average_precision_score(y, s), abs=1e-4)
    assert 0.5 < res["auprc"] < 0.7  # a separable but imperfect score: neither area is degenerate


def test_plot_curves_writes_png(tmp_path):
    from tf_models.curves_plot import plot_curves

    rng = np.random.default_rng(3)
    y = (rng.uniform(size=1000) < 0.2).astype(int)
    s = rng.normal(size=1000) + y
    precision, recall, _ = pr_curve(y, s)
    fpr, tpr, _ = roc_curve(y, s)
    out = tmp_path / "sub" / "curves.png"
    plot_curves(
        {
            "CTCF/PC-3": {
                "precision": precision,
                "recall": recall,
                "fpr": fpr,
                "tpr": tpr,
                "auprc": auprc_davis_goadrich(y, s),
                "auroc": auroc(y, s),
            },
            "EGR1/liver": {"labels": np.where(y == 1, "B", "U"), "scores": s},
        },
        str(out),
    )
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError):
        plot_curves({}, str(out))
