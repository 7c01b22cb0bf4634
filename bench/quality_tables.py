"""The tables of docs/model-quality.md, printed as Markdown from the benchmarks' JSON under bench/results/.

Every model figure is the mean over training seeds with its range in
brackets; baselines do not depend on the training seed.

    .venv/bin/python bench/quality_tables.py            # every table whose JSON is there
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.quality_runs import RESULTS  # noqa: E402
from tf_models.protocol import JOINED  # noqa: E402

#: Baselines in table order, with their headings.
BASELINES = (("motif_scan", "motif scan"), ("coarse_pwm_reference", "coarse-PWM reference"), ("oracle", "oracle"))


def spread_text(figure: dict) -> str:
    """``0.712 (0.698-0.731)``: a mean and its range over seeds.

    Examples
    --------
    >>> spread_text({"mean": 0.7123, "min": 0.698, "max": 0.7311, "n": 3})
    '0.712 (0.698-0.731)'
    """
    return f"{figure['mean']:.3f} ({figure['min']:.3f}-{figure['max']:.3f})"


def markdown(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def per_tf_table(summary: dict, groups: list[tuple[str, str]]) -> str:
    """Per group (a data set, a strategy...) and TF: the model's figure beside each baseline and the gaps."""
    rows = []
    for label, name in groups:
        if name not in summary:
            continue
        group = summary[name]
        for index, tf in enumerate([*group["tf_auprc"], "mean"]):
            model = group["mean_auprc"] if tf == "mean" else group["tf_auprc"][tf]
            baselines = {
                key: (values["mean"] if tf == "mean" else values["tf"][tf])
                for key, values in group["baselines"].items()
            }
            scan, oracle = baselines.get("motif_scan"), baselines.get("oracle")
            rows.append(
                [
                    label if index == 0 else "",
                    f"**{tf}**" if tf == "mean" else tf,
                    spread_text(model),
                    *(f"{baselines[key]:.3f}" if key in baselines else "-" for key, _ in BASELINES),
                    f"{model['mean'] - scan:+.3f}" if scan is not None else "-",
                    f"{oracle - model['mean']:.3f}" if oracle is not None else "-",
                ]
            )
    header = ["data", "TF", "model", *(heading for _, heading in BASELINES), "model - scan", "oracle - model"]
    return markdown(header, rows)


def variants_table(summary: dict, groups: list[tuple[str, str]]) -> str:
    """Per group: the mean test auPRC and each TF's, as mean (range); TF/cells above the scan in every seed."""
    present = [(label, summary[name]) for label, name in groups if name in summary]
    if not present:
        return ""
    tfs = list(present[0][1]["tf_auprc"])
    rows = [
        [
            label,
            spread_text(group["mean_auprc"]),
            *(spread_text(group["tf_auprc"][tf]) for tf in tfs),
            f"{group['above_motif_scan']['in_every_seed']} of {group['above_motif_scan']['of']}",
        ]
        for label, group in present
    ]
    return markdown(["", "mean test auPRC", *tfs, "above the scan (every seed)"], rows)


def _by_data_set(summary: dict, variant: str) -> list[tuple[str, str]]:
    """``(label, summary key)`` of ``variant`` on each data set, the demo's first."""
    data_sets = sorted({name.split("/")[0] for name in summary}, key=lambda n: (n != "demo", n))
    return [
        ("demo (seed 7)" if d == "demo" else f"seed {d.removeprefix('seed')}", f"{d}/{variant}")
        for d in data_sets
        if f"{d}/{variant}" in summary
    ]


#: The challenge tables' scorers, in column order, with their headings.
CHALLENGE_SCORERS = (
    ("model", "model"),
    (JOINED, "model + boosted"),
    ("boosted", "gradient-boosted"),
    ("dnase_motif", "motif x DNase"),
    ("dnase", "DNase alone"),
    ("motif_scan", "motif scan"),
    ("coarse_pwm_reference", "coarse-PWM ref."),
    ("oracle", "oracle"),
)


def interval_text(interval: dict | None, signed: bool = False) -> str:
    """``0.512 (0.470-0.551)``, or ``-`` (:func:`tf_models.protocol.format_interval`)."""
    from tf_models.protocol import format_interval

    return format_interval(interval, signed) if interval else "-"


def challenge_table(ensembles: dict) -> str:
    """Per data set, group of cells and TF: every scorer's mean test auPRC with its interval over test sites."""
    rows = []
    for data, ensemble in sorted(ensembles.items(), key=lambda item: (item[0] != "demo", item[0])):
        label = "demo (seed 7)" if data == "demo" else f"seed {data.removeprefix('seed')}"
        groups = ensemble["groups"]
        for group in ("held-out cells", "training cells"):
            tfs = sorted(
                name.removesuffix(f" {group}") for name in groups if name.endswith(f" {group}") and name != group
            )
            for index, tf in enumerate([*tfs, "mean"]):
                entry = groups[group if tf == "mean" else f"{tf} {group}"]
                rows.append(
                    [
                        label if index == 0 and group == "held-out cells" else "",
                        group if index == 0 else "",
                        f"**{tf}**" if tf == "mean" else tf,
                        *(interval_text(entry["auprc"].get(name)) for name, _ in CHALLENGE_SCORERS),
                        f"{entry['best_baseline']} {interval_text(entry['model_minus_best'], signed=True)}",
                    ]
                )
    header = ["data", "cells", "TF", *(heading for _, heading in CHALLENGE_SCORERS), "model - best baseline"]
    return markdown(header, rows)


