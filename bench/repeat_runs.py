"""Benchmark: the same command and seed, run again: how far apart are two `make demo`s?

``make demo`` trains the demo's configuration with training seed 17. Here
the demo's data set is built once and that training (and its evaluation)
runs five times more, each in a run folder of its own, with the same seed:
under the parameter-server strategy (the demo's) the workers' updates
reach the ps in whatever order the machine's scheduling gives, so the runs
differ; in one process (``strategy: local``) every op is seeded and the
figures repeat to the digit. The spread of these runs is the noise a reader
should allow around any one figure, apart from the spread over training
seeds and the intervals over test sites.

Writes ``bench/results/repeat_runs.json``:

    .venv/bin/python bench/repeat_runs.py            # 5 ps runs and 3 in one process, about 25 min on 2 cores
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.quality_runs import ROOT, STRATEGIES, DataSet, Variant, quality_parser, run_all, write_results  # noqa: E402


def group_spread(records: list[dict], work: Path) -> dict:
    """Per strategy and group of cells: the model's mean test auPRC of each run, and their spread."""
    spread: dict[str, dict] = {}
    for found in records:
        strategy = found["variant"].rsplit("-", 1)[0]
        report = json.loads(
            (
                work / found["data"] / found["variant"] / "models" / found["version"] / "report" / "report.json"
            ).read_text()
        )
        for group, figures in report["groups"].items():
            if group in ("training cells", "held-out cells"):
                spread.setdefault(strategy, {}).setdefault(group, []).append(figures["auprc"]["model"]["estimate"])
    return {
        strategy: {
            group: {"runs": values, "mean": statistics.fmean(values), "min": min(values), "max": max(values)}
            for group, values in groups.items()
        }
        for strategy, groups in spread.items()
    }


def main() -> None:
    parser = quality_parser(__doc__.splitlines()[0], "repeat_runs.json")
    parser.add_argument("--ps-runs", type=int, default=5)
    parser.add_argument("--local-runs", type=int, default=3)
    parser.set_defaults(work_dir=ROOT / "build" / "bench" / "repeat_runs", seeds=[17])
    args = parser.parse_args()
    work = args.work_dir.resolve()
    seed = args.seeds[0]
    variants = [
        Variant(f"parameter_server-{i}", STRATEGIES["parameter_server"]) for i in range(1, args.ps_runs + 1)
    ] + [Variant(f"local-{i}", STRATEGIES["local"]) for i in range(1, args.local_runs + 1)]
    plan = [(DataSet("demo"), variant, seed) for variant in variants]
    meta = {"benchmark": "repeat_runs", "config": args.config, "overrides": args.overrides, "train_seed": seed}
    records = run_all(plan, work, args.config, args.overrides, args.out, meta)
    payload = json.loads(args.out.read_text())
    payload["group_spread"] = group_spread(records, work)
    write_results(args.out, payload)


if __name__ == "__main__":
    main()
