"""Benchmark: how much of FOXA2's recall at 10 % FDR can any model of these inputs reach?

The issue asks FOXA2's recall at 10 % FDR of at least 0.2 in every demo
cell; this measures what that asks of the inputs. Per generator seed, TF
(FOXA1, the family's lead, and FOXA2) and cell, on the test chromosomes:
recall at 10 % FDR by the DREAM rule with its site-bootstrap interval
(:func:`tfbs.site_bootstrap.bootstrap_metrics`) of

* ``oracle``: the generator's chance of B (:mod:`synthetic.oracle`);
* ``family_blind_oracle`` (FOXA2): the oracle without knowing which of
  FOXA1's sites FOXA2 took over (:func:`synthetic.blind_oracles.family_blind_chances`);
* ``match_rank_oracle``: also without a strong site's strength beyond its
  PWM match rank, and with the motif-less sites without a partner pooled
  with the open regions without a site (:mod:`synthetic.blind_oracles`);
* ``coarse_pwm_reference``: the generator's coarse-PWM reference (its table);
* with ``--predictions SEED=PATH``, on that seed: a trained model's
  ``model``, ``boosted`` and ``model_and_boosted`` (the joined scorer),
  from its evaluation's ``report/predictions``, on the bins it scored.

The blind oracles still know more than any model (exact site centres and
kinds, which cells express a partner, which PWM planted each motif): on a
test set large enough to tell, what they reach is above what a model of
these inputs can expect. ``--test-scale 10`` generates the test
chromosomes ten times longer (the rest as configured): ten times the
sites, intervals a model can be judged by.

Writes ``bench/results/paralogue_ceiling.json`` (``_x10.json`` with
``--test-scale 10``); generates each seed's data with ``tfbs generate``
unless it is there:

    .venv/bin/python bench/paralogue_ceiling.py --data-seeds 7 8 9 --test-scale 10
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.quality_runs import RESULTS, ROOT, write_results  # noqa: E402

#: The DREAM rule's false discovery rate for recall.
FDR = 0.1
WORK = ROOT / "build" / "bench" / "paralogue"


def _labels(path: Path, chroms: list[str]) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """``(cells, chrom, start, labels)`` of a DREAM label file on ``chroms``; labels ``(bins, cells)`` of U/B/A."""
    from synthetic.oracle import read_label_table

    cells, table = read_label_table(str(path), chroms)
    labels = np.stack([table[cell].to_numpy(zero_copy_only=False) for cell in cells], axis=1).astype(str)
    return cells, table["chr"].to_numpy(zero_copy_only=False), table["start"].to_numpy(), labels


def _trained_scores(
    predictions: Path, tf: str, cells: list[str], chrom: np.ndarray, start: np.ndarray
) -> dict[str, np.ndarray]:
    """The model's, the boosted baseline's and the two joined scores of ``tf`` on the bins ``(chrom, start)``,
    ``(bins, cells)``, from an evaluation's ``report/predictions`` (NaN where it scored no such bin)."""
    import pyarrow.parquet as pq

    from tf_models.protocol import JOINED, joined_probability

    table = pq.read_table(predictions, filters=[("tf", "=", tf)]).to_pandas()
    table[JOINED] = joined_probability(table["probability"].to_numpy(), table["boosted"].to_numpy())
    index = {(c, int(s)): i for i, (c, s) in enumerate(zip(chrom.tolist(), start.tolist()))}
    out = {name: np.full((start.shape[0], len(cells)), np.nan) for name in ("model", "boosted", JOINED)}
    rows = np.array([index[(c, int(s))] for c, s in zip(table["chrom"], table["start"])])
    columns = np.array([cells.index(cell) for cell in table["cell"]])
    for name, column in (("model", "probability"), ("boosted", "boosted"), (JOINED, JOINED)):
        out[name][rows, columns] = table[column].to_numpy()
    return out


