"""The full ENCODE-DREAM set sized from measurements: each stage on N executors, each figure marked how it was had.

Reads what the benchmarks measured on this machine (an executor here is
its 2 cores):

- ``bench/results/sizing_1gbp.json`` (``bench/sizing.py --size 1gbp``):
  training examples per label row and cell, the ps training rate at 1 and
  2 workers, prediction's end-to-end bins/s, bytes per row;
- ``bench/results/preprocess.json`` (``bench/preprocess.py``, full size):
  one hg19-size label file (56.5 M bins) preprocessed on 2 cores;
- ``bench/results/training_throughput_pinned.json``: how a ps run scales
  from one worker core to two (the exchange's cost).

and the challenge's shape (:data:`CHALLENGE`: hg19's bins from the bundled
chromosome sizes, the TFs, an assumed number of training cells per TF).
Writes ``bench/results/sizing_full_challenge.json`` and prints the table
docs/benchmarks.md holds:

    .venv/bin/python bench/sizing_table.py
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.report import RESULTS, ROOT, result_path, write_summary  # noqa: E402

#: The full set as sized here. ``cells_per_tf`` is an assumption (the
#: challenge's training label files hold one to eight cells each; its table is
#: not bundled), ``test_chroms`` the final round's, scored for each of its
#: 13 TF/cells; ``epochs`` the demo's upper bound (early stopping often ends sooner).
CHALLENGE = {
    "tfs": 13,
    "cells_per_tf": 4,
    "test_chroms": ["chr1", "chr8", "chr21"],
    "final_round_tf_cells": 13,
    "epochs": 10,
    "chrom_sizes": "data/dream/annotations/hg19.autoX.chrom.sizes",
}

#: Executors of 2 cores each, as this machine; training keeps one for the ps and one for the chief.
EXECUTORS = (4, 16, 64)

BIN_BP, STRIDE_BP = 200, 50


def _bins(length: int) -> int:
    return max(0, (length - BIN_BP) // STRIDE_BP + 1)


def _chrom_bins(path: Path) -> dict[str, int]:
    sizes = (line.split("\t") for line in path.read_text().splitlines() if line.strip())
    return {chrom: _bins(int(size)) for chrom, size in sizes}


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.2f} h" if seconds >= 3600 else f"{seconds / 60:.1f} min"


def size_challenge(sizing: dict, preprocess: dict, pinned: dict, chrom_bins: dict[str, int]) -> dict:
    """Each stage's work and wall time on every N of :data:`EXECUTORS`, with how each figure was had."""
    steps = sizing["steps"]
    genome_bins = sum(chrom_bins.values())
    tfs, cells = CHALLENGE["tfs"], CHALLENGE["cells_per_tf"]
    rows = {}

    # Preprocessing: one task reads each label file (stage 0), so files run side by side, one per executor.
    runs = preprocess["runs"]
    per_file_s = sorted(run["steps"]["preprocess"]["wall_s"] for run in runs)[len(runs) // 2]
    rows["preprocess"] = {
        "work": f"{tfs} label files of {preprocess['label_rows'] / 1e6:.1f} M bins",
        "seconds": {n: math.ceil(tfs / n) * per_file_s for n in EXECUTORS},
        "how": f"extrapolated: one hg19-size label file measured at {per_file_s:.0f} s on 2 cores "
        "(bench/results/preprocess.json, 5 cells), the files side by side, one per executor",
    }

    # Training: the examples of an epoch scale with label rows and training cells; the rate with workers.
    preprocessed = steps["preprocess"]
    training_cells = len(sizing["cells"]) - len(sizing["heldout_cells"])
    held = {*sizing["splits"]["test_chroms"], *sizing["splits"]["valid_chroms"]}
    train_bins = sum(_bins(n) for chrom, n in sizing["chromosomes"].items() if chrom not in held)
    per_row_cell = preprocessed["rows_by_split"]["train"] / (train_bins * len(sizing["tfs"]) * training_cells)
    # The challenge's split: chr1, chr8, chr21 tested, chr11 validated (tfbs.formats.dream), the rest trained on.
    full_train_bins = sum(n for chrom, n in chrom_bins.items() if chrom not in {*CHALLENGE["test_chroms"], "chr11"})
    examples = per_row_cell * tfs * full_train_bins * cells
    one_worker = steps["train_1_worker"]["steady_examples_per_s"]
    scaling = pinned["ratio_pinned_ps_2_cores_to_1_core"] / 2  # per worker, with the ps exchange
    rows["train_epoch"] = {
        "work": f"{examples / 1e6:.0f} M examples (batch {steps['train_1_worker']['batch_size']})",
        "seconds": {n: examples / (one_worker * (n - 2) * scaling) for n in EXECUTORS},
        "how": f"extrapolated: {per_row_cell:.4f} training examples per training-chromosome bin, TF and cell "
        "(1 Gbp generated genome, about 1.5 % of bins bound); "
        f"{one_worker:,.0f} examples/s for one worker on 2 cores (measured, ps strategy), times the N - 2 "
        f"workers at {scaling:.2f} of linear each (measured from 1 to 2 pinned cores, "
        "bench/results/training_throughput_pinned.json); one ps, its own limit not measured past 2 workers",
    }
    rows["train_10_epochs"] = {
        "work": f"{CHALLENGE['epochs']} epochs",
        "seconds": {n: CHALLENGE["epochs"] * s for n, s in rows["train_epoch"]["seconds"].items()},
        "how": "extrapolated: the epoch above, times the demo's largest number of epochs",
    }

    # Prediction: end-to-end bins/s of one executor, measured on a whole chromosome, spread over executors.
    predict = steps["predict"]
    bins_per_s = predict["bins"] / predict["wall_s"]
    whole = tfs * cells * genome_bins
    final = CHALLENGE["final_round_tf_cells"] * sum(chrom_bins[c] for c in CHALLENGE["test_chroms"])
    for name, bins, what in (
        ("predict_genome", whole, f"every bin of hg19 ({genome_bins / 1e6:.1f} M) for {tfs * cells} TF/cells"),
        ("predict_final_round", final, "chr1, chr8 and chr21 for the final round's 13 TF/cells"),
    ):
        rows[name] = {
            "work": f"{bins / 1e6:,.0f} M bins: {what}",
            "seconds": {n: bins / (bins_per_s * n) for n in EXECUTORS},
            "how": f"extrapolated: {bins_per_s:,.0f} bins/s end to end on 2 cores (measured, {predict['bins']:,} "
            f"bins of {predict['regions']} on the 1 Gbp genome), executors side by side",
        }
    shard_bytes_per_row_cell = preprocessed["bytes"] / (preprocessed["label_rows"] * len(sizing["cells"]))
    prediction_bytes_per_bin = predict["bytes"] / predict["bins"]
    return {
        "challenge": CHALLENGE,
        "executors": list(EXECUTORS),
        "genome_bins": genome_bins,
        "stages": rows,
        "bytes": {
            "shards": shard_bytes_per_row_cell * preprocess["label_rows"] * tfs * cells,
            "predictions_genome": prediction_bytes_per_bin * whole,
            "how": "extrapolated: bytes per label row and cell of the 1 Gbp shards, per bin of its predictions",
        },
    }


#: Per stage of ``bench/sizing.py``: the rate it reports per core, and its unit.
RATES = {
    "generate": ("label_rows_per_s_per_core", "label rows"),
    "preprocess": ("label_rows_per_s_per_core", "label rows"),
    "train_1_worker": ("examples_per_s_per_core", "examples"),
    "train_2_workers": ("examples_per_s_per_core", "examples"),
    "train_2_workers_hosts": ("examples_per_s_per_core", "examples"),
    "predict": ("bins_per_s_per_core", "bins"),
}


def measured_table(sizes: list[dict]) -> str:
    """Each stage at each measured size: wall time, rate per core, peak RSS, bytes written."""
    lines = [
        "| size | stage | wall | per core | peak RSS (process tree) | on disk |",
        "|---|---|---|---|---|---|",
    ]
    for sizing in sizes:
        label = f"{sizing['size']} ({sizing['genome_bp'] / 1e6:,.0f} Mbp, {len(sizing['tfs'])} TFs x {len(sizing['cells'])} cells)"
        for stage, step in sizing["steps"].items():
            key, unit = RATES[stage]
            extra = f", {step['step_ms']} ms/step" if "step_ms" in step else ""
            lines.append(
                f"| {label} | {stage.replace('_', ' ')} | {step['wall_s']} s | {step[key]:,.0f} {unit}/s{extra} "
                f"| {step['peak_rss_gb']} GB | {step['bytes'] / 1e6:,.1f} MB |"
            )
            label = ""
    return "\n".join(lines)


def markdown(sized: dict) -> str:
    """The full challenge's table of docs/benchmarks.md."""
    head = "| stage | work | " + " | ".join(f"N = {n}" for n in sized["executors"]) + " | how |"
    lines = [head, "|" + "---|" * (len(sized["executors"]) + 3)]
    for name, row in sized["stages"].items():
        times = " | ".join(_hours(row["seconds"][n]) for n in sized["executors"])
        lines.append(f"| {name.replace('_', ' ')} | {row['work']} | {times} | {row['how']} |")
    data = sized["bytes"]
    lines.append(
        f"\nOn disk: shards {data['shards'] / 1e12:.2f} TB, whole-genome predictions "
        f"{data['predictions_genome'] / 1e9:.0f} GB ({data['how']})."
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizing", default=str(RESULTS / "sizing_1gbp.json"), help="the size the table scales")
    parser.add_argument("--also", action="append", default=[str(RESULTS / "sizing_demo.json")], help="more sizes")
    parser.add_argument("--preprocess", default=str(RESULTS / "preprocess.json"))
    parser.add_argument("--pinned", default=str(RESULTS / "training_throughput_pinned.json"))
    parser.add_argument("--out", default=result_path("sizing_full_challenge"))
    args = parser.parse_args()
    sized = size_challenge(
        json.loads(Path(args.sizing).read_text()),
        json.loads(Path(args.preprocess).read_text()),
        json.loads(Path(args.pinned).read_text()),
        _chrom_bins(ROOT / CHALLENGE["chrom_sizes"]),
    )
    sizes = [json.loads(Path(path).read_text()) for path in [*args.also, args.sizing]]
    print(measured_table(sizes), "\n")
    print(markdown(sized))
    write_summary(sized, args.out, args, echo=False)


if __name__ == "__main__":
    main()