def runs_table(ensembles: dict) -> str:
    """Per data set: the model's mean test auPRC over the held-out and the training cells, mean (range) over trainings."""
    rows = []
    for data, ensemble in sorted(ensembles.items(), key=lambda item: (item[0] != "demo", item[0])):
        spread = ensemble["runs_spread"]
        rows.append(
            [
                "demo (seed 7)" if data == "demo" else f"seed {data.removeprefix('seed')}",
                ", ".join(str(s) for s in ensemble["train_seeds"]),
                *(
                    f"{spread[g]['model']['mean']:.3f} ({spread[g]['model']['min']:.3f}-{spread[g]['model']['max']:.3f})"
                    for g in ("held-out cells", "training cells")
                ),
            ]
        )
    return markdown(["data", "training seeds", "held-out cells", "training cells"], rows)


def gap_table(data_sets: dict) -> str:
    """Per data set and cell held out: the boosted baseline seen and held out, and both gaps with intervals."""
    rows = []
    for data, cells in data_sets.items():
        for index, (cell, figures) in enumerate(cells.items()):
            rows.append(
                [
                    data if index == 0 else "",
                    cell,
                    interval_text(figures["seen_auprc"]),
                    interval_text(figures["heldout_auprc"]),
                    interval_text(figures["same_cell_gap"], signed=True),
                    interval_text(figures["training_cells_auprc"]),
                    interval_text(figures["across_cells_gap"], signed=True),
                ]
            )
    header = [
        "data",
        "cell held out",
        "its auPRC, labels seen",
        "held out",
        "gap (same cell)",
        "training cells",
        "gap (training - held out)",
    ]
    return markdown(header, rows)


#: bench/boosted_ablation.py's variants, in table order: every feature first.
ABLATION_ORDER = ("full", "no_expression", "no_partner_motifs", "centre_only", "motif_dnase")


def ablation_table(ablation: dict) -> str:
    """Per data set and group of cells: the boosted baseline with each group of features dropped, and the full one minus it."""
    rows = []
    for data, result in ablation.items():
        if not isinstance(result, dict) or "groups" not in result:
            continue
        for group in ("held-out cells", "training cells"):
            figures = result["groups"][group]
            variants = [v for v in ABLATION_ORDER if v in result["n_features"]]
            for index, variant in enumerate(variants):
                minus = figures["full_minus"].get(variant)
                rows.append(
                    [
                        data if index == 0 and group == "held-out cells" else "",
                        group if index == 0 else "",
                        f"{variant} ({result['n_features'][variant]})",
                        interval_text(figures["auprc"][variant]),
                        interval_text(minus, signed=True) if minus else "",
                    ]
                )
    return markdown(["data", "cells", "features (count)", "mean test auPRC", "full - this"], rows)


def candidates_table(candidates: dict[str, dict]) -> str:
    """Per candidate model (bench/challenge.py's output): each training's group means, their averaged
    predictions' group means and the model minus the boosted baseline with its interval."""
    rows = []
    for name, result in candidates.items():
        for data, ensemble in result["ensembles"].items():
            runs = [r for r in result["runs"] if r["data"] == data]
            for group in ("held-out cells", "training cells"):
                entry = ensemble["groups"][group]
                rows.append(
                    [
                        name,
                        data,
                        ", ".join(str(r["train_seed"]) for r in runs),
                        group,
                        ", ".join(f"{v:.3f}" for v in _group_means(runs, ensemble, group)),
                        interval_text(entry["auprc"]["model"]),
                        interval_text(entry["auprc"]["boosted"]),
                        interval_text(entry["model_minus_best"], signed=True) + f" ({entry['best_baseline']})",
                        _joined_text(ensemble, group),
                    ]
                )
    header = [
        "candidate",
        "data",
        "seeds",
        "cells",
        "each training",
        "averaged",
        "boosted",
        "averaged - best baseline",
        "joined to boosted: each training; averaged - boosted",
    ]
    return markdown(header, rows)


def _joined_text(ensemble: dict, group: str) -> str:
    """The model joined to the boosted baseline (:func:`tf_models.protocol.joined_probability`): its trainings' range, and
    the averaged predictions' minus the boosted baseline; ``-`` for results scored before the joined scorer."""
    spread = ensemble.get("runs_spread", {}).get(group, {}).get(JOINED)
    minus = ensemble["groups"][group].get("joined_minus_boosted")
    if not (spread and minus):
        return "-"
    return f"{spread['min']:.3f}-{spread['max']:.3f}; {interval_text(minus, signed=True)}"


