"""Benchmark: which partner motifs lie near each scorer's top false positives, in the cells that trained.

The realistic profile's partnered TFs bind some sites only with a partner
(a cofactor) that some cells express (``generate.realistic.partners``). A
scorer that reads the partner's motif but not which cell expresses the
partner ranks the other cell's partner sites among its best calls. This
reads a training's report (``report/predictions``: the model's and the
baselines' scores of every test bin) and, per partnered TF and training
cell, gives the mean best log-odds match of every partner's motif within
:data:`REACH_BP` of the bin's centre, both strands: over the bound bins,
and over the false positives among each scorer's :data:`TOP` best bins.
``--missed`` reads the other side, in every cell: the bound bins one
scorer ranks among its best n (n the TF/cell's bound bins) and the other
does not, with the TF's own motif beside its partners'.

    .venv/bin/python bench/partner_errors.py --set data.root=<data> <model dir> [<model dir> ...]
    .venv/bin/python bench/partner_errors.py --missed --out bench/results/<name>.json --set data.root=<data> <model dir> ...

Writes ``bench/results/partner_errors.json``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.report import result_path, write_summary  # noqa: E402

if TYPE_CHECKING:
    import pandas as pd

#: Bases either side of the bin's centre searched for a partner's motif (a partner sits 25-90 bp from its
#: site's centre, the site up to 100 bp from the bin's).
REACH_BP = 200
#: Best-scored bins of each scorer whose false positives are read.
TOP = 80
#: The scorers compared: the model and the gradient-boosted baseline.
SCORERS = ("probability", "boosted")


def partner_scores(sequences: list[str], motifs: dict[str, np.ndarray]) -> dict[str, float]:
    """Mean over ``sequences`` of each motif's best log-odds match, both strands."""
    from tfbs.formats.motifs import scan_max_score

    return {name: round(float(np.mean(scan_max_score(sequences, pwm))), 2) for name, pwm in motifs.items()}


def around(chromosomes: dict[str, np.ndarray], chroms: np.ndarray, starts: np.ndarray) -> list[str]:
    """The bases within :data:`REACH_BP` of each bin's centre."""
    from tfbs.formats.dream import BIN_SIZE

    centres = starts + BIN_SIZE // 2
    return [chromosomes[c][max(0, m - REACH_BP) : m + REACH_BP].tobytes().decode() for c, m in zip(chroms, centres)]


def errors_near_partners(bins: "pd.DataFrame", chromosomes: dict[str, np.ndarray], partners: dict) -> dict:
    """Partner matches near one TF/cell's bound bins and near each scorer's top false positives."""
    bound = bins[bins["label"] == 1]
    groups = {"bound": bound}
    for scorer in SCORERS:
        best = bins.sort_values(scorer, ascending=False, kind="stable").head(TOP)
        groups[scorer] = best[best["label"] != 1]
    return {
        name: {
            "n": len(rows),
            **partner_scores(around(chromosomes, rows["chrom"].to_numpy(), rows["start"].to_numpy()), partners),
        }
        for name, rows in groups.items()
    }


def missed_sites(bins: "pd.DataFrame", chromosomes: dict[str, np.ndarray], motifs: dict) -> dict:
    """Motif matches near the bound bins among one scorer's best n and not the other's (n: the bound bins)."""
    bins = bins[bins["label"] >= 0]
    n = int((bins["label"] == 1).sum())
    best = {scorer: bins[scorer].rank(ascending=False, method="first") <= n for scorer in SCORERS}
    bound = bins["label"] == 1
    first, second = SCORERS
    groups = {
        "bound": bins[bound],
        f"only_{first}": bins[bound & best[first] & ~best[second]],
        f"only_{second}": bins[bound & best[second] & ~best[first]],
    }
    return {
        name: {
            "n": len(rows),
            **partner_scores(around(chromosomes, rows["chrom"].to_numpy(), rows["start"].to_numpy()), motifs),
        }
        for name, rows in groups.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_dirs", nargs="+", type=Path, help="trained model versions (with report/predictions)")
    parser.add_argument("--config", default="conf/demo.yaml")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--out", default=result_path("partner_errors"))
    parser.add_argument(
        "--missed", action="store_true", help="the bound bins one scorer's best n hold and the other's not"
    )
    args = parser.parse_args()

    import pyarrow.parquet as pq

    from tfbs.config import load_config
    from tfbs.formats.genome import load_chromosome, read_fai
    from tfbs.formats.motifs import read_meme

    config = load_config(args.config, args.overrides)
    database = read_meme(config.evaluate.motif_db)
    motifs = {name: database[motif] for name, motif in config.evaluate.partner_motifs.items()}
    partnered = [spec.name for spec in config.generate.tfs if spec.partners]
    training_cells = [cell for cell in config.generate.cells if cell not in config.data.heldout_cells]
    if args.missed:
        motifs = {**{tf: database[motif] for tf, motif in config.evaluate.motifs.items()}, **motifs}
        training_cells = list(config.generate.cells)
    read = missed_sites if args.missed else errors_near_partners
    fasta = config.data.genome_fasta
    fai = read_fai(fasta)
    summary: dict = {"reach_bp": REACH_BP, "top": "the bound bins' count" if args.missed else TOP, "runs": {}}
    for model_dir in args.model_dirs:
        predictions = pq.read_table(model_dir / "report" / "predictions").to_pandas()
        chromosomes = {c: load_chromosome(fasta, fai[c]) for c in predictions["chrom"].unique()}
        summary["runs"][f"{model_dir.parent.parent.name}/{model_dir.name}"] = {
            f"{tf}/{cell}": read(
                predictions[(predictions["tf"] == tf) & (predictions["cell"] == cell)], chromosomes, motifs
            )
            for tf in partnered
            for cell in training_cells
        }
    write_summary(summary, args.out, args, echo=False)
    print(table(summary["runs"], list(motifs)))


def table(runs: dict[str, dict], motifs: list[str]) -> str:
    """Markdown: per TF/cell and group of bins, each motif's mean best match, averaged over the runs."""
    keys = next(iter(runs.values()))
    lines = ["| TF/cell | bins | n | " + " | ".join(motifs) + " |", "|" + "---|" * (len(motifs) + 3)]
    for key in keys:
        for scorer in keys[key]:
            entries = [rows[key][scorer] for rows in runs.values()]
            n = round(float(np.mean([e["n"] for e in entries])))
            means = [f"{np.mean([e[p] for e in entries]):.1f}" for p in motifs]
            lines.append(f"| {key} | {scorer} | {n} | " + " | ".join(means) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
