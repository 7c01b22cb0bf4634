"""What the model-quality benchmarks share: data sets built once, trainings kept as model versions, JSON results.

A *data set* is the configuration's generated data with some overrides
(another generator seed, a larger training genome), generated and
preprocessed once under ``<work>/<name>/`` (``data/``, ``shards/``); its
shards' manifest there means it is built.

A *run* is one training (``tfbs train``) of a *variant* (a strategy, a
seeding...) with one ``train.seed``, then its evaluation (``tfbs
evaluate``), in the run folder ``<work>/<data set>/<variant>/``. Each seed
is a model version of its own there (:mod:`tfbs.lineage`), and a version
whose ``report.json`` exists is read, not trained again: a benchmark stopped
half way continues where it stopped, and benchmarks that share a run (the
default on the demo's data) train it once. (A version leaves out where it
ran, the strategy included: runs are found by their run folder, never by
version name alone.)

Every stage is a ``tfbs`` subprocess, its output appended to ``stages.log``
in its folder. On a shared machine, ``TFBS_BENCH_PAUSE_FILE=<path>`` holds
each stage back while that file exists (someone needs the machine quiet).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

#: Where the benchmarks' data sets and runs go (``--work-dir``).
DEFAULT_WORK = ROOT / "build" / "bench" / "quality"
#: Where the measured figures go: data, committed with the docs that quote them.
RESULTS = ROOT / "bench" / "results"
#: The three training seeds (``train.seed``) every figure is a mean over.
TRAIN_SEEDS = (17, 18, 19)
#: Generator seeds never used in development (the demo is 7, the tuning set was 8).
FRESH_DATA_SEEDS = (101, 202)

#: strategy -> the ``--set`` overrides that select it.
STRATEGIES: dict[str, tuple[str, ...]] = {
    "local": ("train.placement.strategy=local",),
    "parameter_server": ("train.placement.strategy=parameter_server",),
    "multi_worker_mirrored": ("train.placement.strategy=multi_worker_mirrored",),
}

#: Every run: all versions kept (one per seed), and a weak model is a figure, not a failed stage.
RUN_OVERRIDES = (
    "evaluate.keep_versions=null",
    "evaluate.min_mean_auroc=null",
    "evaluate.min_mean_auprc=null",
    "evaluate.min_auprc_margin=null",
    # A benchmark shares the machine: TF nodes importing TensorFlow on a loaded host take minutes to register.
    "train.placement.reservation_timeout_s=900",
    "train.placement.executors_timeout_s=900",
)


@dataclass(frozen=True)
class DataSet:
    """A generated data set: a name and the overrides (``generate.*``) that make it.

    ``generated=False``: the benchmark puts the data folder in place itself
    (the learning curve cuts one generated set); it is only preprocessed here.
    """

    name: str
    overrides: tuple[str, ...] = ()
    generated: bool = True


@dataclass(frozen=True)
class Variant:
    """What a run trains: a name, its overrides (``train.*``) and its run folder (default: the name).

    Variants that differ in what the model learns (seeding, say) may share a
    folder: each is a model version of its own there, and a variant that is
    the default is then the very run the default's benchmarks read.
    """

    name: str
    overrides: tuple[str, ...] = ()
    folder: str = ""

    @property
    def run_folder(self) -> str:
        return self.folder or self.name


def quality_parser(description: str, results_name: str) -> argparse.ArgumentParser:
    """The command line every quality bench shares: configuration, overrides, training seeds, folders."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--config", default="conf/demo.yaml")
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="passed to every stage")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(TRAIN_SEEDS), help="train.seed values")
    parser.add_argument("--work-dir", type=Path, default=DEFAULT_WORK)
    parser.add_argument("--out", type=Path, default=RESULTS / results_name)
    parser.add_argument(
        "--data", nargs="+", metavar="NAME", help="run these data sets only; the result file keeps the others' runs"
    )
    return parser


def tfbs_stage(stage: str, config: str, overrides: Iterable[str], log_path: Path) -> float:
    """Run ``tfbs <stage>`` with ``overrides``; returns its wall seconds.

    Raises
    ------
    RuntimeError
        If the stage fails; the message ends with the last lines of its log.
    """
    command = [str(ROOT / ".venv" / "bin" / "tfbs"), stage, "--config", config, *(f"--set={o}" for o in overrides)]
    log_path.parent.mkdir(parents=True, exist_ok=True)
    pause_file = os.environ.get("TFBS_BENCH_PAUSE_FILE")
    while pause_file and Path(pause_file).exists():
        time.sleep(30)
    started = time.monotonic()
    with open(log_path, "a") as log:
        log.write(f"\n$ {' '.join(command)}\n")
        log.flush()
        code = subprocess.run(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT).returncode
    if code:
        tail = "".join(log_path.read_text().splitlines(keepends=True)[-15:])
        raise RuntimeError(f"tfbs {stage} failed ({code}); {log_path} ends:\n{tail}")
    return time.monotonic() - started


