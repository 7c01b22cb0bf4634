"""Benchmark: mean test auPRC against the size of the training genome (1x, 2x, 4x, 8x the demo's).

Is the default limited by its data or by its model? One data set is
generated with the demo's configuration and held-out chromosomes (same
names and sizes) and a training genome of 16 chromosomes of 2 Mb. Scale k
trains on the first 2k of them (k = 1: the demo's 4 Mb; the sets are
nested): its label files are the full set's without the other training
chromosomes' rows, every other file is the full set's. So the validation
and test chromosomes are the same bytes at every scale, and only the
training data grows. (Generating each scale anew would not do: the
generator draws sites genome-wide, so longer training chromosomes move the
held-out sites too; a first pass that did so saw the scan move from 0.394 to
0.456 across scales.)

The default configuration trains on each scale once per training seed (17,
18, 19) with the same budget rule (epochs over the positives, early
stopping), and is scored on the test chromosomes beside the baselines.
Training runs in one process by default (``--strategy``): placement is not
part of the recipe, and one process is the fastest on two cores and free of
the asynchronous updates' run-to-run spread.

Writes ``bench/results/learning_curve.json`` (every run, and per scale the
mean test auPRC's mean and range, per TF the same, the baselines) and
``docs/learning-curve.png``. Runs already trained are read
(:mod:`bench.quality_runs`).

    .venv/bin/python bench/learning_curve.py                 # about 1 h on 2 cores
    .venv/bin/python bench/learning_curve.py --plot-only     # redraw the plot from the JSON
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.quality_runs import (  # noqa: E402
    STRATEGIES,
    DataSet,
    Variant,
    data_overrides,
    quality_parser,
    run_all,
    tfbs_stage,
)

SCALES = (1, 2, 4, 8)
#: The training genome, in the order scales take it: scale k trains on the first 2k.
TRAINING_CHROMS = tuple(f"chr{n}" for n in (2, 3, 4, 5, 6, 7, 9, 10, 12, 13, 14, 15, 16, 17, 18, 19))
TRAINING_CHROM_BP = 2_000_000
#: The generated set every scale is cut from.
FULL = "curve_genome"


def full_data(config_path: str, overrides: list[str]) -> DataSet:
    """The generated set: the configuration's held-out chromosomes and the 16 training ones."""
    from tfbs.config import load_config

    config = load_config(config_path, overrides)
    if config.generate is None:
        raise SystemExit(f"{config_path}: no generate section: the learning curve needs generated data")
    held_out = {*config.preprocess.test_chroms, *config.preprocess.valid_chroms}
    chromosomes = {name: size for name, size in config.generate.chromosomes.items() if name in held_out}
    chromosomes.update(dict.fromkeys(TRAINING_CHROMS, TRAINING_CHROM_BP))
    return DataSet(FULL, (f"generate.chromosomes={json.dumps(chromosomes)}",))


def generate_once(full: DataSet, work: Path, config: str, overrides: list[str]) -> Path:
    """Generate ``full`` unless done; returns its data folder."""
    folder = work / full.name
    done = folder / "generated"
    if not done.exists():
        settings = [*overrides, *data_overrides(full, work), f"run_dir={folder / 'prep'}"]
        seconds = tfbs_stage("generate", config, settings, folder / "stages.log")
        print(f"{full.name}: generated in {seconds:.0f} s", file=sys.stderr)
        done.touch()
    return folder / "data"


def cut(full: DataSet, source: Path, work: Path, scale: int) -> DataSet:
    """Scale ``scale``'s data set: ``source``'s files, its label files without the rows past the first 2k chromosomes.

    Every other file is linked, not copied; the label files are written to a
    temporary folder, then renamed, so a stopped cut is redone.
    """
    data = DataSet(f"curve_x{scale}", full.overrides, generated=False)
    target = work / data.name / "data"
    if (target / "labels").is_dir():
        return data
    dropped = set(TRAINING_CHROMS[2 * scale :])
    target.mkdir(parents=True, exist_ok=True)
    for entry in source.iterdir():
        if entry.name != "labels" and not (target / entry.name).exists():
            (target / entry.name).symlink_to(entry)
    partial = target / "labels.part"
    partial.mkdir(exist_ok=True)
    for labels in sorted((source / "labels").iterdir()):
        with gzip.open(labels, "rt") as rows, gzip.open(partial / labels.name, "wt", compresslevel=1) as kept:
            kept.writelines(row for row in rows if row.split("\t", 1)[0] not in dropped)
    partial.rename(target / "labels")
    return data