def recalls_of(
    config, data_root: Path, member: str, lead: str, n_resamples: int, predictions: Path | None = None
) -> dict:
    """Per TF and cell: positive bins, and each scorer's recall at 10 % FDR with its site-bootstrap interval."""
    from synthetic.blind_oracles import family_blind_chances, match_rank_chances, pooled_featureless
    from synthetic.generate import load_pwms, simulate
    from synthetic.oracle import bin_chances, label_geometry, oracle_scores, site_chances
    from tf_models.baselines import OracleTable
    from tfbs.site_bootstrap import KeyBins, bootstrap_metrics, busy_bins, site_regions

    gen = config.generate
    pwms = load_pwms(gen)
    genome, _, occupancy = simulate(gen, pwms)
    chrom_names, cell_names = list(gen.chromosomes), list(gen.cells)
    test = [c for c in config.preprocess.test_chroms if c in chrom_names]
    member_chance, lead_chance = site_chances(occupancy, member), site_chances(occupancy, lead)
    blind = family_blind_chances(occupancy, member, lead, member_chance, lead_chance)
    lead_by_rank = match_rank_chances(gen, occupancy, genome, pwms, lead, lead_chance)
    member_by_rank = match_rank_chances(gen, occupancy, genome, pwms, member, member_chance)
    by_rank = pooled_featureless(
        occupancy, [member, lead], *family_blind_chances(occupancy, member, lead, member_by_rank, lead_by_rank)
    )
    lead_sites = pooled_featureless(occupancy, [lead], occupancy.sites[lead].loc, lead_by_rank)
    geometry = label_geometry(200)
    tables = {tf: _labels(data_root / "labels" / f"{tf}.train.labels.tsv.gz", test) for tf in (lead, member)}
    cells, chrom, start, _ = tables[lead]
    assert all(np.array_equal(start, table[2]) for table in tables.values()), "label files of other bins"
    order = [cell_names.index(cell) for cell in cells]

    def per_chrom(score_of) -> np.ndarray:
        out = np.zeros((start.shape[0], len(cells)))
        for name in test:
            rows = np.flatnonzero(chrom == name)
            out[rows] = score_of(chrom_names.index(name), start[rows])[:, order]
        return out

    scores = {
        tf: {"oracle": per_chrom(lambda i, s, tf=tf: oracle_scores(occupancy, tf, i, s, geometry))} for tf in tables
    }
    for tf in tables:  # the generator's coarse-PWM reference, from its table
        coarse = OracleTable.read(str(data_root / "oracle" / f"{tf}.coarse_pwm.tsv.gz"))
        scores[tf]["coarse_pwm_reference"] = np.stack([coarse.scores(cell, chrom, start) for cell in cells], axis=1)
    scores[member]["family_blind_oracle"] = per_chrom(lambda i, s: bin_chances(occupancy, *blind, i, s, geometry))
    scores[member]["match_rank_oracle"] = per_chrom(lambda i, s: bin_chances(occupancy, *by_rank, i, s, geometry))
    scores[lead]["match_rank_oracle"] = per_chrom(lambda i, s: bin_chances(occupancy, *lead_sites, i, s, geometry))
    if predictions is not None:
        for tf in tables:
            for name, values in _trained_scores(predictions, tf, cells, chrom, start).items():
                scores[tf][name] = values
    region = site_regions(
        chrom, start, busy_bins([table[3][:, c] for table in tables.values() for c in range(len(cells))])
    )
    keys = {}
    for tf in tables:
        # Bins the evaluation did not score (a window off the chromosome's end or with N) count for no scorer.
        unscored = np.isnan(np.stack(list(scores[tf].values()))).any(axis=0)
        labels = np.where(unscored, "A", tables[tf][3])
        for c, cell in enumerate(cells):
            methods = {name: np.nan_to_num(value[:, c]) for name, value in scores[tf].items()}
            keys[f"{tf}/{cell}"] = KeyBins(labels[:, c], region, methods)
    intervals = bootstrap_metrics(keys, n_resamples=n_resamples)
    return {
        key: {
            "positive_bins": int((keys[key].labels == "B").sum()),
            **{name: value["recall_at_fdr_10"] for name, value in entry["methods"].items()},
        }
        for key, entry in intervals["keys"].items()
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="conf/demo.yaml")
    parser.add_argument("--data-seeds", type=int, nargs="+", default=[7, 8, 9])
    parser.add_argument("--member", default="FOXA2")
    parser.add_argument("--lead", default="FOXA1")
    parser.add_argument(
        "--test-scale",
        type=int,
        default=1,
        help="test chromosomes this many times longer: more sites, a tighter interval",
    )
    parser.add_argument(
        "--predictions",
        action="append",
        default=[],
        metavar="SEED=PATH",
        help="an evaluation's report/predictions folder on that seed's data: its model, boosted and joined beside",
    )
    parser.add_argument("--resamples", type=int, default=1000, help="of the site bootstrap")
    args = parser.parse_args(argv)

    from tfbs.config import load_config

    figures = {}
    for seed in args.data_seeds:
        name = str(seed) if args.test_scale == 1 else f"{seed}x{args.test_scale}"
        root = WORK / name / "data"
        overrides = [f"generate.seed={seed}", f"data.root={root}", f"run_dir={WORK / name / 'run'}"]
        config = load_config(ROOT / args.config, overrides)
        if args.test_scale != 1:
            sizes = {
                chrom: size * args.test_scale if chrom in config.preprocess.test_chroms else size
                for chrom, size in config.generate.chromosomes.items()
            }
            overrides.append("generate.chromosomes={" + ", ".join(f"{c}: {n}" for c, n in sizes.items()) + "}")
            config = load_config(ROOT / args.config, overrides)
        if not (root / "labels" / f"{args.member}.train.labels.tsv.gz").exists():
            command = [str(Path(sys.executable).parent / "tfbs"), "generate", "--config", args.config]
            subprocess.run([*command, *[x for o in overrides for x in ("--set", o)]], check=True, cwd=ROOT)
        trained = dict(item.split("=", 1) for item in args.predictions).get(str(seed))
        figures[name] = recalls_of(
            config, root, args.member, args.lead, args.resamples, Path(trained) if trained else None
        )
        print(name, json.dumps(figures[name]), flush=True)
    payload = {
        "fdr": FDR,
        "config": args.config,
        "test_scale": args.test_scale,
        "resamples": args.resamples,
        "seeds": figures,
    }
    suffix = "" if args.test_scale == 1 else f"_x{args.test_scale}"
    write_results(RESULTS / f"paralogue_ceiling{suffix}.json", payload)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
