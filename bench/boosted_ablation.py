"""Benchmark: what the gradient-boosted baseline's lead rests on, by its features left out one group at a time.

The frozen baseline (:mod:`tf_models.boosted`) reads more than the network
does: its partners' motifs, motif maxima out to 1000 bp, and the RNA-seq of
the TFs and partners in the row's cell. Which of these carries its lead,
above all on the held-out cell, tells the next model what to read (issue
42). On a tuning seed only (``bench/plan/fresh_seeds.json``: 7, 8, 9 chose
every design; the fresh seeds are scored once, by the final model), the
baseline is refitted with its settings unchanged on the model's training
rows, with each group of features dropped:

* ``full``: every feature (the report's baseline);
* ``no_expression``: no ``log2(1 + TPM)`` column;
* ``no_partner_motifs``: the TFs' own motifs only;
* ``centre_only``: motif maxima in 100 and 200 bp only;
* ``motif_dnase``: the TFs' own motifs in 100 and 200 bp and DNase: about
  what the network reads.

Each variant's mean test auPRC per group of cells (held-out, training), and
``full`` minus it with its paired 95 % interval over test sites
(:mod:`tf_models.protocol`). Writes ``bench/results/boosted_ablation.json``:

    .venv/bin/python bench/boosted_ablation.py                  # tuning seed 8 at the headline's sizes
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

#: The widths ``centre_only`` keeps (bp).
CENTRE_WIDTHS = ("100bp", "200bp")


def variant_columns(names: list[str], own_motifs: set[str]) -> dict[str, np.ndarray]:
    """Per variant, the indices of the feature columns it keeps.

    Examples
    --------
    >>> names = ["A:100bp", "P:100bp", "A:1000bp", "P:1000bp", "dnase", "A:log2tpm", "P:log2tpm"]
    >>> {k: v.tolist() for k, v in variant_columns(names, {"A"}).items()}  # doctest: +NORMALIZE_WHITESPACE
    {'full': [0, 1, 2, 3, 4, 5, 6], 'no_expression': [0, 1, 2, 3, 4], 'no_partner_motifs': [0, 2, 4, 5, 6],
     'centre_only': [0, 1, 4, 5, 6], 'motif_dnase': [0, 4]}
    """

    def motif_of(name: str) -> str | None:
        return name.rsplit(":", 1)[0] if name.endswith("bp") else None

    def width_of(name: str) -> str:
        return name.rsplit(":", 1)[1]

    keep = {
        "full": lambda n: True,
        "no_expression": lambda n: not n.endswith(":log2tpm"),
        "no_partner_motifs": lambda n: motif_of(n) is None or motif_of(n) in own_motifs,
        "centre_only": lambda n: motif_of(n) is None or width_of(n) in CENTRE_WIDTHS,
        "motif_dnase": lambda n: n == "dnase" or (motif_of(n) in own_motifs and width_of(n) in CENTRE_WIDTHS),
    }
    return {variant: np.array([i for i, n in enumerate(names) if rule(n)]) for variant, rule in keep.items()}


def ablate(config, n_resamples: int) -> dict:
    """Every variant fitted and scored; the groups' means and ``full`` minus each, with intervals."""
    from tf_models.boosted import fit_boosted, predict_boosted
    from tf_models.protocol import format_interval, site_intervals

    train, test = load_rows(config, "train"), load_rows(config, "test")
    inputs, (x_train, x_test) = boosted_features(config, [train, test])
    columns = variant_columns(inputs.feature_names(), set(config.evaluate.motifs))
    scores = {}
    for variant, kept in columns.items():
        started = time.monotonic()
        models = fit_boosted(x_train[:, kept], train["label_code"], train["tf"])
        scores[variant] = predict_boosted(models, x_test[:, kept], test["tf"])
        print(
            f"{variant}: {len(kept)} features, fitted and scored in {time.monotonic() - started:.0f} s", file=sys.stderr
        )
    keys = np.char.add(np.char.add(test["tf"].astype(str), "/"), test["cell"].astype(str))
    per_key = {
        key: {
            "chrom": test["chrom"][rows],
            "start": test["start"][rows],
            "label": test["label_code"][rows],
            # site_intervals pairs "model" with every other scorer: the full baseline plays it.
            "model": scores["full"][rows],
            **{variant: values[rows] for variant, values in scores.items() if variant != "full"},
        }
        for key in np.unique(keys)
        for rows in [keys == key]
    }
    intervals = site_intervals(per_key, config.data.heldout_cells, n_resamples, seed=0)
    groups = {}
    for name, group in intervals["groups"].items():
        groups[name] = {
            "auprc": {("full" if s == "model" else s): entry["auprc"] for s, entry in group["methods"].items()},
            "full_minus": {d["b"]: d["auprc"] for d in group["differences"] if d["a"] == "model"},
        }
        for variant, interval in groups[name]["full_minus"].items():
            print(f"{name}: full - {variant} {format_interval(interval, signed=True)}", file=sys.stderr)
    return {
        "heldout_cells": config.data.heldout_cells,
        "n_features": {variant: int(len(kept)) for variant, kept in columns.items()},
        "groups": groups,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="conf/demo.yaml")
    parser.add_argument("--data-seed", type=int, default=8, help="a tuning seed (bench/plan/fresh_seeds.json)")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--work-dir", type=Path, default=ROOT / "build" / "bench" / "boosted_ablation")
    parser.add_argument("--out", type=Path, default=RESULTS / "boosted_ablation.json")
    args = parser.parse_args()
    from tfbs.config import load_config

    data = DataSet(f"seed{args.data_seed}-challenge", (f"generate.seed={args.data_seed}",))
    work = args.work_dir.resolve()
    overrides = prepare(data, work, args.config, [CHALLENGE_SIZES])
    config = load_config(args.config, [*overrides, f"run_dir={work / data.name / 'run'}"])
    result = ablate(config, args.resamples)
    write_results(args.out, {"benchmark": "boosted_ablation", "config": args.config, data.name: result})


if __name__ == "__main__":
    main()
