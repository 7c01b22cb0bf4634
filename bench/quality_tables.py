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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()

    def load(name: str) -> dict | None:
        path = args.results / f"{name}.json"
        return json.loads(path.read_text())["summary"] if path.exists() else None

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
