"""Score the test chromosomes with the official metrics (``tfbs evaluate``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __name__ == "__main__":
    # Run as a file (`spark-submit jobs/evaluate.py`): Python put jobs/ first on the
    # path, where jobs/preprocess.py would shadow the preprocess package.
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from tfbs.config import PipelineConfig


def run(config: PipelineConfig, args: argparse.Namespace | None = None) -> dict:
    """Write ``<run_dir>/models/<version>/report/report.json`` and curve plots.

    Passing the configured floors moves ``<run_dir>/models/LATEST`` to the
    version and copies its report to ``<run_dir>/report/``.
    """
    from tf_models import MODEL_FORMAT
    from tf_models.evaluate import evaluate
    from tf_models.model_format import recorded_model_code
    from tfbs.formats.manifest import read_manifest
    from tfbs.launch.session import spark_session
    from tfbs.lineage import EXPORT_METADATA, Lineage, export_uri, report_uri, require_lineage, require_whole_export
    from tfbs.storage import require

    # Fail before the JVM starts: no shards, no such version, or no whole and
    # undamaged export (else a truncated file fails in a Spark task).
    manifest = read_manifest(config.shards_uri)
    lineage = require_lineage(config.run_dir, Lineage.of(config, manifest, MODEL_FORMAT, recorded_model_code()))
    export = export_uri(config.run_dir, lineage.version)
    require(f"{export}/{EXPORT_METADATA}", f"exported model of version {lineage.version} (run `tfbs train` first)")
    require_whole_export(export, lineage)
    if config.evaluate.motif_db:  # the baselines read it on the driver once Spark runs
        require(config.evaluate.motif_db, "MEME motif file (evaluate.motif_db)")
    with spark_session(config.spark, app_suffix="-evaluate") as spark:
        report = evaluate(spark, config, manifest)
    print(f"report: {report_uri(config.run_dir, lineage.version)}/report.json (version {lineage.version}, now LATEST)")
    return report


def main(argv: list[str] | None = None) -> int:
    from jobs.common import run_stage

    return run_stage(__doc__, run, argv)


if __name__ == "__main__":
    sys.exit(main())
