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
floors, and writes them to ``bench/results/preprocess.json``. With
``--rounds N`` all of it runs N times, the floors again in every round (they
move by 10 % from run to run), and the median ratio is reported. Each
``--variant NAME=SETTING`` (a ``--set`` of its own, e.g.
``small_blocks=preprocess.read_block_mb=4``) preprocesses once more
per round, right after the default, and is reported as its own ratio to the
round's floor and to the default. Run from the repository root::

    .venv/bin/python bench/preprocess.py --config conf/encode_dream_ctcf.yaml --reuse-labels --rounds 3 \
        --variant small_blocks=preprocess.read_block_mb=4
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
from pathlib import Path

# The repository root, for bench.report: run as a script, only bench/ is on the path.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.measure import measure  # noqa: E402
from bench.report import result_path, write_summary  # noqa: E402
from tfbs.config import load_config  # noqa: E402
from tfbs.storage import local_path  # noqa: E402


def _preprocess(tfbs: str, settings: str, shards: str, n_rows: int, tf: str) -> dict:
    """Time ``tfbs preprocess`` into a fresh ``shards`` folder and check that its manifest accounts for every row."""
    subprocess.run(["rm", "-rf", shards], check=True)
    step = measure(f"{tfbs} preprocess {settings} --set shards_dir={shlex.quote(shards)}")
    manifest = json.loads(Path(shards, "manifest.json").read_text())
    assert manifest["inputs"][tf]["input_rows"] == n_rows, "the manifest does not account for every input row"
    step["shard_bytes"] = sum(f.stat().st_size for f in Path(shards).rglob("*") if f.is_file())
    return step


def _round(
    tfbs: str,
    settings: str,
    variants: dict[str, str],
    labels: str,
    annotations: list[str],
    shards: str,
    n_rows: int,
    tf: str,
) -> dict:
    """One round: the two floors, the default preprocessing, then each variant's."""
    steps = {
        "floor_zcat": measure(f"zcat {shlex.quote(labels)} > /dev/null"),
        "floor_bedtools": measure(
            f"zcat {shlex.quote(labels)} | tail -n +2 | cut -f 1-3 | "
            f"bedtools intersect -a stdin -b {' '.join(map(shlex.quote, annotations))} -wa -wb > /dev/null"
        ),
        "preprocess": _preprocess(tfbs, settings, shards, n_rows, tf),
    }
    for name, setting in variants.items():
        steps[name] = _preprocess(tfbs, f"{settings} --set {shlex.quote(setting)}", shards, n_rows, tf)
    for step in steps.values():
        step["rows_per_s"] = round(n_rows / step["wall_s"])
    floor, default = steps["floor_bedtools"]["wall_s"], steps["preprocess"]["wall_s"]
    return {
        "steps": steps,
        "ratio_to_zcat": round(default / steps["floor_zcat"]["wall_s"], 2),
        "ratio_to_bedtools": round(default / floor, 2),
        **{f"{name}_ratio_to_bedtools": round(steps[name]["wall_s"] / floor, 2) for name in variants},
        **{f"{name}_to_default": round(steps[name]["wall_s"] / default, 2) for name in variants},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="conf/encode_dream_ctcf.yaml")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--reuse-labels", action="store_true", help="keep an existing label file")
    parser.add_argument("--rounds", type=int, default=1, help="times to run the floors and preprocessing")
    parser.add_argument(
        "--variant", action="append", default=[], help="NAME=SETTING: preprocess once more per round with SETTING"
    )
    parser.add_argument("--out", default=result_path("preprocess"))
    args = parser.parse_args()
    config = load_config(args.config, args.overrides)
    variants = dict(variant.split("=", 1) for variant in args.variant)
    tfbs = shlex.quote(str(Path(sys.executable).with_name("tfbs")))
    settings = f"--config {shlex.quote(args.config)} " + " ".join(f"--set {shlex.quote(o)}" for o in args.overrides)
    (tf,) = config.data.tfs  # one TF: the floors are per label file
    labels = local_path(config.data.labels_uri(tf))
    labels_step = None
    if not (args.reuse_labels and Path(labels).exists()):
        labels_step = measure(f"{tfbs} labels {settings}")
    n_rows = int(subprocess.check_output(f"zcat {shlex.quote(labels)} | wc -l", shell=True)) - 1

    annotations = [local_path(config.data.dnase_peaks_uri(cell)) for cell in config.data.cells or []]
    if config.data.blacklist:
        annotations.append(local_path(config.data.blacklist))
    shards = f"{local_path(config.run_dir)}/bench-shards"
    rounds = [_round(tfbs, settings, variants, labels, annotations, shards, n_rows, tf) for _ in range(args.rounds)]
    subprocess.run(["rm", "-rf", shards], check=True)
    medians = {key: statistics.median(run[key] for run in rounds) for key in rounds[0] if key != "steps"}
    summary = {
        "label_rows": n_rows,
        "cells": config.data.cells,
        **({"labels": labels_step} if labels_step else {}),
        "runs": rounds,
        **{f"median_{key}": value for key, value in medians.items()},
    }
    write_summary(summary, args.out, args)


if __name__ == "__main__":
    main()
