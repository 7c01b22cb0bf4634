"""Benchmark: held-out auPRC of each training strategy on the same shards, beside the baselines.

Each strategy trains with the configuration's budget (epochs, early stopping)
in a fresh ``tfbs train`` subprocess with its own run directory, on the
shards of ``--config`` (``make demo`` builds them), then ``tfbs evaluate``
scores the test chromosomes:

- ``local``: one process (``train.strategy=local``);
- ``parameter_server``: TensorFlowOnSpark, 1 ps + 2 workers + the chief on
  ``local-cluster[4,1,1024]`` (the default);
- ``multi_worker_mirrored``: all-reduce, the chief + 2 workers on
  ``local-cluster[3,1,1024]``.

Prints a table of auPRC per TF/cell for every strategy beside the motif scan
and the generator's oracle, the means, how many TF/cells each strategy wins
over the motif scan, and the largest gap between two strategies' means.
Writes ``build/bench/model_quality.{json,png}``.

    .venv/bin/python bench/model_quality.py --config conf/demo.yaml
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TFBS = ROOT / ".venv" / "bin" / "tfbs"

#: strategy -> the ``--set`` overrides that select it.
STRATEGIES: dict[str, list[str]] = {
    "local": ["train.strategy=local"],
    "parameter_server": ["train.strategy=parameter_server", "train.master=local-cluster[4,1,1024]"],
    "multi_worker_mirrored": ["train.strategy=multi_worker_mirrored", "train.master=local-cluster[3,1,1024]"],
}


def run_stage(stage: str, args: argparse.Namespace, overrides: list[str], log_path: Path) -> float:
    """Run one ``tfbs`` stage as a subprocess; returns its wall time."""
    command = [str(TFBS), stage, "--config", args.config, *[f"--set={o}" for o in [*args.overrides, *overrides]]]
    started = time.monotonic()
    with open(log_path, "a") as log:
        subprocess.run(command, check=True, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    return time.monotonic() - started


def train_and_evaluate(strategy: str, args: argparse.Namespace, shards_uri: str, run_dir: Path) -> dict:
    """Train under ``strategy``, evaluate, and return the report with the times."""
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    overrides = [f"run_dir={run_dir}", f"shards_dir={shards_uri}", *STRATEGIES[strategy]]
    log_path = run_dir / "stages.log"
    train_seconds = run_stage("train", args, overrides, log_path)
    evaluate_seconds = run_stage("evaluate", args, overrides, log_path)
    # A fresh run directory holds one model version (tfbs.lineage).
    (model_dir,) = [path.parent for path in (run_dir / "models").glob("*/lineage.json")]
    report = json.loads((model_dir / "report" / "report.json").read_text())
    history = json.loads((model_dir / "history.json").read_text())
    return {"report": report, "history": history, "train_seconds": train_seconds, "evaluate_seconds": evaluate_seconds}


def table(runs: dict[str, dict]) -> tuple[str, dict]:
    """The auPRC table (text) and the per-key figures: strategies, then baselines."""
    reports = {name: run["report"] for name, run in runs.items()}
    first = next(iter(reports.values()))
    keys = sorted(first["results"])
    baselines = sorted({name for b in first["baselines"].values() for name in b})
    columns = {name: {k: r["results"][k]["auprc"] for k in keys} for name, r in reports.items()}
    columns.update(
        {
            name: {k: first["baselines"][k][name]["auprc"] for k in keys if name in first["baselines"][k]}
            for name in baselines
        }
    )
    width = max(len(k) for k in keys) + 2
    header = "TF/cell".ljust(width) + "".join(f"{name[:22]:>24}" for name in columns)
    lines = [header]
    for key in keys:
        lines.append(
            key.ljust(width) + "".join(f"{values.get(key, float('nan')):>24.3f}" for values in columns.values())
        )
    means = {name: statistics.fmean(values.values()) for name, values in columns.items()}
    lines.append("mean".ljust(width) + "".join(f"{means[name]:>24.3f}" for name in columns))
    return "\n".join(lines), {"auprc": columns, "mean_auprc": means}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="conf/demo.yaml")
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="passed to every stage")
    parser.add_argument("--only", action="append", choices=sorted(STRATEGIES), help="default: all three")
    parser.add_argument("--work-dir", default="build/bench/quality_runs", help="run directories (replaced)")
    parser.add_argument("--out", default="build/bench/model_quality.json")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from bench.report import write_summary
    from tf_models.curves_plot import plot_auprc_bars
    from tfbs import storage
    from tfbs.config import load_config

    config = load_config(args.config, args.overrides)
    if not storage.exists(f"{config.shards_uri}/manifest.json"):
        sys.exit(f"no shards at {config.shards_uri}: run `make demo` (or `tfbs preprocess`) first")
    work = Path(args.work_dir).resolve()
    runs = {}
    for strategy in args.only or list(STRATEGIES):
        runs[strategy] = train_and_evaluate(strategy, args, config.shards_uri, work / strategy)
        report = runs[strategy]["report"]
        print(
            f"{strategy}: mean auPRC {report['mean_auprc']:.3f}, {len(runs[strategy]['history'])} epochs, "
            f"train {runs[strategy]['train_seconds']:.0f} s",
            file=sys.stderr,
        )

    text, figures = table(runs)
    print(text, file=sys.stderr)
    means = {name: figures["mean_auprc"][name] for name in runs}
    summary = {
        "mean_auprc": figures["mean_auprc"],
        "largest_gap_between_strategies": max(
            (abs(means[a] - means[b]) for a, b in itertools.combinations(means, 2)), default=0.0
        ),
        "below_motif_scan": {name: run["report"]["below_motif_scan"] for name, run in runs.items()},
        "auprc": figures["auprc"],
        "epochs": {name: len(run["history"]) for name, run in runs.items()},
        "train_seconds": {name: run["train_seconds"] for name, run in runs.items()},
        "evaluate_seconds": {name: run["evaluate_seconds"] for name, run in runs.items()},
        "shards": config.shards_uri,
        "overrides": args.overrides,
    }
    write_summary(summary, args.out)
    plot_auprc_bars(
        {name.replace("_", " "): values for name, values in figures["auprc"].items()},
        str(Path(args.out).with_suffix(".png")),
        "Held-out auPRC by training strategy, beside the baselines",
    )


if __name__ == "__main__":
    main()
