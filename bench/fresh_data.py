"""Benchmark: the default pipeline on the demo's data and on generator seeds never used in development.

The demo's data is generator seed 7; seed 8 was the tuning set. Seeds 101
and 202 make data sets of the same sizes that no design choice was checked
against. On each, the default configuration (strategy, model, budget)
trains once per training seed (17, 18, 19) and ``tfbs evaluate`` scores
the test chromosomes beside the motif scan, the coarse-PWM reference and
the oracle.

Writes ``bench/results/fresh_data.json``: every run's figures per TF/cell
and, per data set, the mean test auPRC's mean and range over the seeds and
per TF the same beside the baselines. Runs already trained in the work
folder are read, not trained again (:mod:`bench.quality_runs`), whatever
code trained them: after a change to training that the version leaves out
(how the exported checkpoint is chosen, say), give a new ``--work-dir``.
The committed figures were trained in one of their own.

    .venv/bin/python bench/fresh_data.py --work-dir build/bench/quality_current   # 9 trainings, about 20 min
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.quality_runs import (  # noqa: E402
    FRESH_DATA_SEEDS,
    STRATEGIES,
    DataSet,
    Variant,
    quality_parser,
    run_all,
)


def main() -> None:
    parser = quality_parser(__doc__.splitlines()[0], "fresh_data.json")
    parser.add_argument(
        "--data-seeds", type=int, nargs="+", default=list(FRESH_DATA_SEEDS), help="generate.seed values"
    )
    args = parser.parse_args()
    default = Variant("parameter_server", STRATEGIES["parameter_server"])
    data_sets = [DataSet("demo"), *(DataSet(f"seed{seed}", (f"generate.seed={seed}",)) for seed in args.data_seeds)]
    plan = [(data, default, seed) for data in data_sets for seed in args.seeds]
    meta = {"benchmark": "fresh_data", "config": args.config, "overrides": args.overrides}
    run_all(plan, args.work_dir.resolve(), args.config, args.overrides, args.out, meta, args.data)


if __name__ == "__main__":
    main()
