"""Benchmark: does the network carry what the boosted baseline lacks, or would any second scorer lift it as much?

The report scores the model joined to the boosted baseline
(:func:`tf_models.protocol.joined_probability`). An ensemble of two scorers can
beat either for a reason that has nothing to do with the network: any
second opinion with errors of its own might do. The controls here join the
boosted baseline the same way with the baselines a user already has (the
motif scan, the motif match weighted by DNase). Each scorer enters as its
standardised log-odds (its standardised score for the two baselines, which
are no probabilities), so no join weighs one side more.

Reads finished runs of ``bench/challenge.py`` (its ``--work-dir``: every
model version of ``<work>/<data>/parameter_server/models/`` with a report),
averages their predictions bin by bin as the challenge does, and scores each
join with intervals over test sites, minus the boosted baseline paired.

    .venv/bin/python bench/joined_controls.py --work-dir build/bench/challenge --name default
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.challenge import DEFAULT, averaged_predictions  # noqa: E402
from bench.quality_runs import ROOT, write_results  # noqa: E402

#: The second scorers joined to the boosted baseline: the network, then the controls.
SECOND_SCORERS = ("model", "motif_scan", "dnase_motif")


def standardised(values: np.ndarray, log_odds: bool) -> np.ndarray:
    """Zero mean and unit spread within one TF/cell (of the log-odds for a probability).

    Examples
    --------
    >>> standardised(np.array([1.0, 2.0, 3.0]), log_odds=False).round(3).tolist()
    [-1.225, 0.0, 1.225]
    """
    from tf_models.protocol import log_odds as to_log_odds

    values = to_log_odds(values) if log_odds else np.asarray(values, dtype=np.float64)
    return (values - values.mean()) / (values.std() or 1.0)


def joins(per_key: dict[str, dict[str, np.ndarray]]) -> list[str]:
    """Add ``boosted+<scorer>`` to each TF/cell for every second scorer; return the names added."""
    names = [f"boosted+{name}" for name in SECOND_SCORERS]
    for arrays in per_key.values():
        boosted = standardised(arrays["boosted"], log_odds=True)
        for name in SECOND_SCORERS:
            arrays[f"boosted+{name}"] = boosted + standardised(arrays[name], log_odds=name == "model")
    return names


def main() -> None:
    from tf_models.protocol import site_intervals

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work-dir", type=Path, required=True, help="bench/challenge.py's --work-dir")
    parser.add_argument("--name", required=True, help="the candidate's name in the results")
    parser.add_argument("--data", default="demo", help="the data set under the work dir")
    parser.add_argument("--heldout-cells", nargs="+", default=["HepG2"])
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "joined_controls.json")
    args = parser.parse_args()

    models = args.work_dir / args.data / DEFAULT.run_folder / "models"
    model_dirs = sorted(d for d in models.iterdir() if (d / "report" / "report.json").exists())
    per_key = averaged_predictions(model_dirs)
    names = joins(per_key)
    intervals = site_intervals(per_key, args.heldout_cells, 1000, seed=0, pairs=[(n, "boosted") for n in names])
    groups = {}
    for group in ("held-out cells", "training cells"):
        entry = intervals["groups"][group]
        groups[group] = {
            "auprc": {name: entry["methods"][name]["auprc"] for name in ("model", "boosted", *names)},
            "minus_boosted": {d["a"]: d["auprc"] for d in entry["differences"]},
        }
    payload = json.loads(args.out.read_text()) if args.out.exists() else {"benchmark": "joined_controls"}
    payload[args.name] = {"data": args.data, "versions": [d.name for d in model_dirs], "groups": groups}
    write_results(args.out, payload)
    for group, figures in groups.items():
        line = ", ".join(f"{name} {figures['minus_boosted'][name]['estimate']:+.3f}" for name in names)
        print(f"{args.name} {group}: minus boosted {line}")


if __name__ == "__main__":
    main()
