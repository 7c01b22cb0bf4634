"""Benchmark: held-out auPRC of each training strategy, three training seeds each, beside the baselines.

On the configuration's data set (the demo's: generator seed 7), each
strategy trains with the configuration's budget (epochs, early stopping)
once per training seed (``train.seed`` 17, 18, 19), and ``tfbs evaluate``
scores the test chromosomes:

- ``local``: one process (``train.placement.strategy=local``);
- ``parameter_server``: TensorFlowOnSpark, 1 ps + 2 workers + the chief on
  ``local-cluster[4,1,1024]`` (the default);
- ``multi_worker_mirrored``: all-reduce, the chief + 2 workers on
  ``local-cluster[3,1,1024]``.

Writes ``bench/results/model_quality.json``: every run's figures per
TF/cell and, per strategy, the mean test auPRC's mean and range over the
seeds, per TF the same, and the baselines (motif scan, coarse-PWM
reference, oracle). Runs already trained and evaluated under
``--work-dir`` are read, not trained again (:mod:`bench.quality_runs`).

    .venv/bin/python bench/model_quality.py            # all three strategies, about 1 h on 2 cores
    .venv/bin/python bench/model_quality.py --only local
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.quality_runs import STRATEGIES, DataSet, Variant, quality_parser, run_all  # noqa: E402


def main() -> None:
    parser = quality_parser(__doc__.splitlines()[0], "model_quality.json")
    parser.add_argument("--only", action="append", choices=sorted(STRATEGIES), help="default: all three")
    args = parser.parse_args()
    demo = DataSet("demo")
    plan = [
        (demo, Variant(strategy, STRATEGIES[strategy]), seed)
        for strategy in args.only or list(STRATEGIES)
        for seed in args.seeds
    ]
    meta = {"benchmark": "model_quality", "config": args.config, "overrides": args.overrides}
    run_all(plan, args.work_dir.resolve(), args.config, args.overrides, args.out, meta, args.data)


if __name__ == "__main__":
    main()
