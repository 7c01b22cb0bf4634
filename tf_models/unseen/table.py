"""The unseen-TF table: JSON and a bar chart in a report directory.

The JSON follows the report-directory contract: ``{"title", "columns",
"rows", "notes", "images"}``, images relative to the JSON's folder.
"""

from __future__ import annotations

import json

import numpy as np

from tfbs import storage

TITLE = "Unseen TFs: leave-one-TF-out test auPRC per cell"
#: The scorings compared, in table order: (key in the scores, column heading).
CONDITIONS = (
    ("own", "own protein"),
    ("shuffled", "shuffled protein (mean)"),
    ("nearest", "nearest TF's protein"),
    ("motif_scan", "own motif scan"),
    ("seen", "seen-TF model"),
    ("trained", "trained TFs (held-out model)"),
)
#: What the model was given of each protein, as the table names it.
INPUTS = {"full": "whole protein", "dbd": "DNA-binding domain", "family": "family label only"}
#: The data a block was measured on, as the table names it: the run's own data set, where a
#: family member's sites are mostly its lead's, or the family control, whose sites are planted apart.
SITES = {"shared": "shared with family (run data)", "apart": "apart (family control)"}
COLUMNS = [
    "TF",
    "cell",
    "family sites",
    "protein input",
    "nearest TF (identity)",
    *(heading for _, heading in CONDITIONS),
    "shuffled protein (range)",
]
#: Column of the first scoring.
FIRST = 5
JSON_NAME = "unseen.json"
PNG_NAME = "unseen.png"


def table_rows(results: list[dict]) -> list[list]:
    """One row per held-out TF, cell and protein input.

    Parameters
    ----------
    results
        Per held-out TF, protein input and data set: ``{"tf", "input", "sites", "nearest", "identity",
        "auprc": {cell: {condition: auPRC}}}``, the shuffled proteins' under ``shuffled_<i>``.
    """
    rows = []
    for result in results:
        for cell, auprc in sorted(result["auprc"].items()):
            nearest = f"{result['nearest']} ({result['identity']:.2f})"
            shuffles = shuffled_values(auprc)
            summary = {**auprc, "shuffled": float(np.mean(shuffles))} if shuffles else auprc
            scores = (_rounded(summary.get(key)) for key, _ in CONDITIONS)
            spread = f"{min(shuffles):.3f}-{max(shuffles):.3f} ({len(shuffles)})" if shuffles else None
            sites = SITES[result.get("sites", "shared")]
            rows.append([result["tf"], cell, sites, INPUTS[result["input"]], nearest, *scores, spread])
    return rows


def shuffled_values(auprc: dict[str, float]) -> list[float]:
    """The auPRC of each shuffled-protein control of one cell (``shuffled_0``, ``shuffled_1``, ...).

    Examples
    --------
    >>> shuffled_values({"own": 0.5, "shuffled_1": 0.2, "shuffled_0": 0.1})
    [0.1, 0.2]
    """
    keys = sorted((k for k in auprc if k.startswith("shuffled_")), key=lambda k: int(k.rpartition("_")[2]))
    return [auprc[k] for k in keys]


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)


def means(rows: list[list]) -> dict[str, float]:
    """Mean auPRC of each scoring over the rows that have it."""
    out = {}
    for offset, (key, _) in enumerate(CONDITIONS, start=FIRST):
        values = [row[offset] for row in rows if row[offset] is not None]
        if values:
            out[key] = float(np.mean(values))
    return out


def verdict(rows: list[list], margin: float) -> list[str]:
    """Plain notes on rows of one protein input: the means, and whether the protein branch beats its controls.

    The protein branch "adds something" only if the own protein beats the
    shuffled protein by more than ``margin`` on average and in most rows.
    """
    average = means(rows)
    headings = dict(CONDITIONS)
    given = f"{rows[0][3]}, family sites {rows[0][2]}" if rows else ""
    notes = [f"{given}: means " + ", ".join(f"{headings[key]} {value:.3f}" for key, value in average.items()) + "."]
    own, shuffled = average.get("own"), average.get("shuffled")
    if own is None or shuffled is None:
        return notes
    wins = sum(1 for row in rows if row[FIRST] > row[FIRST + 1])
    if own - shuffled > margin and wins > len(rows) / 2:
        notes.append(
            f"{given}: the own protein beats the shuffled protein by {own - shuffled:.3f} on average "
            f"({wins} of {len(rows)} rows): the protein branch carries TF-specific signal to an unseen TF."
        )
    else:
        notes.append(
            f"{given}: the protein branch adds nothing measurable for an unseen TF: its own protein scores "
            f"{own:.3f} against {shuffled:.3f} with its residues shuffled (better in {wins} of {len(rows)} rows, "
            f"margin {margin})."
        )
    if "motif_scan" in average:
        gap = own - average["motif_scan"]
        notes.append(
            f"{given}: unseen-TF scoring is {abs(gap):.3f} {'above' if gap > 0 else 'below'} "
            "the held-out TF's own motif scan on average."
        )
    if "seen" in average:
        notes.append(f"{given}: the model trained with the TF (seen) scores {average['seen'] - own:.3f} more.")
    if "trained" in average:
        notes.append(
            f"{given}: the held-out models score the TFs they trained on {average['trained']:.3f} "
            "(what they learnt where they could)."
        )
    return notes


