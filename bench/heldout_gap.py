"""Benchmark: is a held-out cell harder? The gradient-boosted baseline with each cell held out in turn.

On a data set generated with the configuration's profile, the shards are
built once with every cell a training cell. For each cell ``c``, the
frozen gradient-boosted baseline (:mod:`tf_models.boosted`) is fitted on
the training rows of the other cells only (held out: the protocol of
``data.heldout_cells``) and on every cell's rows (seen), and both score the
test chromosomes. Two gaps, each with a 95 % interval from the bootstrap
over test sites (:mod:`tfbs.site_bootstrap`):

* *same cell*: ``c``'s mean test auPRC over the TFs when its labels trained
  the baseline, minus when they did not (paired: the same rows);
* *across cells*: the training cells' mean test auPRC minus the held-out
  cell's, both from the held-out fit (what a report's two groups show; cells
  differ in how hard they are, so this gap mixes that in).

Writes ``bench/results/heldout_gap.json``. Runs in one process (pyarrow
and scikit-learn; the shards are built by ``tfbs generate`` and ``tfbs
preprocess`` subprocesses):

    .venv/bin/python bench/heldout_gap.py --data-seeds 7 8 9        # the tuning seeds
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.boosted_data import CHALLENGE_SIZES, boosted_features, load_rows  # noqa: E402
from bench.quality_runs import RESULTS, ROOT, DataSet, prepare, write_results  # noqa: E402


def gaps_of(config, n_resamples: int) -> dict:
    """Every cell held out in turn: the two gaps of the module docstring, per cell, with intervals."""
    from tf_models.boosted import fit_boosted, predict_boosted
    from tf_models.protocol import site_intervals

    train, test = load_rows(config, "train"), load_rows(config, "test")
    inputs, (x_train, x_test) = boosted_features(config, [train, test])
    seen = predict_boosted(fit_boosted(x_train, train["label_code"], train["tf"]), x_test, test["tf"])
    keys = np.char.add(np.char.add(test["tf"].astype(str), "/"), test["cell"].astype(str))
    result = {}
    for cell in sorted(set(train["cell"].tolist())):
        keep = train["cell"] != cell
        heldout = predict_boosted(
            fit_boosted(x_train[keep], train["label_code"][keep], train["tf"][keep]), x_test, test["tf"]
        )
        per_key = {
            key: {
                "chrom": test["chrom"][rows],
                "start": test["start"][rows],
                "label": test["label_code"][rows],
                "boosted": heldout[rows],
                "boosted_seen": seen[rows],
            }
            for key in np.unique(keys)
            for rows in [keys == key]
        }
        intervals = site_intervals(
            per_key, [cell], n_resamples, seed=0, pairs=[("boosted_seen", "boosted")], gaps=["boosted"]
        )
        held = intervals["groups"]["held-out cells"]
        result[cell] = {
            "heldout_auprc": held["methods"]["boosted"]["auprc"],
            "seen_auprc": held["methods"]["boosted_seen"]["auprc"],
            "same_cell_gap": held["differences"][0]["auprc"],
            "across_cells_gap": intervals["gaps"][0]["auprc"],
            "training_cells_auprc": intervals["groups"]["training cells"]["methods"]["boosted"]["auprc"],
            "per_tf": {
                key: {
                    "heldout": entry["methods"]["boosted"]["auprc"]["estimate"],
                    "seen": entry["methods"]["boosted_seen"]["auprc"]["estimate"],
                }
                for key, entry in intervals["keys"].items()
                if key.endswith(f"/{cell}")
            },
        }
        print(
            f"{cell} held out: {result[cell]['heldout_auprc']['estimate']:.3f} against "
            f"{result[cell]['seen_auprc']['estimate']:.3f} seen; same-cell gap {_text(result[cell]['same_cell_gap'])}, "
            f"across cells {_text(result[cell]['across_cells_gap'])}",
            file=sys.stderr,
        )
    return result


def _text(interval: dict) -> str:
    from tf_models.protocol import format_interval

    return format_interval(interval, signed=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="conf/demo.yaml")
    parser.add_argument("--data-seeds", type=int, nargs="+", required=True, help="generate.seed values")
    parser.add_argument("--challenge-size", action="store_true", help="the headline's test chromosomes")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--work-dir", type=Path, default=ROOT / "build" / "bench" / "heldout_gap")
    parser.add_argument("--out", type=Path, default=RESULTS / "heldout_gap.json")
    args = parser.parse_args()
    from tfbs.config import load_config

    base = ["data.heldout_cells=[]", *([CHALLENGE_SIZES] if args.challenge_size else [])]
    results = {}
    for seed in args.data_seeds:
        started = time.monotonic()
        data = DataSet(f"seed{seed}{'-challenge' if args.challenge_size else ''}", (f"generate.seed={seed}",))
        overrides = prepare(data, args.work_dir.resolve(), args.config, base)
        config = load_config(args.config, [*overrides, f"run_dir={args.work_dir.resolve() / data.name / 'run'}"])
        results[data.name] = gaps_of(config, args.resamples)
        print(f"{data.name}: {time.monotonic() - started:.0f} s", file=sys.stderr)
    write_results(args.out, {"benchmark": "heldout_gap", "config": args.config, "data_sets": results})


if __name__ == "__main__":
    main()