def joined_controls_table(controls: dict) -> str:
    """Per candidate and group of cells (bench/joined_controls.py's output): the boosted baseline, and joined to
    it the network, the motif scan and the DNase-weighted match, each minus the boosted baseline."""
    seconds = ("model", "motif_scan", "dnase_motif")
    rows = []
    for name, result in controls.items():
        if not isinstance(result, dict) or "groups" not in result:
            continue
        for group in ("held-out cells", "training cells"):
            figures = result["groups"][group]
            rows.append(
                [
                    name if group == "held-out cells" else "",
                    group,
                    interval_text(figures["auprc"]["boosted"]),
                    *(interval_text(figures["minus_boosted"][f"boosted+{second}"], signed=True) for second in seconds),
                ]
            )
    header = ["candidate", "cells", "boosted", "+ network", "+ motif scan", "+ motif x DNase"]
    return markdown(header, rows)


def _group_means(runs: list[dict], ensemble: dict, group: str) -> list[float]:
    keys = ensemble["groups"][group]["keys"]
    return [sum(r["auprc"][key] for key in keys) / len(keys) for r in runs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()

    def load(name: str) -> dict | None:
        path = args.results / f"{name}.json"
        return json.loads(path.read_text())["summary"] if path.exists() else None

    def load_whole(name: str) -> dict | None:
        path = args.results / f"{name}.json"
        return json.loads(path.read_text()) if path.exists() else None

    if (challenge := load_whole("challenge")) is not None and challenge.get("ensembles"):
        print("## The challenge's protocol: held-out and training cells\n")
        print(challenge_table(challenge["ensembles"]) + "\n")
        print(runs_table(challenge["ensembles"]) + "\n")
    if (gap := load_whole("heldout_gap")) is not None:
        print("## A held-out cell is harder: the boosted baseline, each cell held out in turn\n")
        print(gap_table(gap["data_sets"]) + "\n")
    if (ablation := load_whole("boosted_ablation")) is not None:
        print("## What the boosted baseline's lead rests on (a tuning seed)\n")
        print(ablation_table(ablation) + "\n")
    candidates = {
        path.stem: json.loads(path.read_text()) for path in sorted((args.results / "candidates").glob("*.json"))
    }
    if candidates and challenge is not None:
        # The default beside them: bench/challenge.py's own runs of the demo.
        demo = [r for r in challenge["runs"] if r["data"] == "demo"]
        candidates = {"default": {"runs": demo, "ensembles": {"demo": challenge["ensembles"]["demo"]}}, **candidates}
        print("## Candidate models on the tuning data\n")
        print(candidates_table(candidates) + "\n")
    if (controls := load_whole("joined_controls")) is not None:
        print("## The boosted baseline joined with a second scorer, minus the boosted baseline (the tuning data)\n")
        print(joined_controls_table(controls) + "\n")
    if (tuning := load_whole("boosted_tuning")) is not None:
        print("## The boosted baseline's tuning (mean validation auPRC over the tuning seeds)\n")
        rows = [[*(str(r[k]) for k in tuning["best"]), f"{r['mean']:.4f}"] for r in tuning["mean_valid_auprc"]]
        print(markdown([*tuning["best"], "mean validation auPRC"], rows) + "\n")
        print(f"frozen: {tuning['frozen_settings']}; reproduced: {tuning['reproduced']}\n")
    if (repeats := load_whole("repeat_runs")) is not None and repeats.get("group_spread"):
        print("## The same command and seed, again\n")
        rows = [
            [strategy, group, ", ".join(f"{v:.3f}" for v in figures["runs"]), f"{figures['max'] - figures['min']:.3f}"]
            for strategy, groups in repeats["group_spread"].items()
            for group, figures in groups.items()
        ]
        print(markdown(["strategy", "cells", "model mean test auPRC per run", "range"], rows) + "\n")
    seeding = load("seeding")
    if (fresh := load("fresh_data")) is not None:
        print("## The default on the demo's data and on fresh data\n")
        print(per_tf_table(fresh, _by_data_set(fresh, "parameter_server")) + "\n")
    if seeding is not None:
        print("## Seeding\n")
        for data in sorted({name.split("/")[0] for name in seeding}, key=lambda n: (n != "demo", n)):
            starts = [(start, f"{data}/{start}") for start in ("unseeded", "planted", "other_tfs")]
            print(f"### {data}\n")
            print(variants_table(seeding, starts) + "\n")
    if (strategies := load("model_quality")) is not None:
        print("## Strategies (demo data)\n")
        names = ("local", "parameter_server", "multi_worker_mirrored")
        print(variants_table(strategies, [(n, f"demo/{n}") for n in names]) + "\n")
    if (curve := load("learning_curve")) is not None:
        meta = json.loads((args.results / "learning_curve.json").read_text())
        print("## Learning curve\n")
        strategy = meta.get("strategy", "parameter_server")
        groups = [(f"x{s['scale']} ({s['training_mb']:g} Mb)", f"{s['data']}/{strategy}") for s in meta["scales"]]
        print(variants_table(curve, groups) + "\n")
        print(per_tf_table(curve, groups) + "\n")


if __name__ == "__main__":
    main()
