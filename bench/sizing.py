"""Benchmark: every stage of the pipeline at one size, the figures the full challenge is sized from.

At a named size (``--size``: the demo's data, or a generated genome of about
1 Gbp with the demo's 4 TFs x 3 cells), in one run on this machine's cores,
each stage as a user runs it (a ``tfbs`` subprocess):

- ``generate``: the genome, DNase, ChIP-seq peaks, RNA-seq and the label files;
- ``preprocess``: the shards;
- ``train``: ``--steps`` steps of the configuration's training (ps, two
  workers), its steady examples/s read from the chief's history as
  ``bench/training_throughput.py`` reads it;
- ``predict``: one TF/cell over every bin of one test chromosome (or its
  first ``--predict-mb`` Mbp), end to end: the genome-wide figure is that
  rate over all the genome's bins (extrapolated, and said so).

For each: wall time, peak RSS of the process tree, bytes written, and its
rate per core (rows, examples or bins per second over this machine's
cores). Writes ``bench/results/sizing_<size>.json``;
``bench/sizing_table.py`` turns the sizes' files into the full challenge's
table in docs/benchmarks.md.

    .venv/bin/python bench/sizing.py --size demo
    .venv/bin/python bench/sizing.py --size 1gbp
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import sys
from pathlib import Path

# The repository root before bench/: bench/preprocess.py would otherwise
# shadow the preprocess package when this file is run as a script.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.measure import bytes_under, measure  # noqa: E402
from bench.report import ROOT, result_path, write_summary  # noqa: E402
from bench.training_throughput import steady_rate  # noqa: E402
from tfbs.config import load_config  # noqa: E402
from tfbs.storage import local_path  # noqa: E402

#: Four of hg19's chromosomes at their own sizes and two of the test ones:
#: 1.02 Gbp, training on chr2 and chr3, validating on chr11, testing on chr1,
#: chr8 and chr21 as the challenge did.
GBP_CHROMOSOMES = {
    "chr1": 249_250_621,
    "chr2": 243_199_373,
    "chr3": 198_022_430,
    "chr8": 146_364_022,
    "chr11": 135_006_516,
    "chr21": 48_129_895,
}

#: Size -> the overrides of conf/demo.yaml that make it (its folders apart).
SIZES: dict[str, list[str]] = {
    "demo": [],
    "1gbp": [f"generate.chromosomes={json.dumps(GBP_CHROMOSOMES)}"],
}

#: Bins of the challenge's grid: 200 bp, every 50 bp.
BIN_BP, STRIDE_BP = 200, 50


def _bins(length: int) -> int:
    return max(0, (length - BIN_BP) // STRIDE_BP + 1)


def write_regions(path: Path, chrom: str, length: int) -> int:
    """Every bin of the first ``length`` bp of ``chrom``, as a regions BED.gz; the number of bins."""
    n = _bins(length)
    with gzip.open(path, "wt", compresslevel=1) as out:
        for start in range(0, n * STRIDE_BP, STRIDE_BP):
            out.write(f"{chrom}\t{start}\t{start + BIN_BP}\n")
    return n


def _per_core(count: int, seconds: float, cores: int) -> float:
    return round(count / seconds / cores, 1)


def _timed_training(args: argparse.Namespace) -> list[str]:
    """The overrides of a training timed over ``--steps`` (validation small: it is outside the timed windows)."""
    return [
        f"--set=train.steps={args.steps}",
        f"--set=train.checkpoint_every_steps={args.window_steps}",
        "--set=train.validation_examples=1024",
    ]


def _training_figures(run_dir: Path, batch_size: int, cores: int) -> dict:
    """Steady examples/s of the one version trained in ``run_dir``, its step time and the bytes of its model."""
    (model_dir,) = [path.parent for path in (run_dir / "models").glob("*/lineage.json")]
    rate = steady_rate(json.loads((model_dir / "history.json").read_text()), batch_size)
    return {
        "batch_size": batch_size,
        "steady_examples_per_s": round(rate, 1),
        "examples_per_s_per_core": round(rate / cores, 1),
        "step_ms": round(1000 * batch_size / rate, 2),
        "bytes": bytes_under(model_dir),
    }


def _train_on_hosts(args: argparse.Namespace, work: Path, settings: list[str], shards: Path, batch_size: int) -> dict:
    """Two workers across the namespace hosts (hadoop/hosts.py): a Spark standalone master on ``master``,
    a worker on each node, the driver on ``gateway``; the hosts share this machine's file system and cores."""
    import pyspark

    sys.path.insert(0, str(ROOT / "hadoop"))
    from hosts import GATEWAY, HostCluster

    run_dir = work / "train_2_workers_hosts"
    command = [sys.executable, "-m", "jobs.train", *settings, f"--set=run_dir={run_dir}", f"--set=shards_dir={shards}"]
    with HostCluster(work / "hosts") as cluster:
        master = cluster.start_spark(Path(pyspark.__file__).parent)
        command += [f"--set=spark.master={master}", *_timed_training(args)]
        print(f"{args.size}: train_2_workers_hosts on {master} ...", file=sys.stderr, flush=True)
        result = measure(cluster.command(GATEWAY, command), log=work / "logs" / "train_2_workers_hosts.log",
                         env=cluster.host_env(), cwd=ROOT)  # fmt: skip
        cluster.stop_spark()
    cores = len(os.sched_getaffinity(0))
    return result | _training_figures(run_dir, batch_size, cores) | {"workers": 2, "hosts": True}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), required=True)
    parser.add_argument("--config", default="conf/demo.yaml")
    parser.add_argument("--steps", type=int, default=1000, help="training steps timed")
    parser.add_argument("--window-steps", type=int, default=200, help="the chief's history window")
    parser.add_argument("--predict-chrom", default="chr21", help="the test chromosome predict scores")
    parser.add_argument("--predict-mb", type=float, default=None, help="only its first Mbp (default: all of it)")
    parser.add_argument("--hosts", action="store_true", help="also train across the namespace hosts (root)")
    parser.add_argument("--work-dir", default="build/sizing", help="data and runs, per size (replaced)")
    parser.add_argument("--out", default=None, help="default: bench/results/sizing_<size>.json")
    args = parser.parse_args()

    work = (ROOT / args.work_dir / args.size).resolve()
    shutil.rmtree(work, ignore_errors=True)
    (work / "logs").mkdir(parents=True)
    overrides = [*SIZES[args.size], f"data.root={work / 'data'}", f"run_dir={work / 'run'}"]
    config = load_config(args.config, overrides)
    cores = len(os.sched_getaffinity(0))
    tfbs = str(Path(sys.executable).with_name("tfbs"))
    settings = ["--config", args.config, *[f"--set={o}" for o in overrides]]

    def stage(name: str, *extra: str, log_name: str = "") -> dict:
        label = log_name or name
        print(f"{args.size}: {label} ...", file=sys.stderr, flush=True)
        result = measure([tfbs, name, *settings, *extra], log=work / "logs" / f"{label}.log")
        print(f"{args.size}: {label} {result}", file=sys.stderr, flush=True)
        return result

    steps: dict[str, dict] = {}
    steps["generate"] = stage("generate")
    genome_bp = sum(config.generate.chromosomes.values())
    steps["generate"] |= {"genome_bp": genome_bp, "bytes": bytes_under(Path(local_path(config.data.root)))}

    steps["preprocess"] = stage("preprocess")
    shards = Path(local_path(config.shards_dir))
    manifest = json.loads((shards / "manifest.json").read_text())
    # Every label file's data rows, as preprocessing counted them (bins x TFs; the cells are columns).
    label_rows = sum(entry["input_rows"] for entry in manifest["inputs"].values())
    steps["generate"] |= {
        "label_rows": label_rows,
        "label_rows_per_s_per_core": _per_core(label_rows, steps["generate"]["wall_s"], cores),
    }
    split_rows = {
        split: sum(outcome["kept"].get(split, {}).get(label, 0) for by_cell in manifest["counts"].values()
                   for outcome in by_cell.values() for label in ("B", "U"))
        for split in ("train", "valid", "test")
    }  # fmt: skip
    steps["preprocess"] |= {
        "label_rows": label_rows,
        "rows_by_split": split_rows,
        "bytes": bytes_under(shards),
        "label_rows_per_s_per_core": _per_core(label_rows, steps["preprocess"]["wall_s"], cores),
    }

    train_runs: dict[str, Path] = {}
    for workers in (1, 2):
        name = f"train_{workers}_worker{'s' if workers > 1 else ''}"
        run_dir = work / name
        train_runs[name] = run_dir
        steps[name] = stage(
            "train",
            f"--set=run_dir={run_dir}",
            f"--set=shards_dir={shards}",
            f"--set=train.placement.num_workers={workers}",
            *_timed_training(args),
            log_name=name,
        )
        steps[name] |= _training_figures(run_dir, config.train.batch_size, cores) | {
            "workers": workers,
            "train_examples_per_epoch": split_rows["train"],
        }
    if args.hosts:
        steps["train_2_workers_hosts"] = _train_on_hosts(args, work, settings, shards, config.train.batch_size)

    tf, cell = config.data.tfs[0], config.data.heldout_cells[0] if config.data.heldout_cells else config.data.cells[0]
    length = config.generate.chromosomes[args.predict_chrom]
    if args.predict_mb:
        length = min(length, int(args.predict_mb * 1e6))
    regions = work / "regions.bed.gz"
    n_bins = write_regions(regions, args.predict_chrom, length)
    out = work / "predict" / f"F.{tf}.{cell}.tab.gz"
    model_run = train_runs["train_2_workers"]
    (version,) = [path.parent.name for path in (model_run / "models").glob("*/lineage.json")]
    steps["predict"] = stage(
        "predict",
        f"--set=run_dir={model_run}",
        f"--set=shards_dir={shards}",
        *("--model-version", version, "--tf", tf, "--cell", cell),
        *("--regions", str(regions), "--out", f"file://{out}"),
    )
    genome_bins = sum(_bins(n) for n in config.generate.chromosomes.values())
    steps["predict"] |= {
        "tf_cell": f"{tf}/{cell}",
        "regions": f"{args.predict_chrom}:0-{length}",
        "bins": n_bins,
        "bins_per_s_per_core": _per_core(n_bins, steps["predict"]["wall_s"], cores),
        "bytes": bytes_under(out.parent),
        "genome_bins": genome_bins,
        "genome_hours_extrapolated": round(genome_bins / (n_bins / steps["predict"]["wall_s"]) / 3600, 2),
    }
    summary = {"size": args.size, "genome_bp": genome_bp, "tfs": manifest["tfs"], "cells": manifest["cells"],
               "heldout_cells": manifest["heldout_cells"], "chromosomes": dict(config.generate.chromosomes),
               "splits": manifest["splits"], "cores": cores, "steps": steps}  # fmt: skip
    write_summary(summary, args.out or result_path(f"sizing_{args.size}"), args)


if __name__ == "__main__":
    main()
