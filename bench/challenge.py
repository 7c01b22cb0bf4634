"""Benchmark: the challenge's own test, the headline of README and docs/model-quality.md.

Held-out chromosomes (chr1, chr8, chr21) in a cell whose labels training
never read (``data.heldout_cells``, HepG2 in the demo's configuration) and
in the training cells, beside the baselines a user could run instead (the
frozen gradient-boosted classifier over motif scores, DNase and RNA-seq;
the best motif match weighted by DNase; DNase alone; the motif scan) and
the generator's references (coarse-PWM reference, oracle).

Data sets: the demo's (generator seed 7, the demo's sizes) and the fresh
seeds that ``bench/plan/fresh_seeds.json`` gives this issue, generated with
test chromosomes ten times the demo's (:data:`bench.boosted_data.CHALLENGE_SIZES`:
at least 200 positive sites per TF/cell). On each, the default configuration
trains once per training seed (17, 18, 19) and ``tfbs evaluate`` scores it.
Then, per data set, the three trainings' predictions are averaged bin by
bin and scored again with the site bootstrap (:mod:`tf_models.protocol`),
so every figure has a 95 % interval over test sites; the spread over the
training seeds is reported beside it.

Writes ``bench/results/challenge.json``; ``bench/quality_tables.py
--challenge`` prints its tables.

    .venv/bin/python bench/challenge.py                      # the demo and the two fresh seeds
    .venv/bin/python bench/challenge.py --data demo         # the demo only
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.boosted_data import CHALLENGE_SIZES  # noqa: E402
from bench.quality_runs import (  # noqa: E402
    ROOT,
    STRATEGIES,
    DataSet,
    Variant,
    data_overrides,
    quality_parser,
    run_all,
    write_results,
)

#: Where the seeds of the fresh data sets are written before their first use.
PLAN = ROOT / "bench" / "plan" / "fresh_seeds.json"
#: The training seeds' runs of the default configuration.
DEFAULT = Variant("parameter_server", STRATEGIES["parameter_server"])


def fresh_seeds(owner: str) -> list[int]:
    """The fresh generator seeds the plan gives ``owner`` (e.g. ``"issue 41"``)."""
    plan = json.loads(PLAN.read_text())
    return [entry["seed"] for entry in plan["fresh"] if entry["owner"] == owner]


def data_sets(owner: str) -> list[DataSet]:
    """The demo's data set and the owner's fresh seeds at the challenge's sizes."""
    fresh = [DataSet(f"seed{seed}", (f"generate.seed={seed}", CHALLENGE_SIZES)) for seed in fresh_seeds(owner)]
    return [DataSet("demo"), *fresh]


def averaged_predictions(model_dirs: list[Path]) -> dict[str, dict[str, np.ndarray]]:
    """Per TF/cell, the runs' model probabilities averaged bin by bin, beside the baselines' columns of the first run
    and the average joined to the boosted baseline (:func:`tf_models.protocol.joined_probability`)."""
    import pyarrow.parquet as pq

    from tf_models.protocol import BASELINES, JOINED, joined_probability

    tables = [pq.read_table(model_dir / "report" / "predictions").to_pandas() for model_dir in model_dirs]
    order = ["tf", "cell", "chrom", "start"]
    tables = [table.sort_values(order).reset_index(drop=True) for table in tables]
    first = tables[0]
    for table in tables[1:]:
        if not (table[order].to_numpy() == first[order].to_numpy()).all():
            raise ValueError("the runs scored different test rows")
    first = first.assign(probability=np.mean([t["probability"].to_numpy() for t in tables], axis=0))
    per_key = {}
    for (tf, cell), rows in first.groupby(["tf", "cell"]):
        per_key[f"{tf}/{cell}"] = {
            "chrom": rows["chrom"].to_numpy(),
            "start": rows["start"].to_numpy(),
            "label": rows["label"].to_numpy(),
            "model": rows["probability"].to_numpy(),
            **{name: rows[name].to_numpy() for name in BASELINES},
            JOINED: joined_probability(rows["probability"].to_numpy(), rows["boosted"].to_numpy()),
        }
    return per_key


def add_references(per_key: dict, config) -> None:
    """The generator's oracle and coarse-PWM reference of each TF/cell's rows (generated data only)."""
    from tf_models.baselines import OracleTable
    from tfbs import storage

    tables: dict[str, OracleTable] = {}
    for key, arrays in per_key.items():
        tf, cell = key.split("/")
        for name, uri in config.data.generator_table_uris(tf).items():
            if storage.exists(uri):
                tables.setdefault(uri, OracleTable.read(uri))
                arrays[name] = tables[uri].scores(cell, arrays["chrom"], arrays["start"])


def ensemble(data: DataSet, work: Path, config_path: str, base: list[str], records: list[dict]) -> dict:
    """One data set's averaged predictions scored with intervals, and the spread of its runs' group means."""
    from tf_models.protocol import JOINED, group_summary, site_intervals
    from tfbs.config import load_config

    runs = [r for r in records if r["data"] == data.name]
    model_dirs = [work / data.name / DEFAULT.run_folder / "models" / r["version"] for r in runs]
    config = load_config(config_path, [*base, *data_overrides(data, work), f"run_dir={work / data.name / 'run'}"])
    per_key = averaged_predictions(model_dirs)
    add_references(per_key, config)
    intervals = site_intervals(per_key, config.data.heldout_cells, 1000, seed=0)
    reports = [json.loads((d / "report" / "report.json").read_text()) for d in model_dirs]
    seeds_spread = {
        group: {
            scorer: _spread([r["groups"][group]["auprc"][scorer]["estimate"] for r in reports])
            for scorer in ("model", JOINED)
            if all(scorer in r["groups"][group]["auprc"] for r in reports)
        }
        for group in reports[0]["groups"]
    }
    return {
        "heldout_cells": config.data.heldout_cells,
        "train_seeds": [r["train_seed"] for r in runs],
        "groups": group_summary(intervals),
        "gaps": intervals["gaps"],
        "keys": {
            key: {name: entry["methods"][name]["auprc"] for name in entry["methods"]}
            | {"n_positive_sites": entry["n_positive_sites"]}
            for key, entry in intervals["keys"].items()
        },
        "runs_spread": seeds_spread,
    }


def _spread(values: list[float]) -> dict:
    return {"mean": round(statistics.fmean(values), 4), "min": round(min(values), 4), "max": round(max(values), 4)}


def main() -> None:
    parser = quality_parser(__doc__.splitlines()[0], "challenge.json")
    parser.add_argument("--owner", default="issue 41", help="whose fresh seeds (bench/plan/fresh_seeds.json)")
    parser.set_defaults(work_dir=ROOT / "build" / "bench" / "challenge")
    args = parser.parse_args()
    work = args.work_dir.resolve()
    sets = [d for d in data_sets(args.owner) if args.data is None or d.name in args.data]
    plan = [(data, DEFAULT, seed) for data in sets for seed in args.seeds]
    meta = {"benchmark": "challenge", "config": args.config, "overrides": args.overrides, "owner": args.owner}
    records = run_all(plan, work, args.config, args.overrides, args.out, meta, args.data)
    payload = json.loads(args.out.read_text())
    payload["ensembles"] = {
        **payload.get("ensembles", {}),
        **{data.name: ensemble(data, work, args.config, args.overrides, records) for data in sets},
    }
    write_results(args.out, payload)


if __name__ == "__main__":
    main()
