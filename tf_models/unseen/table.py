"""The unseen-TF table: JSON and a bar chart in a report directory.

The JSON follows the report-directory contract: ``{"title", "columns",
"rows", "notes", "images"}``, images relative to the JSON's folder.
"""

from __future__ import annotations

import json

import numpy as np

from tfbs import uri as storage

TITLE = "Unseen TFs: leave-one-TF-out test auPRC per cell"
#: The scorings compared, in table order: (key in the scores, column heading).
CONDITIONS = (
    ("own", "own protein"),
    ("shuffled", "shuffled protein"),
    ("nearest", "nearest TF's protein"),
    ("motif_scan", "own motif scan"),
    ("seen", "seen-TF model"),
)
COLUMNS = ["TF", "cell", "nearest TF (identity)", *(heading for _, heading in CONDITIONS)]
JSON_NAME = "unseen.json"
PNG_NAME = "unseen.png"


def table_rows(results: list[dict]) -> list[list]:
    """One row per held-out TF and cell.

    Parameters
    ----------
    results
        Per held-out TF: ``{"tf", "nearest", "identity", "auprc": {cell: {condition: auPRC}}}``.
    """
    rows = []
    for result in results:
        for cell, auprc in sorted(result["auprc"].items()):
            nearest = f"{result['nearest']} ({result['identity']:.2f})"
            rows.append([result["tf"], cell, nearest, *(_rounded(auprc.get(key)) for key, _ in CONDITIONS)])
    return rows


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)


def means(rows: list[list]) -> dict[str, float]:
    """Mean auPRC of each scoring over the rows that have it."""
    out = {}
    for offset, (key, _) in enumerate(CONDITIONS, start=3):
        values = [row[offset] for row in rows if row[offset] is not None]
        if values:
            out[key] = float(np.mean(values))
    return out


def verdict(rows: list[list], margin: float) -> list[str]:
    """Plain notes: the means, and whether the protein branch beats its controls.

    The protein branch "adds something" only if the own protein beats the
    shuffled protein by more than ``margin`` on average and in most rows.
    """
    average = means(rows)
    headings = dict(CONDITIONS)
    notes = ["Means: " + ", ".join(f"{headings[key]} {value:.3f}" for key, value in average.items()) + "."]
    own, shuffled = average.get("own"), average.get("shuffled")
    if own is None or shuffled is None:
        return notes
    wins = sum(1 for row in rows if row[3] is not None and row[4] is not None and row[3] > row[4])
    if own - shuffled > margin and wins > len(rows) / 2:
        notes.append(
            f"The own protein beats the shuffled protein by {own - shuffled:.3f} on average "
            f"({wins} of {len(rows)} rows): the protein branch carries some TF-specific signal."
        )
    else:
        notes.append(
            f"The protein branch adds nothing measurable for an unseen TF: its own protein scores "
            f"{own:.3f} against {shuffled:.3f} with its residues shuffled (better in {wins} of {len(rows)} rows, "
            f"margin {margin})."
        )
    if "motif_scan" in average:
        gap = own - average["motif_scan"]
        side = "above" if gap > 0 else "below"
        notes.append(f"Unseen-TF scoring is {abs(gap):.3f} {side} the held-out TF's own motif scan on average.")
    if "seen" in average:
        notes.append(f"The model trained with the TF (seen) scores {average['seen'] - own:.3f} more on average.")
    return notes


def write_table(report_dirs: list[str], rows: list[list], notes: list[str], plot) -> str:
    """Write ``unseen.json`` and ``unseen.png`` into each report directory; returns the first JSON's URI.

    Parameters
    ----------
    plot
        ``plot(series, png_path, title)``, e.g. :func:`tf_models.curves_plot.plot_auprc_bars`.
    """
    payload = {"title": TITLE, "columns": COLUMNS, "rows": rows, "notes": notes, "images": [PNG_NAME]}
    series = {
        heading: {f"{row[0]}/{row[1]}": row[offset] for row in rows if row[offset] is not None}
        for offset, (_, heading) in enumerate(CONDITIONS, start=3)
    }
    for report_dir in report_dirs:
        storage.write_through_local(f"{report_dir}/{PNG_NAME}", lambda path: plot(series, path, TITLE))
        # The JSON last: it names the image, which is then already there.
        storage.write_text(f"{report_dir}/{JSON_NAME}", json.dumps(payload, indent=2))
    return f"{report_dirs[0]}/{JSON_NAME}"
