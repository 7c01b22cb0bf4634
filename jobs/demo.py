"""Run the whole pipeline on the embedded data set (``tfbs demo``)."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path
from typing import Any

if __name__ == "__main__":
    # Run as a file (`spark-submit jobs/demo.py`): Python put jobs/ first on the
    # path, where jobs/preprocess.py would shadow the preprocess package.
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from tfbs.config import PipelineConfig

log = logging.getLogger("tfbs.demo")


def _predict_genome(config: PipelineConfig, args: argparse.Namespace | None) -> int:
    """Every bin of the genome scored for the report's first TF/cell: a validated submission and tracks."""
    import json

    from jobs import predict
    from tfbs import storage
    from tfbs.lineage import run_report_uri

    report = json.loads(storage.read_text(f"{run_report_uri(config.run_dir)}/report.json"))
    # A held-out cell first: scoring a cell no label trained is what users bring the model for.
    keys = sorted(report["results"], key=lambda key: (key.split("/")[1] not in report.get("heldout_cells", []), key))
    tf_name, cell = keys[0].split("/")
    options = argparse.Namespace(regions=None, tf=tf_name, cell=cell, out=None, model_version=None)
    return predict.run(config, options)


def run(config: PipelineConfig, args: argparse.Namespace | None = None) -> dict:
    """generate -> preprocess -> train -> evaluate -> predict -> explain -> the HTML report; returns the report.

    predict scores every bin of the genome for one TF/cell: a submission
    checked against the genome's bins, a bigWig and a BED of calls.
    """
    from jobs import evaluate, explain, generate, preprocess, report, train
    from tfbs.lineage import run_report_uri

    timings = {}
    stages = (
        ("generate", generate.run),
        ("preprocess", preprocess.run),
        ("train", train.run),
        ("evaluate", evaluate.run),
        ("predict", _predict_genome),
        ("explain", explain.run),
        ("report", report.run),
    )
    outcomes: dict[str, Any] = {}
    for name, stage in stages:
        started = time.monotonic()
        log.info("=== stage %s ===", name)
        outcomes[name] = stage(config, args)
        timings[name] = round(time.monotonic() - started, 1)
        log.info("=== stage %s done in %.1f s ===", name, timings[name])
    log.info("stage timings (s): %s", timings)
    from tf_models.protocol import headline

    print("\nmean test auPRC, 95% intervals over test sites:")
    for line in headline(outcomes["evaluate"]):
        print(f"  {line}")
    print(f"\nreport: {run_report_uri(config.run_dir).removeprefix('file://')}/report.html (report.json beside it)")
    return outcomes["evaluate"]


def main(argv: list[str] | None = None) -> int:
    from jobs.common import run_stage

    return run_stage(__doc__, run, argv)


if __name__ == "__main__":
    sys.exit(main())