def plot(results: dict, out: Path) -> None:
    """Mean test auPRC (range over seeds) by training genome, beside the baselines; per TF on the right."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    scales = results["scales"]
    summary = results["summary"]
    names = [f"{s['data']}/{results.get('strategy', 'parameter_server')}" for s in scales]
    present = [(s, summary[n]) for s, n in zip(scales, names) if n in summary]
    megabases = [s["training_mb"] for s, _ in present]
    fig = Figure(figsize=(11, 4.2))
    FigureCanvasAgg(fig)
    left, right = fig.subplots(1, 2)
    mean = [g["mean_auprc"]["mean"] for _, g in present]
    # Clamped: the mean is rounded to 4 places, the range is not (one seed gives -1e-5).
    low = [max(0.0, g["mean_auprc"]["mean"] - g["mean_auprc"]["min"]) for _, g in present]
    high = [max(0.0, g["mean_auprc"]["max"] - g["mean_auprc"]["mean"]) for _, g in present]
    left.errorbar(megabases, mean, yerr=[low, high], marker="o", capsize=4, label="model (mean, range of 3 seeds)")
    for baseline, style in (("oracle", ":"), ("coarse_pwm_reference", "--"), ("motif_scan", "-.")):
        values = [g["baselines"][baseline]["mean"] for _, g in present if baseline in g["baselines"]]
        if len(values) == len(present):
            left.plot(megabases, values, style, color="grey", label=baseline.replace("_", " "))
    left.set(xscale="log", xlabel="training genome (Mb)", ylabel="mean test auPRC (12 TF/cells)", ylim=(0, 1))
    left.set_xticks(megabases, [f"{m:g}" for m in megabases])
    left.minorticks_off()  # the log axis's own labels would overlap the sizes
    left.legend(fontsize="small", loc="lower right")
    left.grid(alpha=0.3)
    for tf in present[0][1]["tf_auprc"]:
        values = [g["tf_auprc"][tf] for _, g in present]
        right.errorbar(
            megabases,
            [v["mean"] for v in values],
            yerr=[[max(0.0, v["mean"] - v["min"]) for v in values], [max(0.0, v["max"] - v["mean"]) for v in values]],
            marker="o",
            capsize=3,
            label=tf,
        )
    right.set(xscale="log", xlabel="training genome (Mb)", ylabel="test auPRC, mean over cells", ylim=(0, 1))
    right.set_xticks(megabases, [f"{m:g}" for m in megabases])
    right.minorticks_off()  # the log axis's own labels would overlap the sizes
    right.legend(fontsize="small", loc="lower right")
    right.grid(alpha=0.3)
    fig.suptitle("Learning curve of the default model (held-out chromosomes fixed, training genome 4-32 Mb)")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)


def main() -> None:
    parser = quality_parser(__doc__.splitlines()[0], "learning_curve.json")
    parser.add_argument("--scales", type=int, nargs="+", default=list(SCALES))
    parser.add_argument("--strategy", choices=sorted(STRATEGIES), default="local")
    parser.add_argument(
        "--plot", type=Path, default=Path(__file__).resolve().parent.parent / "docs" / "learning-curve.png"
    )
    parser.add_argument("--plot-only", action="store_true", help="redraw the plot from --out")
    args = parser.parse_args()
    if not args.plot_only:
        work = args.work_dir.resolve()
        full = full_data(args.config, args.overrides)
        source = generate_once(full, work, args.config, args.overrides)
        default = Variant(args.strategy, STRATEGIES[args.strategy])
        scaled = [cut(full, source, work, scale) for scale in args.scales]
        plan = [(data, default, seed) for data in scaled for seed in args.seeds]
        meta = {
            "benchmark": "learning_curve",
            "strategy": args.strategy,
            "config": args.config,
            "overrides": args.overrides,
            "training_chroms": list(TRAINING_CHROMS),
            "scales": [
                {"scale": scale, "data": data.name, "training_mb": 2 * scale * TRAINING_CHROM_BP / 1e6}
                for scale, data in zip(args.scales, scaled)
            ],
        }
        run_all(plan, work, args.config, args.overrides, args.out, meta, args.data)
    plot(json.loads(args.out.read_text()), args.plot)


if __name__ == "__main__":
    main()
