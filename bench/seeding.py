"""Benchmark: what starting the motif filters as known motifs buys, three training seeds each.

``train.model.motif_cnn.seed_motifs`` starts one filter per TF as its motif
from ``evaluate.motif_db``: on generated data, the very PWMs the generator
plants. Three ways to start, on the demo's data (generator seed 7) and on
the data sets never used in development (seeds 101 and 202), each with
training seeds 17, 18, 19 under the default strategy:

- ``unseeded``: every filter random (``seed_motifs: false``);
- ``planted``: the first filters as the planted motifs (``seed_motifs: true``);
- ``other_tfs``: the first filters as four motifs of other TFs, unrelated
  to the planted ones (``seed_motif_db``: REST_f1, SRF_do, NFYA_f1, MYC_f1
  of the same HOCOMOCO file, written to ``<work>/other_tfs.meme``): what
  seeding gives when the motif file is wrong.

Writes ``bench/results/seeding.json`` (every run, and per data set and
start the mean test auPRC's mean and range over the seeds, per TF the
same). Runs already trained are read (:mod:`bench.quality_runs`); in one
work folder the unseeded variant is the very run of ``bench/fresh_data.py``.

    .venv/bin/python bench/seeding.py                 # 27 trainings, about 1.5 h on 2 cores
    .venv/bin/python bench/seeding.py --data seed202  # one data set: 9 trainings
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.quality_runs import (  # noqa: E402
    FRESH_DATA_SEEDS,
    STRATEGIES,
    DataSet,
    Variant,
    quality_parser,
    run_all,
)

#: Motifs of TFs neither planted nor of the planted TFs' families, about as long as the planted ones.
OTHER_TF_MOTIFS = ("REST_f1", "SRF_do", "NFYA_f1", "MYC_f1")


def write_other_motifs(motif_db: Path, out: Path) -> Path:
    """A MEME file of :data:`OTHER_TF_MOTIFS`, taken from ``motif_db``."""
    from tf_models.explain.tomtom import to_meme
    from tfbs.formats.motifs import read_meme

    database = read_meme(str(motif_db))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(to_meme({name: database[name] for name in OTHER_TF_MOTIFS}))
    return out


def variants(other_motifs: Path) -> list[Variant]:
    """The three starts, under the default strategy, in its run folder."""
    strategy = STRATEGIES["parameter_server"]
    seeding = "train.model.motif_cnn.seed_motifs"
    return [
        Variant("unseeded", (*strategy, f"{seeding}=false"), folder="parameter_server"),
        Variant("planted", (*strategy, f"{seeding}=true"), folder="parameter_server"),
        Variant(
            "other_tfs",
            (*strategy, f"{seeding}=true", f"train.model.motif_cnn.seed_motif_db={other_motifs}"),
            folder="parameter_server",
        ),
    ]


def main() -> None:
    parser = quality_parser(__doc__.splitlines()[0], "seeding.json")
    args = parser.parse_args()
    work = args.work_dir.resolve()
    root = Path(__file__).resolve().parent.parent
    other = write_other_motifs(root / "data" / "dream" / "annotations" / "HOCOMOCOv9.meme", work / "other_tfs.meme")
    data_sets = [DataSet("demo"), *(DataSet(f"seed{seed}", (f"generate.seed={seed}",)) for seed in FRESH_DATA_SEEDS)]
    plan = [(data, variant, seed) for data in data_sets for variant in variants(other) for seed in args.seeds]
    meta = {
        "benchmark": "seeding",
        "config": args.config,
        "overrides": args.overrides,
        "other_tf_motifs": list(OTHER_TF_MOTIFS),
    }
    run_all(plan, work, args.config, args.overrides, args.out, meta, args.data)


if __name__ == "__main__":
    main()
