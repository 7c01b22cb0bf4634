"""Benchmark: a TF node's CPU with the collector paused and frozen over TensorFlow's import, against without.

Each process imports TensorFlow through ``tf_models`` (its import hook,
:mod:`tf_models.lean_import`), builds the demo's model and traces and runs
``--steps`` training steps on a random batch: what every TF node, scoring
process and exporting driver does first. The baseline is the same process
with the hook's collector pause and freeze turned into no-ops (``gc.disable``
and ``gc.freeze`` replaced before the import), so the two differ in that
alone. The two run in turn, A B A B ..., and the ratio is taken pair by
pair, so a drift of the machine's speed moves both. Prints and writes
``bench/results/import_gc.json``: each variant's CPU seconds (user +
system, of the finished child) and wall seconds as min, median and max,
and the median of the paired ratios.

    .venv/bin/python bench/import_gc.py --config conf/demo.yaml --pairs 7
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

# The repository root before bench/, as the other benchmarks have it.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.report import result_path, write_summary

REPO = Path(__file__).resolve().parent.parent

#: The measured process: the project's import, the demo's model, a few traced training steps.
NODE_LIFE = """
import sys
if sys.argv[1] == "baseline":
    import gc
    gc.disable = gc.freeze = lambda: None
import tf_models  # the import hook, before TensorFlow, as the project's processes have it
import tensorflow as tf
from tf_models.model import build_model
from tfbs.config import load_config

config = load_config(sys.argv[2], ["train.model.use_expression=false",
                                   "train.model.motif_cnn.expression_products=false"])
model_config, window, batch_size = config.train.model, config.preprocess.window, config.train.batch_size
model = build_model(model_config, 3, window)
optimizer = tf.keras.optimizers.Adam(1e-3)
batch = {"dna": tf.random.uniform([batch_size, window, 4]),
         "proteins": tf.zeros([batch_size, model_config.aa_max_length, 21]),
         "tf_index": tf.zeros([batch_size], tf.int32), "cell_index": tf.zeros([batch_size], tf.int32),
         "dnase": tf.zeros([batch_size])}
labels = tf.cast(tf.random.uniform([batch_size]) > 0.5, tf.float32)

@tf.function
def step():
    with tf.GradientTape() as tape:
        logits = tf.reshape(model(batch, training=True), [-1])
        loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels, logits))
    optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))

for _ in range(int(sys.argv[3])):
    step()
"""

VARIANTS = ("paused", "baseline")


def run_once(variant: str, config: str, steps: int) -> dict[str, float]:
    """One process of ``variant``: its CPU seconds (user + system) and wall seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    subprocess.run(
        [sys.executable, "-c", NODE_LIFE, variant, config, str(steps)], cwd=REPO, env=env, check=True, timeout=600
    )
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"cpu_s": cpu, "wall_s": wall}


def spread(values: list[float]) -> dict[str, float]:
    """Min, median and max, rounded."""
    return {"min": round(min(values), 3), "median": round(statistics.median(values), 3), "max": round(max(values), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="conf/demo.yaml")
    parser.add_argument("--pairs", type=int, default=7, help="A/B pairs, after one warm-up pair not counted")
    parser.add_argument("--steps", type=int, default=30, help="training steps each process traces and runs")
    parser.add_argument("--out", default=result_path("import_gc"))
    args = parser.parse_args()

    for variant in VARIANTS:  # warm-up: the page cache, compiled bytecode
        run_once(variant, args.config, args.steps)
    runs: dict[str, list[dict[str, float]]] = {variant: [] for variant in VARIANTS}
    for pair in range(args.pairs):
        for variant in VARIANTS:
            runs[variant].append(run_once(variant, args.config, args.steps))
        print(f"pair {pair + 1}/{args.pairs}: " + ", ".join(f"{v} {runs[v][-1]['cpu_s']:.2f} CPU s" for v in VARIANTS))
    summary = {
        "what": __doc__.split("\n\n")[0],
        "pairs": args.pairs,
        "steps": args.steps,
        **{
            variant: {key: spread([run[key] for run in runs[variant]]) for key in ("cpu_s", "wall_s")}
            for variant in VARIANTS
        },
        "paused_over_baseline": {
            key: round(statistics.median(a[key] / b[key] for a, b in zip(runs["paused"], runs["baseline"])), 3)
            for key in ("cpu_s", "wall_s")
        },
    }
    write_summary(summary, args.out, args)


if __name__ == "__main__":
    main()