def family_note(results: list[dict], family_identity: float, margin: float) -> list[str]:
    """What the nearest TF's protein does for held-out TFs that have a family member (identity >= ``family_identity``),
    and what TFs without one get."""
    alone = [r for r in results if r["identity"] < family_identity]
    notes = []
    if alone:
        own = float(np.mean([v["own"] for r in alone for v in r["auprc"].values()]))
        scan = [v["motif_scan"] for r in alone for v in r["auprc"].values() if "motif_scan" in v]
        notes.append(
            f"Held-out TFs without a family member ({', '.join(sorted({r['tf'] for r in alone}))}): own protein "
            f"{own:.3f}" + (f" against their motif scan's {float(np.mean(scan)):.3f}" if scan else "") + ": "
            "with no related protein among the TFs trained on, nothing transfers."
        )
    family = [
        (values["own"], values["shuffled"], values["nearest"])
        for result in results
        if result["identity"] >= family_identity
        for values in result["auprc"].values()
    ]
    if not family:
        return [
            f"No held-out TF has another TF's protein at identity >= {family_identity}: no family to transfer from."
        ]
    own, shuffled, nearest = (float(np.mean(column)) for column in zip(*family))
    tfs = sorted({f"{r['tf']} (via {r['nearest']})" for r in results if r["identity"] >= family_identity})
    note = (
        f"Held-out TFs with a family member ({', '.join(tfs)}): their own protein gives {own:.3f}, "
        f"a shuffled one {shuffled:.3f}, the member's protein {nearest:.3f}."
    )
    if own - shuffled > margin:
        note += " The protein the model never saw carries its family's signal: the branch reads the protein."
        if nearest - own > margin:
            note += " A protein it was trained with still does better."
    elif nearest - own > margin:
        note += (
            " The model transfers through a protein it was trained with, not through the shared DNA-binding "
            "domain: the TF's own protein scores like a shuffled one. The protein branch acts as a TF identifier."
        )
    return [*notes, note]


def write_table(report_dirs: list[str], rows: list[list], notes: list[str], plot) -> str:
    """Write ``unseen.json`` and ``unseen.png`` into each report directory; returns the first JSON's URI.

    Parameters
    ----------
    plot
        ``plot(series, png_path, title)``, e.g. :func:`tf_models.curves_plot.plot_auprc_bars`.
    """
    payload = {"title": TITLE, "columns": COLUMNS, "rows": rows, "notes": notes, "images": [PNG_NAME]}
    several = len({row[3] for row in rows}) > 1
    series: dict[str, dict[str, float]] = {}
    for row in rows:
        # The family control's rows are other data: their bars go under their own TF/cell label.
        label = f"{row[0]}/{row[1]}" + (" (sites apart)" if row[2] == SITES["apart"] else "")
        for offset, (key, heading) in enumerate(CONDITIONS, start=FIRST):
            # The motif scan and the seen model do not depend on the protein input: one bar each.
            name = f"{heading} ({row[3]})" if several and key in ("own", "shuffled", "nearest", "trained") else heading
            if row[offset] is not None:
                series.setdefault(name, {})[label] = row[offset]
    for report_dir in report_dirs:
        storage.write_through_local(f"{report_dir}/{PNG_NAME}", lambda path: plot(series, path, TITLE))
        # The JSON last: it names the image, which is then already there.
        storage.write_text(f"{report_dir}/{JSON_NAME}", json.dumps(payload, indent=2))
    return f"{report_dirs[0]}/{JSON_NAME}"


def control_note(results: list[dict], margin: float) -> list[str]:
    """Family TFs held out on the run's data (sites shared) beside the family control (sites apart), per protein input.

    The run's data lets a family member transfer through the sites it shares
    with its lead; the control plants them apart, so what transfers there
    came through the protein. The protein branch counts as read only if,
    with sites apart, the own protein beats the mean of the shuffled ones by
    more than ``margin`` and beats the best shuffle on average.
    """
    notes = []
    for given in sorted({r["input"] for r in results}):
        apart = [r for r in results if r["input"] == given and r.get("sites") == "apart"]
        tfs = {r["tf"] for r in apart}
        shared = [r for r in results if r["input"] == given and r.get("sites", "shared") == "shared" and r["tf"] in tfs]
        if not apart or not shared:
            continue
        figures = {}
        for name, block in (("shared", shared), ("apart", apart)):
            cells = [v for r in block for v in r["auprc"].values()]
            shuffles = [shuffled_values(v) or [v["shuffled"]] for v in cells]
            figures[name] = {
                "own": float(np.mean([v["own"] for v in cells])),
                "shuffled": float(np.mean([np.mean(s) for s in shuffles])),
                "best_shuffle": float(np.mean([max(s) for s in shuffles])),
                "nearest": float(np.mean([v["nearest"] for v in cells])),
            }
        text = "; ".join(
            f"sites {name}: own {f['own']:.3f}, shuffled {f['shuffled']:.3f} (best shuffle {f['best_shuffle']:.3f}), "
            f"nearest TF's protein {f['nearest']:.3f}"
            for name, f in figures.items()
        )
        control = figures["apart"]
        if control["own"] - control["shuffled"] > margin and control["own"] > control["best_shuffle"]:
            verdict_text = (
                "with no site shared, the own protein still beats every shuffle: transfer goes through the "
                "protein (its family's DNA-binding domain), not only through shared sites."
            )
        else:
            verdict_text = (
                "with no site shared, the own protein does no better than shuffled ones: what transferred on the "
                "run's data came through the sites the family shares, not through reading the protein."
            )
        notes.append(f"{INPUTS[given]}, family TFs held out ({', '.join(sorted(tfs))}): {text}. So {verdict_text}")
    return notes
