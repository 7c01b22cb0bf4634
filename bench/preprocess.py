"""Benchmark: full-size preprocessing against the zcat and bedtools floors.

Builds the label file with ``tfbs labels`` (unless it exists and
``--reuse-labels`` is given), then in the same run times:

- ``zcat``: one decompression pass over the label file, output discarded;
- ``bedtools``: ``zcat | bedtools intersect -wa -wb`` of every bin against
  the blacklist and every cell's DNase peaks, the interval work of
  preprocessing done by bedtools alone in one pass;
- ``tfbs preprocess`` into a fresh shard directory.

Prints wall time, input rows per second and peak memory (RSS summed over the
process tree, sampled) for each, and the ratios of preprocessing to the
floors, and writes them to ``bench/results/preprocess.json``. Run from the
repository root::

    .venv/bin/python bench/preprocess.py --config conf/encode_dream_ctcf.yaml --reuse-labels
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from pathlib import Path

# The repository root, for bench.report: run as a script, only bench/ is on the path.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.measure import measure  # noqa: E402
from bench.report import result_path, write_summary  # noqa: E402
from tfbs.config import load_config  # noqa: E402
from tfbs.storage import local_path  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="conf/encode_dream_ctcf.yaml")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--reuse-labels", action="store_true", help="keep an existing label file")
    parser.add_argument("--out", default=result_path("preprocess"))
    args = parser.parse_args()
    config = load_config(args.config, args.overrides)
    tfbs = shlex.quote(str(Path(sys.executable).with_name("tfbs")))
    settings = f"--config {shlex.quote(args.config)} " + " ".join(f"--set {shlex.quote(o)}" for o in args.overrides)
    (tf,) = config.data.tfs  # one TF: the floors are per label file
    labels = local_path(config.data.labels_uri(tf))
    results = {}
    if not (args.reuse_labels and Path(labels).exists()):
        results["labels"] = measure(f"{tfbs} labels {settings}")
    n_rows = int(subprocess.check_output(f"zcat {shlex.quote(labels)} | wc -l", shell=True)) - 1

    annotations = [local_path(config.data.dnase_peaks_uri(cell)) for cell in config.data.cells or []]
    if config.data.blacklist:
        annotations.append(local_path(config.data.blacklist))
    results["floor_zcat"] = measure(f"zcat {shlex.quote(labels)} > /dev/null")
    results["floor_bedtools"] = measure(
        f"zcat {shlex.quote(labels)} | tail -n +2 | cut -f 1-3 | "
        f"bedtools intersect -a stdin -b {' '.join(map(shlex.quote, annotations))} -wa -wb > /dev/null"
    )
    shards = f"{local_path(config.run_dir)}/bench-shards"
    subprocess.run(["rm", "-rf", shards], check=True)
    results["preprocess"] = measure(f"{tfbs} preprocess {settings} --set shards_dir={shlex.quote(shards)}")
    manifest = json.loads(Path(shards, "manifest.json").read_text())
    assert manifest["inputs"][tf]["input_rows"] == n_rows, "the manifest does not account for every input row"

    for step in results.values():
        step["rows_per_s"] = round(n_rows / step["wall_s"])
    summary = {
        "label_rows": n_rows,
        "cells": manifest["cells_by_tf"][tf],
        "steps": results,
        "ratio_to_zcat": round(results["preprocess"]["wall_s"] / results["floor_zcat"]["wall_s"], 2),
        "ratio_to_bedtools": round(results["preprocess"]["wall_s"] / results["floor_bedtools"]["wall_s"], 2),
    }
    write_summary(summary, args.out, args)


if __name__ == "__main__":
    main()
