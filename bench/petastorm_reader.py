"""Benchmark: Petastorm's TensorFlow reader on the training Parquet shards.

Runs only inside ``.venv-petastorm`` (``scripts/petastorm_env.sh``):
Petastorm 0.13.1 needs pyarrow 13, numpy<2 and pandas<2.3. Of this project
it imports only ``bench/report.py`` (standard library), so the project's own
pins never meet Petastorm's.

    bash scripts/petastorm_env.sh
    .venv-petastorm/bin/python bench/petastorm_reader.py \
        --manifest build/demo/run/shards/manifest.json --batch-size 64

``make_batch_reader`` streams the train split's Parquet files (``file://``
URLs, row groups shuffled, forever) with Petastorm's default thread pool,
``make_petastorm_dataset`` turns its row-group batches into a
``tf.data.Dataset``, and then the same per-example work as the project's
input pipeline (``tf_models/input_pipeline.py``) follows: unbatch, shuffle
(8192 examples), batch, then per four batches at once in TensorFlow, as
ours: ``decode_raw`` of the 1-byte-per-base ``sequence`` to channel
indices, reverse complement of a random half of the rows on the indices,
the (batch, window, 4) one-hot, label / TF / cell / DNase features; prefetch.
Examples/s is timed after a warm-up (which also fills the shuffle buffer);
the median of ``--repeats`` fresh readers is reported. Also reported: the
raw reader alone (Petastorm row-group batches, no TensorFlow), rows/s.

Prints JSON and writes it to ``--out`` (default
``bench/results/petastorm_reader.json``).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import tensorflow as tf
from petastorm import make_batch_reader
from petastorm.tf_utils import make_petastorm_dataset

# The repository root, for bench.report (standard library only, so none of the project's pins).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.report import result_path, write_summary  # noqa: E402

#: Columns the model's input needs (what a Petastorm user would select).
FIELDS = ["sequence", "label_code", "tf_index", "cell_index", "dnase"]
DNA_CHANNELS = 4
#: Batches one-hot encoded in one call, as tf_models.input_pipeline.DECODE_BATCHES.
DECODE_BATCHES = 4


def train_parquet_urls(manifest_path: str) -> list[str]:
    """``file://`` URLs of the train split's Parquet files, from the manifest."""
    manifest = json.loads(Path(manifest_path).read_text())
    return [entry["path"] for entry in manifest["parquet"]["train"]]


def _dna_lookup() -> tf.Tensor:
    # The same table as tf_models.encoding.dna_one_hot with two bases per
    # lookup: the one-hots of every byte pair (little-endian uint16), then of
    # its complements; ACGT either case, anything else all zeros.
    single = np.zeros((512, DNA_CHANNELS), dtype=np.float32)
    for index, letter in enumerate("ACGT"):
        for byte in (ord(letter), ord(letter.lower())):
            single[byte, index] = 1.0
            single[256 + byte, DNA_CHANNELS - 1 - index] = 1.0
    first, second = np.arange(1 << 16) % 256, np.arange(1 << 16) // 256
    pairs = [np.concatenate([single[offset + first], single[offset + second]], axis=1) for offset in (0, 256)]
    return tf.constant(np.concatenate(pairs))


