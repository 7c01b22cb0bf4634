"""Benchmark: input pipeline throughput against what the model consumes.

Reads the training record files of a shard directory with the production
input pipeline (decode, one-hot, reverse complement, batching) and times it
alone, then times in-process training steps of the configured model on the
same batches. Prints medians of repeated runs and the ratio
pipeline / model demand (issue 4's target: >= 10x); writes them to
``bench/results/input_pipeline.json``.

    .venv/bin/python bench/input_pipeline.py --config conf/demo.yaml
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import tensorflow as tf

# The repository root before bench/: bench/preprocess.py would otherwise
# shadow the preprocess package when this file is run as a script.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.report import result_path, write_summary
from tf_models.train_loop import TrainingRun, build_training_step
from tfbs.config import load_config
from tfbs.formats.manifest import read_manifest


def rate(dataset: tf.data.Dataset, batches: int, batch_size: int, step=None, warmup: int = 100) -> float:
    """Examples/s over ``batches`` batches of a fresh iterator, after ``warmup`` batches.

    With ``step``, each batch also goes through that training step (the
    model's demand); without, the pipeline alone. The warm-up covers
    tracing, opening files and filling the shuffle buffers; a window of a
    few hundred batches (a tenth of a second at 150,000 examples/s) measured
    mostly what was buffered before it started: rounds varied by a third.
    """
    iterator = iter(dataset)
    for _ in range(warmup):
        batch = next(iterator)
        if step:
            step(batch)
    started = time.perf_counter()
    for _ in range(batches):
        batch = next(iterator)
        if step:
            step(batch)
    return batches * batch_size / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="conf/demo.yaml")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--batches", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=result_path("input_pipeline"))
    args = parser.parse_args()
    config = load_config(args.config, args.overrides)
    run = TrainingRun.from_manifest(read_manifest(config.shards_uri))
    cfg = config.train
    dataset = run.dataset(cfg, cfg.batch_size)

    step = build_training_step(config.train, run)
    pipeline = [rate(dataset, args.batches, cfg.batch_size) for _ in range(args.repeats)]
    model = [rate(dataset, max(20, args.batches // 10), cfg.batch_size, step) for _ in range(args.repeats)]
    result = {
        "pipeline_examples_per_s": statistics.median(pipeline),
        "model_examples_per_s": statistics.median(model),
        "batch_size": cfg.batch_size,
        "repeats": args.repeats,
    }
    result["ratio_pipeline_to_model"] = result["pipeline_examples_per_s"] / result["model_examples_per_s"]
    write_summary(result, args.out, args)


if __name__ == "__main__":
    main()
