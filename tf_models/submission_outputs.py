"""What predict leaves beside a submission: its check, its browser tracks and its row of the report."""

from __future__ import annotations

import json

from tf_models.protocol import JOINED
from tf_models.tracks import write_tracks
from tfbs import storage
from tfbs.config import PipelineConfig
from tfbs.formats.genome import read_fai
from tfbs.formats.submission import validate_submission
from tfbs.lineage import report_uri

#: The report section predict fills (tf_models/report/collect.py draws it).
PREDICTIONS_SECTION = "predictions.json"
_SECTION_COLUMNS = [
    "TF/cell",
    "scorer",
    "regions",
    "rows",
    "10% FDR threshold",
    "bins called",
    "submission",
    "bigWig",
    "BED",
]


def record_prediction(report_dir: str, row: dict) -> None:
    """Put one submission's summary in the version's ``predictions.json`` report section.

    ``row`` holds the values of ``_SECTION_COLUMNS`` by name; files in
    ``report_dir`` are shown by name. An earlier row of the same TF/cell is
    replaced.
    """
    uri = f"{report_dir}/{PREDICTIONS_SECTION}"
    section = json.loads(storage.read_text(uri)) if storage.exists(uri) else {}
    rows = [r for r in section.get("rows", []) if r[0] != row["TF/cell"]]
    # Files beside the report by name, so that the page's table fits its width.
    shown = {k: v.removeprefix(f"{report_dir}/") if isinstance(v, str) else v for k, v in row.items()}
    rows.append([shown[column] for column in _SECTION_COLUMNS])
    section = {
        "title": "Predictions",
        "columns": _SECTION_COLUMNS,
        "rows": sorted(rows),
        "notes": [
            "Each submission was checked against its regions file as the challenge checked it (tfbs validate).",
            "The BED holds the bins at or above the score with 10% FDR on the held-out test chromosomes.",
            f"Scorer {JOINED}: the network joined to the gradient-boosted baseline its evaluation fitted "
            "(the probability of their mean log-odds); model: the network alone.",
        ],
        "images": [],
    }
    storage.write_text(uri, json.dumps(section, indent=2))


def check_and_draw(
    config: PipelineConfig,
    version: str,
    regions_uri: str | None,
    out_uri: str,
    tf_name: str,
    cell: str,
    count: int,
    scorer: str = "model",
) -> dict:
    """After prediction: validate the submission, draw its tracks, add it to the report.

    Parameters
    ----------
    regions_uri
        The regions file the submission answers; None for every bin of the
        genome (``config.data.genome_fasta``).
    scorer
        What wrote the submission (:func:`tf_models.kept_baseline.submission_scorers`):
        its 10 % FDR threshold calls the bins.

    Returns
    -------
    dict
        The row of the version's ``predictions.json`` section.

    Raises
    ------
    BadInputError
        If the submission breaks a rule of the challenge (tfbs.formats.submission).
    """
    validate_submission(out_uri, regions_uri, config.data.genome_fasta)
    sizes = {chrom: entry.length for chrom, entry in read_fai(config.data.genome_fasta).items()}
    report_dir = report_uri(config.run_dir, version)
    tracks = write_tracks(out_uri, sizes, f"{report_dir}/report.json", tf_name, cell, scorer)
    row = {"TF/cell": f"{tf_name}/{cell}", "scorer": scorer, "regions": regions_uri or "genome", "rows": count}
    row["submission"] = out_uri
    row |= {"10% FDR threshold": tracks["threshold"], "bins called": tracks["called"]}
    row |= {"bigWig": tracks["bigwig"], "BED": tracks["bed"]}
    record_prediction(report_dir, row)
    return row