def data_overrides(data: DataSet, work: Path) -> list[str]:
    """The overrides that point every stage at ``data``'s files and shards."""
    folder = work / data.name
    return [*data.overrides, f"data.root={folder / 'data'}", f"shards_dir={folder / 'shards'}"]


def prepare(data: DataSet, work: Path, config: str, base: Iterable[str] = ()) -> list[str]:
    """Generate and preprocess ``data`` unless its shards are there; returns :func:`data_overrides`."""
    selected = [*base, *data_overrides(data, work)]
    folder = work / data.name
    if not (folder / "shards" / "manifest.json").exists():
        log_path = folder / "stages.log"
        prep = [*selected, f"run_dir={folder / 'prep'}"]
        seconds = tfbs_stage("generate", config, prep, log_path) if data.generated else 0.0
        seconds += tfbs_stage("preprocess", config, prep, log_path)
        print(f"{data.name}: generated and preprocessed in {seconds:.0f} s", file=sys.stderr)
    return selected


def version_of(config: str, overrides: list[str]) -> str:
    """The model version a training with these overrides makes (:class:`tfbs.lineage.Lineage`)."""
    from tf_models import MODEL_FORMAT
    from tf_models.model_format import recorded_model_code
    from tfbs.config import load_config
    from tfbs.formats.manifest import read_manifest
    from tfbs.lineage import Lineage

    loaded = load_config(config, overrides)
    return Lineage.of(loaded, read_manifest(loaded.shards_uri), MODEL_FORMAT, recorded_model_code()).version


def run(
    data: DataSet,
    variant: Variant,
    seed: int,
    work: Path,
    config: str,
    base: Iterable[str] = (),
    known: dict | None = None,
) -> dict:
    """Train (unless trained) and evaluate (unless evaluated) one seed of ``variant`` on ``data``; its record.

    Parameters
    ----------
    known
        A record of this run from an earlier result file: its timings are
        kept when the run is read rather than trained again.

    Returns
    -------
    dict
        ``data``, ``variant``, ``train_seed``, ``version``, ``mean_auprc``,
        per TF/cell ``auprc`` and ``recall_at_fdr_10``, each baseline's
        ``baselines`` auPRC per TF/cell, ``epochs``, ``best_epoch``,
        ``train_seconds`` and ``evaluate_seconds`` (None when unknown).
    """
    run_dir = work / data.name / variant.run_folder
    overrides = [
        *prepare(data, work, config, base),
        *variant.overrides,
        f"train.seed={seed}",
        f"run_dir={run_dir}",
        *RUN_OVERRIDES,
    ]
    version = version_of(config, overrides)
    model_dir = run_dir / "models" / version
    timings = {key: (known or {}).get(key) for key in ("train_seconds", "evaluate_seconds")}
    if not (model_dir / "report" / "report.json").exists():
        log_path = run_dir / "stages.log"
        print(f"{data.name}/{variant.name} seed {seed}: training version {version}", file=sys.stderr)
        timings = {
            "train_seconds": round(tfbs_stage("train", config, overrides, log_path), 1),
            "evaluate_seconds": round(tfbs_stage("evaluate", config, overrides, log_path), 1),
        }
    return record(data.name, variant.name, seed, model_dir, timings)


def record(data: str, variant: str, seed: int, model_dir: Path, timings: dict) -> dict:
    """The figures of one evaluated model version (see :func:`run`)."""
    report = json.loads((model_dir / "report" / "report.json").read_text())
    history = json.loads((model_dir / "history.json").read_text())
    validated = [entry for entry in history if "valid_auprc" in entry]
    best = max(validated, key=lambda entry: entry["valid_auprc"]) if validated else None
    keys = sorted(report["results"])
    baselines = sorted({name for figures in report["baselines"].values() for name in figures})
    return {
        "data": data,
        "variant": variant,
        "train_seed": seed,
        "version": model_dir.name,
        "mean_auprc": report["mean_auprc"],
        "auprc": {key: report["results"][key]["auprc"] for key in keys},
        "recall_at_fdr_10": {key: report["results"][key]["recall_at_fdr_10"] for key in keys},
        "baselines": {
            name: {key: report["baselines"][key][name]["auprc"] for key in keys if name in report["baselines"][key]}
            for name in baselines
        },
        "epochs": len(history),
        "best_epoch": round(best["epoch"], 2) if best else None,
        **timings,
    }


