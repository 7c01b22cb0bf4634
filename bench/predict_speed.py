"""Benchmark: genome-wide prediction bins/s against a per-row loop and the model's own batched rate.

On the demo's LATEST model and genome (``make demo`` first), in one run on
the same cores:

- ``tfbs predict``'s Spark job (``predict_targets`` on ``local[2]``, the
  session already up) over every 200 bp bin of the genome, for the first
  TF/cell, or for several TFs in that cell (``--tfs``: one task cuts each
  window once for all of them);
- a plain Python loop over the same SavedModel, one region per call, on a
  sample of those bins;
- the SavedModel alone on batches of ``predict.batch_size`` windows already
  cut (the model's batched throughput: what the job can at most reach).

The job's rate counts scored bins (bins x TF/cells). Prints the rates, the ratios (job / loop, job / model) and the hours for the
challenge's 60 M bins per TF/cell on N executors of two cores at the job's
rate; writes ``bench/results/predict_speed.json`` (the job's submissions go
to ``build/bench/``).

    .venv/bin/python bench/predict_speed.py --config conf/demo.yaml
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

# The repository root before bench/: bench/preprocess.py would otherwise
# shadow the preprocess package when this file is run as a script.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.report import result_path, write_summary
from tf_models.model_dir import local_export
from tf_models.predict import Target, predict_targets
from tfbs import storage
from tfbs.config import load_config
from tfbs.formats.genome import gather_windows, load_chromosome, read_fai
from tfbs.formats.proteins import read_protein_fasta
from tfbs.formats.submission import genome_bins
from tfbs.launch.session import spark_session
from tfbs.lineage import EXPORT_METADATA, chosen_version, export_uri

#: Bins per TF/cell in the challenge's test regions (hg19, 50 bp stride).
CHALLENGE_BINS = 60_000_000


def _serve_inputs(windows: np.ndarray, protein: str, cell_index: int) -> dict:
    import tensorflow as tf

    n = len(windows)
    return {
        "dna": tf.constant([w.tobytes() for w in windows]),
        "protein": tf.constant([protein.encode()] * n),
        "cell_index": tf.constant([cell_index] * n, tf.int32),
        "dnase": tf.constant(np.zeros(n, np.float32)),
    }


def main() -> None:
    import tensorflow as tf

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="conf/demo.yaml")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument(
        "--tfs", default=None, help="TFs scored in the first cell, comma-separated (default: the first)"
    )
    parser.add_argument("--loop-rows", type=int, default=300, help="regions scored one per call")
    parser.add_argument("--model-rows", type=int, default=8192, help="windows the batched model rate is timed on")
    parser.add_argument("--out", default=result_path("predict_speed"))
    args = parser.parse_args()
    config = load_config(args.config, args.overrides)
    version = chosen_version(config.run_dir)
    export = export_uri(config.run_dir, version)
    metadata = json.loads(storage.read_text(f"{export}/{EXPORT_METADATA}"))
    tf_names, cell = (args.tfs.split(",") if args.tfs else metadata["tfs"][:1]), metadata["cells"][0]
    tf_name = tf_names[0]
    protein = read_protein_fasta(config.data.proteins_fasta)[tf_name]
    out_dir = Path("build/bench")
    out_dir.mkdir(parents=True, exist_ok=True)
    fai = read_fai(config.data.genome_fasta)
    bins = sum(1 for _ in genome_bins(config.data.genome_fasta))
    targets = [Target(name, cell, storage.to_uri(out_dir / f"F.{name}.{cell}.tab.gz")) for name in tf_names]

    with spark_session(config.spark, app_suffix="-bench-predict") as spark:
        started = time.perf_counter()
        predict_targets(spark, config, export, None, targets)
        job_rate = bins * len(targets) / (time.perf_counter() - started)

    serve = tf.saved_model.load(local_export(export)).signatures["serving_default"]
    chrom = max(config.preprocess.test_chroms, key=lambda c: fai[c].length)
    sequence = load_chromosome(config.data.genome_fasta, fai[chrom])
    starts = np.arange(0, fai[chrom].length - 200, 50, dtype=np.int64)
    windows = gather_windows(sequence, np.resize(starts, args.model_rows), metadata["window"])
    cell_index, batch = metadata["cells"].index(cell), config.predict.batch_size

    serve(**_serve_inputs(windows[:1], protein, cell_index))  # trace once
    started = time.perf_counter()
    for row in range(args.loop_rows):
        serve(**_serve_inputs(windows[row : row + 1], protein, cell_index))["probability"].numpy()
    loop_rate = args.loop_rows / (time.perf_counter() - started)

    batches = [_serve_inputs(windows[i : i + batch], protein, cell_index) for i in range(0, len(windows), batch)]
    serve(**batches[0])
    started = time.perf_counter()
    for inputs in batches:
        serve(**inputs)["probability"].numpy()
    model_rate = len(windows) / (time.perf_counter() - started)

    result = {
        "version": version,
        "tf_cells": [f"{name}/{cell}" for name in tf_names],
        "bins": bins,
        "scored_bins": bins * len(targets),
        "rows_per_part": config.predict.rows_per_part,
        "job_bins_per_s": round(job_rate),
        "loop_bins_per_s": round(loop_rate, 1),
        "model_bins_per_s": round(model_rate),
        "job_over_loop": round(job_rate / loop_rate, 1),
        "job_over_model": round(job_rate / model_rate, 2),
        "hours_for_60M_bins_on_1_executor_of_2_cores": round(CHALLENGE_BINS / job_rate / 3600, 1),
    }
    for executors in (10, 50):
        result[f"hours_for_60M_bins_on_{executors}_executors"] = round(CHALLENGE_BINS / job_rate / 3600 / executors, 2)
    write_summary(result, args.out, args)


if __name__ == "__main__":
    main()
