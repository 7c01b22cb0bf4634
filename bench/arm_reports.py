"""Benchmark table: candidate arms' evaluation reports gathered, each arm's trainings side by side.

A candidate of docs/model-quality.md is a configuration trained with
several training seeds on one set of shards, beside the default trained
the same day (the parameter-server training does not repeat across days,
so only arms trained side by side are compared). Each training's
``tfbs evaluate`` writes ``<run_dir>/models/<version>/report/report.json``;
this reads the reports of every arm and writes one JSON (per arm, per
training seed: each group's auPRC with its site-bootstrap interval, for the
model, the boosted baseline and the joined scorer; each TF/cell's recall at
10 % FDR), then prints the Markdown table the docs use: per group, the
model's mean over the trainings, in brackets the trainings' range and the
lowest to highest bound of their intervals, and the boosted baseline.

    .venv/bin/python bench/arm_reports.py --name steps6_x10 \\
        --arm default='build/bench/paralogue/7x10/run-default-*' \\
        --arm steps6='build/bench/paralogue/7x10/run-steps6-*'
"""

from __future__ import annotations

import argparse
import glob
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.quality_runs import RESULTS, write_results  # noqa: E402
from tf_models.protocol import HELD_OUT, TRAINING  # noqa: E402

#: The scorers each group keeps: the network, the baseline it is judged against, the two joined.
SCORERS = ("model", "boosted", "model_and_boosted")


def training_reports(pattern: str) -> dict[str, dict]:
    """``{training seed: what the arm keeps of its report}`` for every evaluated version of the runs ``pattern`` names.

    Raises
    ------
    SystemExit
        If a run holds more than one evaluated version, or two runs the same training seed.
    """
    reports: dict[str, dict] = {}
    for run in sorted(glob.glob(pattern)):
        found = sorted(Path(run).glob("models/*/report/report.json"))
        if len(found) > 1:
            raise SystemExit(f"{run}: {len(found)} evaluated versions, one expected")
        for path in found:
            report = json.loads(path.read_text())
            seed = str(report["lineage"]["train"]["seed"])
            if seed in reports:
                raise SystemExit(f"{pattern}: two runs trained with seed {seed}")
            reports[seed] = {
                "run": run,
                "version": report["version"],
                "groups": {
                    group: {name: entry["auprc"][name] for name in SCORERS if name in entry["auprc"]}
                    for group, entry in report["groups"].items()
                },
                "recall_at_fdr_10": {key: result["recall_at_fdr_10"] for key, result in report["results"].items()},
            }
    return reports


def group_row(runs: dict[str, dict], group: str, scorer: str = "model") -> str:
    """``mean (lowest-highest training; lowest-highest bound)`` of one scorer in one group over the trainings.

    Examples
    --------
    >>> runs = {"1": {"groups": {"g": {"model": {"estimate": 0.4, "ci": [0.3, 0.5]}}}},
    ...         "2": {"groups": {"g": {"model": {"estimate": 0.6, "ci": [0.5, 0.7]}}}}}
    >>> group_row(runs, "g")
    '0.500 (0.400-0.600; 0.300-0.700)'
    """
    figures = [run["groups"][group][scorer] for run in runs.values()]
    estimates = [f["estimate"] for f in figures]
    low, high = min(f["ci"][0] for f in figures), max(f["ci"][1] for f in figures)
    mean = sum(estimates) / len(estimates)
    return f"{mean:.3f} ({min(estimates):.3f}-{max(estimates):.3f}; {low:.3f}-{high:.3f})"


def table(arms: dict[str, dict[str, dict]]) -> list[str]:
    """The Markdown table: a row per group, a column per arm, then the boosted baseline (the same fit in every run)."""
    first = next(iter(arms.values()))
    # The two groups over every TF first, then each TF's.
    groups = sorted(next(iter(first.values()))["groups"], key=lambda g: (g not in (HELD_OUT, TRAINING), g))
    lines = ["| group | " + " | ".join(arms) + " | boosted baseline |", "|---" * (len(arms) + 2) + "|"]
    for group in groups:
        cells = [group_row(runs, group) for runs in arms.values()]
        boosted = next(iter(first.values()))["groups"][group]["boosted"]
        lines.append(f"| {group} | " + " | ".join(cells) + f" | {boosted['estimate']:.3f} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arm", action="append", required=True, help="NAME=GLOB of the arm's run dirs")
    parser.add_argument("--name", required=True, help="the result file's name: bench/results/<name>.json")
    parser.add_argument("--note", action="append", default=[], help="NAME=TEXT: what an arm is (its settings)")
    args = parser.parse_args()
    arms = {}
    for spec in args.arm:
        name, _, pattern = spec.partition("=")
        arms[name] = training_reports(pattern)
        if not arms[name]:
            raise SystemExit(f"{pattern}: no evaluated run")
    notes = dict(note.partition("=")[::2] for note in args.note)
    write_results(RESULTS / f"{args.name}.json", {"benchmark": "arm_reports", "arms": notes, "runs": arms})
    print("\n".join(table(arms)))


if __name__ == "__main__":
    main()
