"""Benchmark: the learned positional weighting over the whole window against the centre scan, quality and cost.

``motif_cnn.positional_bp: 10`` (the model's default) scans the whole
1000 bp window and learns a weight per 10 bp, starting near 1 over the
central ``dna_center_bp`` (300 bp) and near 0 beyond; ``positional_bp:
null`` scans those central 300 bp only. On the demo's data the weights stay
where they start, so both read the same region; the whole-window scan costs
about four times the compute in training, evaluation, prediction and
explanation. Each trains under the default strategy with training seeds 17,
18, 19 on the demo's data.

Writes ``bench/results/scan_region.json`` (every run with its training and
evaluation seconds; per variant the mean test auPRC's mean and range, per
TF the same). Runs already trained are read (:mod:`bench.quality_runs`).

    .venv/bin/python bench/scan_region.py      # 6 trainings, about 40 min on 2 cores
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.quality_runs import STRATEGIES, DataSet, Variant, quality_parser, run_all  # noqa: E402


def main() -> None:
    parser = quality_parser(__doc__.splitlines()[0], "scan_region.json")
    args = parser.parse_args()
    strategy = STRATEGIES["parameter_server"]
    key = "train.model.motif_cnn.positional_bp"
    variants = [
        Variant("whole_window_weighted", (*strategy, f"{key}=10"), folder="parameter_server"),
        Variant("centre_scan", (*strategy, f"{key}=null"), folder="parameter_server"),
    ]
    plan = [(DataSet("demo"), variant, seed) for seed in args.seeds for variant in variants]
    meta = {"benchmark": "scan_region", "config": args.config, "overrides": args.overrides}
    run_all(plan, args.work_dir.resolve(), args.config, args.overrides, args.out, meta, args.data)


if __name__ == "__main__":
    main()