def decode(index: tf.Tensor, batch: dict[str, tf.Tensor], window: int, lookup: tf.Tensor, seed: int):
    """Row batch -> model features, as tf_models.input_pipeline._decode_together does.

    A random half of the batch reverse-complemented (reproducibly by batch
    index) in the gather that makes the one-hot, two bases per lookup, as ours.
    """
    raw = tf.reshape(tf.io.decode_raw(batch["sequence"], tf.uint8), [-1, window])
    flip = tf.random.stateless_uniform([tf.shape(raw)[0]], seed=tf.stack([tf.constant(seed, tf.int64), index])) < 0.5
    raw = tf.where(flip[:, None], tf.reverse(raw, axis=[1]), raw)
    codes = tf.cast(tf.bitcast(tf.reshape(raw, [-1, window // 2, 2]), tf.uint16), tf.int32)
    codes += tf.cast(flip, tf.int32)[:, None] * (1 << 16)
    return {
        "dna": tf.reshape(tf.gather(lookup, codes), [-1, window, DNA_CHANNELS]),
        "label": tf.cast(batch["label_code"], tf.float32),
        "tf_index": tf.cast(batch["tf_index"], tf.int32),
        "cell_index": tf.cast(batch["cell_index"], tf.int32),
        "dnase": tf.cast(batch["dnase"], tf.float32),
    }


def petastorm_dataset(reader, batch_size: int, window: int, seed: int, shuffle_buffer: int) -> tf.data.Dataset:
    """Petastorm's row-group batches -> the same decoded, augmented batches as ours."""
    lookup = _dna_lookup()
    rows = make_petastorm_dataset(reader).map(lambda nt: {k: getattr(nt, k) for k in FIELDS}).unbatch()
    # Decoded DECODE_BATCHES batches at a time, as ours (tf_models.input_pipeline.DECODE_BATCHES).
    batches = rows.shuffle(shuffle_buffer, seed=seed).batch(DECODE_BATCHES * batch_size, drop_remainder=True)

    def grouped(index: tf.Tensor, group: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        features = decode(index, group, window, lookup, seed)
        shape = [DECODE_BATCHES, batch_size]
        return {name: tf.reshape(value, tf.concat([shape, tf.shape(value)[1:]], 0)) for name, value in features.items()}

    batches = batches.enumerate().map(grouped, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).unbatch()
    return batches.prefetch(tf.data.AUTOTUNE)


def _reader(urls: list[str], workers: int, seed: int):
    return make_batch_reader(
        urls, schema_fields=FIELDS, num_epochs=None, shuffle_row_groups=True, seed=seed, workers_count=workers
    )


def dataset_rate(urls: list[str], args: argparse.Namespace, seed: int) -> float:
    """Examples/s of the full TF pipeline over one fresh reader, after warm-up."""
    with _reader(urls, args.workers, seed) as reader:
        iterator = iter(petastorm_dataset(reader, args.batch_size, args.window, seed, args.shuffle_buffer))
        for _ in range(args.warmup):
            next(iterator)
        started = time.perf_counter()
        for _ in range(args.batches):
            next(iterator)
        rate = args.batches * args.batch_size / (time.perf_counter() - started)
        # Drop the iterator (and its prefetching) before the reader stops.
        del iterator
        gc.collect()
        return rate


def reader_rate(urls: list[str], args: argparse.Namespace, seed: int) -> float:
    """Rows/s of Petastorm's batch reader alone (no TensorFlow), after warm-up."""
    rows_wanted = args.batches * args.batch_size
    with _reader(urls, args.workers, seed) as reader:
        for _ in range(2):
            next(reader)
        rows, started = 0, time.perf_counter()
        while rows < rows_wanted:
            rows += len(next(reader).sequence)
        return rows / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manifest", required=True)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--window", type=int, default=None, help="default: the manifest's")
    parser.add_argument("--batches", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=10, help="Petastorm reader threads (its default)")
    parser.add_argument("--shuffle-buffer", type=int, default=8192)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default=result_path("petastorm_reader"))
    args = parser.parse_args()
    if args.window is None:
        args.window = json.loads(Path(args.manifest).read_text())["window"]
    urls = train_parquet_urls(args.manifest)

    dataset = [dataset_rate(urls, args, args.seed + r) for r in range(args.repeats)]
    raw = [reader_rate(urls, args, args.seed + r) for r in range(args.repeats)]
    result = {
        "petastorm_examples_per_s": statistics.median(dataset),
        "petastorm_reader_rows_per_s": statistics.median(raw),
        "petastorm_examples_per_s_runs": dataset,
        "petastorm_reader_rows_per_s_runs": raw,
        "parquet_files": len(urls),
        "batch_size": args.batch_size,
        "batches": args.batches,
        "repeats": args.repeats,
        "reader_workers": args.workers,
        "versions": _versions(),
    }
    if args.out:
        write_summary(result, args.out, args)
    else:
        print(json.dumps(result, indent=2))


def _versions() -> dict[str, str]:
    import pandas
    import petastorm
    import pyarrow

    return {
        "petastorm": petastorm.__version__,
        "pyarrow": pyarrow.__version__,
        "numpy": np.__version__,
        "pandas": pandas.__version__,
        "tensorflow": tf.__version__,
    }


if __name__ == "__main__":
    main()
