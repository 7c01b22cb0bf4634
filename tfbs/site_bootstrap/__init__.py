"""95 % intervals of the ENCODE-DREAM metrics from a bootstrap over test sites.

Test bins are 200 bp at a 50 bp step, so one bound site is a run of ~3-5
consecutive ``B`` (or ``A``) bins whose labels and scores move together.
Resampling *bins* treats those as independent draws and gives intervals far
too narrow; this module resamples genomic *regions* instead:

1. :func:`site_regions` cuts each test chromosome into regions of at least
   ``block_bp`` that never split a run of busy (``B`` or ``A`` in any key)
   bins.  The regions are shared by every TF/cell ("key") and method, so a
   resample picks the same genome pieces for all of them.
2. :func:`resample_regions` draws, per resample, how many times each region
   is taken (regions drawn with replacement, as many draws as regions); a
   bin's weight is its region's multiplicity.
3. :func:`weighted_metrics` evaluates auPRC (Davis-Goadrich, PRROC
   ``auc.davis.goadrich``), auROC and recall at 10 % FDR on the weighted
   bins of many resamples at once.  With integer weights each value equals
   the :mod:`tfbs.formats.metrics` value on the data with every row repeated its
   weight times (auROC and recall bit for bit, auPRC up to the order of a
   floating-point sum).  Recall at 50 % FDR is not bootstrapped.
4. :func:`bootstrap_metrics` scores several keys and methods on the same
   resamples and summarises them as a JSON-ready dict (layout below).

A bins are removed before any metric (the official rule) but still make
their region busy.  Intervals are percentile intervals ``[2.5, 97.5]``.

JSON layout of :func:`bootstrap_metrics`
----------------------------------------
An *interval* is ``{"estimate": float, "ci": [lo, hi]}``: ``estimate`` is
the value on all bins (for a key, identical to
:func:`tfbs.formats.metrics.score_predictions`), ``ci`` the 2.5 and 97.5
percentiles over the resamples where the value is defined (``null`` if it
is defined in none).  A resample is undefined for a key when it draws no
``B`` or no ``U`` bin of that key; a group mean or difference is undefined
when any of its keys is.  ``METRICS`` names the metric fields::

    {
      "bootstrap": {"n_resamples": 1000, "seed": 0, "percentiles": [2.5, 97.5],
                    "n_regions": 812,                # regions of the whole genome
                    "metrics": ["auprc", "auroc", "recall_at_fdr_10"]},
      "keys": {
        "CTCF/HepG2": {
          "n_bins": 15000,               # U and B bins scored
          "n_regions": 800,              # regions holding a U or B bin of this key
          "n_positive_sites": 120,       # regions holding at least one B bin
          "resamples_used": 1000,        # resamples with >= 1 B and >= 1 U bin
          "methods": {
            "model": {"auprc": interval, "auroc": interval, "recall_at_fdr_10": interval},
            "gbm": {...}                 # only the methods this key was scored with
          }
        }
      },
      "groups": {
        "training cells": {
          "keys": ["CTCF/HepG2", ...],
          "methods": {                   # mean over the group's keys that have the method
            "model": {"n_keys": 3, "resamples_used": 1000,
                      "auprc": interval, "auroc": interval, "recall_at_fdr_10": interval}
          },
          "differences": [               # paired: over the keys having both a and b
            {"a": "model", "b": "gbm", "n_keys": 3, "resamples_used": 1000,
             "auprc": interval, ...}     # mean(a) - mean(b)
          ]
        }
      },
      "gaps": [                          # mean over group a minus mean over group b
        {"method": "gbm", "a": "training cells", "b": "held-out cells",
         "n_keys_a": 3, "n_keys_b": 1, "resamples_used": 1000, "auprc": interval, ...}
      ]
    }

A method pair (a gap) without a key having both methods (the method in both
groups) has no entry.  Every resample draws the region multiplicities once
and applies them to all keys and methods, so differences and gaps are
paired.
"""

from tfbs.site_bootstrap.intervals import PERCENTILES, KeyBins, bootstrap_metrics
from tfbs.site_bootstrap.regions import busy_bins, resample_regions, site_regions
from tfbs.site_bootstrap.weighted import METRICS, weighted_metrics

__all__ = [
    "METRICS",
    "PERCENTILES",
    "KeyBins",
    "busy_bins",
    "site_regions",
    "resample_regions",
    "weighted_metrics",
    "bootstrap_metrics",
]
