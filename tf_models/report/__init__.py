"""The report of a model version as one self-contained HTML page.

``<run_dir>/models/<version>/report/report.html`` shows the evaluation (per
TF/cell PR and ROC curves of the model beside its baselines, the summary
table), the training history, the shards' class balance and accounting, the
model's lineage and any optional section another stage put beside
``report.json`` (``unseen.json``, ``motifs.json``, ``predictions.json``:
each ``{"title", "columns", "rows", "notes", "images"}``). ``page.json``
beside it holds the same values (figures left out).

Evaluate writes the page after ``report.json``; ``tfbs report`` writes it
again when other stages have added their sections.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from tf_models.report.collect import SECTION_FILES, collect
from tf_models.report.html import render
from tfbs import lineage, storage

log = logging.getLogger("tfbs.report")

#: The page, and the JSON behind it, in a version's report directory.
REPORT_HTML = "report.html"
PAGE_JSON = "page.json"

__all__ = ["PAGE_JSON", "REPORT_HTML", "SECTION_FILES", "collect", "render", "write_html_report"]


def _without_figures(page: dict[str, Any]) -> dict[str, Any]:
    """The page's values with the base64 figures replaced by nothing (they are in the HTML)."""
    sections = {
        name: {**section, "images": [image["name"] for image in section.get("images", [])]}
        for name, section in page["sections"].items()
    }
    return {**{k: v for k, v in page.items() if k != "baselines_png"}, "sections": sections}


def write_html_report(
    run_dir: str,
    version: str,
    manifest: Any = None,
    read_manifest: Callable[[str], Any] | None = None,
    table_uris: Callable[[str], dict[str, str]] | None = None,
    copy_to_run: bool = False,
) -> str:
    """Write ``report.html`` and ``page.json`` into the version's report directory.

    Parameters
    ----------
    run_dir, version
        The run and the evaluated model version.
    manifest
        The shard manifest (object, dict or JSON text), for the class balance
        and accounting; if None, ``read_manifest`` reads the lineage's shards.
    read_manifest
        ``shards_uri -> manifest`` (``tfbs.formats.manifest.read_manifest``).
    table_uris
        ``tf -> {baseline: URI}`` of the generator's per-bin tables
        (``DataConfig.generator_table_uris``), to draw the oracle's and the
        coarse-PWM reference's curves.
    copy_to_run
        Also copy both files to ``<run_dir>/report/`` (for a version that is
        ``LATEST``; evaluate's promotion copies them itself).

    Returns
    -------
    str
        The URI of ``report.html``.

    Raises
    ------
    MissingInputError
        If the version has no ``report.json``.
    """
    page = collect(run_dir, version, manifest, read_manifest, table_uris)
    report_dir = lineage.report_uri(run_dir, version)
    targets = [report_dir] + ([lineage.run_report_uri(run_dir)] if copy_to_run else [])
    text, values = render(page), json.dumps(_without_figures(page), indent=1, sort_keys=True, default=str)
    for target in targets:
        storage.write_text(f"{target}/{PAGE_JSON}", values)
        storage.write_text(f"{target}/{REPORT_HTML}", text)
    log.info("report page: %s/%s (%d kB)", report_dir, REPORT_HTML, len(text) // 1024)
    return f"{report_dir}/{REPORT_HTML}"
