"""auROC, auPRC (Davis-Goadrich), recall and threshold at an FDR, each from precomputed :class:`~.steps.Steps`.

:mod:`tfbs.site_bootstrap` computes its resamples' metrics with these, so
a resample and the point estimate follow one rule.
"""

from __future__ import annotations

import numpy as np

from tfbs.formats.metrics.steps import Steps


def auroc_of_steps(st: Steps) -> float:
    """auROC from the steps (:func:`~tfbs.formats.metrics.auroc`'s rule), exact in integers."""
    # Trapezoid through (0,0) and every (FP/N, TP/P), as sklearn
    # roc_auc_score (auc(roc_curve)) and PRROC compute.roc; done in exact
    # integer arithmetic: sum dFP * (TP + TP_prev) / (2 P N).
    tp_prev = np.concatenate(([0], st.tp[:-1]))
    dfp = np.diff(st.fp, prepend=0)
    num = int(np.dot(dfp, st.tp + tp_prev))
    return num / (2 * st.n_pos * st.n_neg)


def auprc_of_steps(st: Steps) -> float:
    """Davis-Goadrich auPRC from the steps (:func:`~tfbs.formats.metrics.auprc_davis_goadrich`'s rule)."""
    # Port of PRROC compute.pr (v1.3-1.4, davis.and.goadrich branch) for
    # hard 0/1 labels.  Steps adding no true positive contribute
    # (tp-tp.prev)/r.fg * ... = 0 there, so only steps with positives are
    # evaluated (O(P) work after the O(U) difference).
    r_fg = float(st.n_pos)
    tp_i, fp_i = st.tp, st.fp
    d_i = np.diff(tp_i, prepend=0)

    # First step (prev point is 0/0): R replaces its NaN trapezoid by
    # (tp-tp.prev)/r.fg * tp/(tp+fp), i.e. flat at its own precision
    # (0 if it holds no positive).
    total = float((tp_i[0] / r_fg) * (tp_i[0] / (tp_i[0] + fp_i[0])))

    sel = np.flatnonzero(d_i[1:] > 0) + 1  # later steps that add positives
    if sel.size == 0:
        return total
    tp = tp_i[sel].astype(np.float64)
    fp = fp_i[sel].astype(np.float64)
    tp_prev = tp_i[sel - 1].astype(np.float64)
    fp_prev = fp_i[sel - 1].astype(np.float64)
    diff = tp - tp_prev
    prec = tp / (tp + fp)
    prec_prev = tp_prev / (tp_prev + fp_prev)
    # idxs <- which(tp-tp.prev>1 & tp/(tp+fp)!=tp.prev/(tp.prev+fp.prev))
    # (the first step is never in idxs: its comparison with NaN is NA.)
    interp = (diff > 1) & (prec != prec_prev)

    # Other steps: trapezoid (m[,2]-m[,1])/r.fg * (prec.prev + prec)/2.
    lin = ~interp
    total += float(np.sum((diff[lin] / r_fg) * (prec_prev[lin] + prec[lin]) / 2.0))

    if interp.any():
        # For each interpolated step, x = 0..diff true positives beyond
        # tp.prev with FP growing linearly, h2 = (fp-fp.prev)/diff:
        # prcs <- (tp.prev+x)/(tp.prev+x+fp.prev+h2*x);
        # area += sum(1/r.fg * (prcs[-1] + prcs[-length(prcs)]) / 2).
        counts = diff[interp].astype(np.int64)
        tpp = np.repeat(tp_prev[interp], counts)
        fpp = np.repeat(fp_prev[interp], counts)
        h2 = np.repeat((fp[interp] - fp_prev[interp]) / diff[interp], counts)
        starts = np.cumsum(counts) - counts
        x = (np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(starts, counts) + 1).astype(np.float64)
        p_hi = (tpp + x) / (tpp + x + fpp + h2 * x)
        xm = x - 1.0
        p_lo = (tpp + xm) / (tpp + xm + fpp + h2 * xm)
        total += float(np.sum(1.0 / r_fg * (p_hi + p_lo) / 2.0))
    return total


def _fdr_cutoff_index(st: Steps, fdr: float) -> int | None:
    """The step of :func:`~tfbs.formats.metrics.recall_at_fdr`: the lowest threshold whose FDR is within ``fdr``."""
    precision = st.tp / (st.tp + st.fp)
    ok = (1 - precision) <= check_fdr(fdr)
    return int(np.flatnonzero(ok)[-1]) if ok.any() else None


def threshold_at_fdr_of_steps(st: Steps, fdr: float) -> float | None:
    """The score at which :func:`~tfbs.formats.metrics.recall_at_fdr` calls bins bound (``score >= it``); None if no threshold qualifies."""
    i = _fdr_cutoff_index(st, fdr)
    return None if i is None else float(st.thresholds[i])


def recall_at_fdr_of_steps(st: Steps, fdr: float) -> float:
    """Recall at ``fdr`` from the steps (:func:`~tfbs.formats.metrics.recall_at_fdr`'s rule)."""
    fdr = check_fdr(fdr)
    # sklearn precision_recall_curve: precision = tps / (tps + fps) and
    # recall = tps / tps[-1] at each distinct threshold, ordered by
    # *increasing* threshold, with a final sentinel (precision 1, recall 0).
    # The DREAM script takes the first index in that order (lowest
    # threshold, highest recall) with 1 - precision <= cutoff.  Recall is
    # non-increasing along that order, so this is the largest recall over
    # thresholds meeting the cutoff, or 0.0 (the sentinel) if none does.
    # (Old sklearn versions truncated the curve at the first threshold
    # reaching full recall; the dropped points have recall 1 and lower
    # precision than the kept one, so the answer is unchanged.)
    precision = st.tp / (st.tp + st.fp)  # float64, same as sklearn
    ok = (1 - precision) <= fdr
    if not ok.any():
        return 0.0
    # Highest threshold index is 0 here; lowest threshold is the last.
    i = int(np.flatnonzero(ok)[-1])
    return float(st.tp[i] / st.tp[-1])


def check_fdr(fdr: float) -> float:
    """``fdr`` as a float in [0, 1]; a :class:`ValueError` naming it otherwise."""
    try:
        f = float(fdr)
    except (TypeError, ValueError):
        raise ValueError(f"fdr must be a number in [0, 1], got {fdr!r}") from None
    if not (0.0 <= f <= 1.0):
        raise ValueError(f"fdr must be a number in [0, 1], got {fdr!r}")
    return f