def run_all(
    plan: Iterable[tuple[DataSet, Variant, int]],
    work: Path,
    config: str,
    base: list[str],
    out: Path,
    meta: dict,
    data_sets: list[str] | None = None,
) -> list[dict]:
    """Every run of ``plan`` in order, ``out`` rewritten after each so a stopped benchmark keeps what it measured.

    Records of ``out`` from an earlier invocation lend their timings to runs
    found trained (:func:`run`'s ``known``); those the plan does not cover (a
    run with ``--data`` naming other data sets) are kept, before the plan's.
    ``data_sets``: run the plan's steps on the data sets of these names only.
    """
    plan = [step for step in plan if data_sets is None or step[0].name in data_sets]
    earlier, extra = {}, {}
    if out.exists():
        previous = json.loads(out.read_text())
        earlier = {(r["data"], r["variant"], r["train_seed"]): r for r in previous.get("runs", [])}
        # What a bench adds beside the runs (challenge.py's ensembles) stays until it writes its own.
        extra = {key: value for key, value in previous.items() if key not in {*meta, "runs", "summary"}}
    planned = {(data.name, variant.name, seed) for data, variant, seed in plan}
    kept = [entry for key, entry in earlier.items() if key not in planned]
    records: list[dict] = []
    for data, variant, seed in plan:
        found = run(data, variant, seed, work, config, base, earlier.get((data.name, variant.name, seed)))
        records.append(found)
        print(f"{data.name}/{variant.name} seed {seed}: mean test auPRC {found['mean_auprc']:.3f}", file=sys.stderr)
        write_results(out, {**extra, **meta, "runs": kept + records, "summary": summarise(kept + records)})
    return records


def write_results(out: Path, payload: dict) -> None:
    """Write a result file (JSON, sorted keys) atomically enough for a benchmark: whole or the previous one."""
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_suffix(".json.part")
    partial.write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n")
    partial.replace(out)


def spread(values: list[float]) -> dict:
    """Mean, min, max and count of replicate figures.

    Examples
    --------
    >>> spread([0.7, 0.75, 0.68])
    {'mean': 0.71, 'min': 0.68, 'max': 0.75, 'n': 3}
    """
    return {"mean": round(statistics.fmean(values), 4), "min": min(values), "max": max(values), "n": len(values)}


def tf_means(values: dict[str, float]) -> dict[str, float]:
    """Per TF, the mean over its cells of ``{"TF/cell": value}``.

    Examples
    --------
    >>> tf_means({"CTCF/A": 0.8, "CTCF/B": 0.6, "EGR1/A": 0.9})
    {'CTCF': 0.7, 'EGR1': 0.9}
    """
    by_tf: dict[str, list[float]] = {}
    for key, value in sorted(values.items()):
        by_tf.setdefault(key.split("/")[0], []).append(value)
    return {tf: round(statistics.fmean(v), 4) for tf, v in by_tf.items()}


def summarise(records: list[dict]) -> dict:
    """Per data set and variant: the mean test auPRC's spread over seeds, per TF the same, and the baselines.

    Baselines do not depend on the training seed: their figures are the first run's.

    Returns
    -------
    dict
        ``{"<data>/<variant>": {"mean_auprc": spread, "tf_auprc": {tf: spread}, "key_auprc": {key: spread},
        "tf_recall_at_fdr_10": {tf: spread}, "baselines": {name: {"mean": ..., "tf": {tf: value}}},
        "above_motif_scan": [TF/cells above the scan in every seed, of all]}}``.
    """
    groups: dict[str, list[dict]] = {}
    for found in records:
        groups.setdefault(f"{found['data']}/{found['variant']}", []).append(found)
    summary = {}
    for name, runs in groups.items():
        keys = sorted(runs[0]["auprc"])
        per_tf = [tf_means(r["auprc"]) for r in runs]
        recall = [tf_means(r["recall_at_fdr_10"]) for r in runs]
        scan = runs[0]["baselines"].get("motif_scan", {})
        above = [k for k in keys if k in scan and all(r["auprc"][k] > scan[k] for r in runs)]
        summary[name] = {
            "seeds": [r["train_seed"] for r in runs],
            "mean_auprc": spread([r["mean_auprc"] for r in runs]),
            "tf_auprc": {tf: spread([t[tf] for t in per_tf]) for tf in per_tf[0]},
            "key_auprc": {k: spread([r["auprc"][k] for r in runs]) for k in keys},
            "tf_recall_at_fdr_10": {tf: spread([t[tf] for t in recall]) for tf in recall[0]},
            "baselines": {
                baseline: {"mean": round(statistics.fmean(values.values()), 4), "tf": tf_means(values)}
                for baseline, values in runs[0]["baselines"].items()
            },
            "above_motif_scan": {"in_every_seed": len(above), "of": len(keys)},
        }
    return summary
