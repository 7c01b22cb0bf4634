"""Benchmark: our input pipeline against Petastorm's TensorFlow reader.

Same shards, same rows: the training records our pipeline reads mirror the
train split's Parquet rows that Petastorm reads. In each round, on the same
cores and one after the other:

- ours: ``TrainingRun.dataset`` (``tf_models/input_pipeline.py``: record
  files, shuffle, classes mixed per batch, reverse complement and one-hot
  per batch), alone;
- model: the configured model's in-process training steps on our batches
  (its demand, as in ``bench/input_pipeline.py``);
- Petastorm: ``bench/petastorm_reader.py`` in ``.venv-petastorm`` (its own
  environment: pyarrow 13, numpy<2), ``make_batch_reader`` +
  ``make_petastorm_dataset`` over the same Parquet files with the same
  per-example work, one fresh subprocess per round.

Medians over the rounds; ratios ours/Petastorm (issue 4's target: >= 2x)
and ours/model.

    bash scripts/petastorm_env.sh    # once: creates .venv-petastorm
    .venv/bin/python bench/input_vs_petastorm.py --config conf/demo.yaml \
        --set shards_dir=build/demo/run/shards --repeats 5

Prints JSON and writes it to ``bench/results/input_vs_petastorm.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The repository root before bench/: bench/preprocess.py would otherwise
# shadow the preprocess package.
sys.path.insert(0, str(ROOT))

from bench.input_pipeline import rate  # noqa: E402
from bench.report import as_given, result_path, write_summary  # noqa: E402
from tf_models.train_loop import TrainingRun, build_training_step  # noqa: E402
from tfbs import storage  # noqa: E402
from tfbs.config import load_config  # noqa: E402
from tfbs.formats.manifest import read_manifest  # noqa: E402

PETASTORM_PYTHON = ROOT / ".venv-petastorm" / "bin" / "python"


def petastorm_python() -> Path:
    """The Petastorm environment's interpreter, created on first use."""
    if not PETASTORM_PYTHON.exists():
        subprocess.run(["bash", str(ROOT / "scripts" / "petastorm_env.sh")], check=True)
    return PETASTORM_PYTHON


def petastorm_round(manifest_path: str, batch_size: int, batches: int, shuffle_buffer: int, seed: int) -> dict:
    """One fresh Petastorm subprocess, one timed repeat; its JSON result."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "petastorm.json"
        command = [
            str(petastorm_python()),
            str(ROOT / "bench" / "petastorm_reader.py"),
            "--manifest",
            manifest_path,
            "--batch-size",
            str(batch_size),
            "--batches",
            str(batches),
            "--repeats",
            "1",
            "--shuffle-buffer",
            str(shuffle_buffer),
            "--seed",
            str(seed),
            "--out",
            str(out),
        ]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return json.loads(out.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="conf/demo.yaml")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--batches", type=int, default=2000, help="timed batches per pipeline measurement")
    parser.add_argument("--repeats", type=int, default=3, help="rounds (ours, model, Petastorm each)")
    parser.add_argument("--out", default=result_path("input_vs_petastorm"))
    args = parser.parse_args()
    config = load_config(args.config, args.overrides)
    cfg = config.train
    manifest = read_manifest(config.shards_uri)
    manifest_path = storage.local_path(f"{config.shards_uri}/manifest.json")
    run = TrainingRun.from_manifest(manifest)
    dataset = run.dataset(cfg, cfg.batch_size)
    step = build_training_step(config.train, run)

    ours, model, petastorm, petastorm_raw = [], [], [], []
    for round_index in range(args.repeats):
        ours.append(rate(dataset, args.batches, cfg.batch_size))
        model.append(rate(dataset, max(20, args.batches // 10), cfg.batch_size, step))
        result = petastorm_round(
            manifest_path, cfg.batch_size, args.batches, cfg.shuffle_buffer, cfg.seed + round_index
        )
        petastorm.append(result["petastorm_examples_per_s"])
        petastorm_raw.append(result["petastorm_reader_rows_per_s"])
        print(
            f"round {round_index + 1}/{args.repeats}: ours {ours[-1]:.0f}, model {model[-1]:.0f}, "
            f"petastorm {petastorm[-1]:.0f} examples/s",
            file=sys.stderr,
        )

    medians = {
        "ours_examples_per_s": statistics.median(ours),
        "petastorm_examples_per_s": statistics.median(petastorm),
        "model_examples_per_s": statistics.median(model),
        "petastorm_reader_only_rows_per_s": statistics.median(petastorm_raw),
    }
    summary = {
        **medians,
        "ratio_ours_to_petastorm": medians["ours_examples_per_s"] / medians["petastorm_examples_per_s"],
        "ratio_ours_to_model": medians["ours_examples_per_s"] / medians["model_examples_per_s"],
        "ratio_petastorm_to_model": medians["petastorm_examples_per_s"] / medians["model_examples_per_s"],
        "runs": {"ours": ours, "model": model, "petastorm": petastorm, "petastorm_reader_only": petastorm_raw},
        "batch_size": cfg.batch_size,
        "batches": args.batches,
        "repeats": args.repeats,
        "shards": as_given(config.shards_uri),
        "rows": {
            "records_train": sum(f.rows for f in manifest.records["train"].positives)
            + sum(f.rows for files in manifest.records["train"].negatives for f in files),
            "parquet_train": sum(f.rows for f in manifest.parquet["train"]),
        },
        "petastorm_versions": result["versions"],
        "load_average_1min_at_end": os.getloadavg()[0],
    }
    write_summary(summary, args.out, args)


if __name__ == "__main__":
    main()
