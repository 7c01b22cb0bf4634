"""Run the whole pipeline on the embedded data set (``tfbs demo``)."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

if __name__ == "__main__":
    # Run as a file (`spark-submit jobs/demo.py`): Python put jobs/ first on the
    # path, where jobs/preprocess.py would shadow the preprocess package.
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from tfbs.config import PipelineConfig

log = logging.getLogger("tfbs.demo")


def run(config: PipelineConfig, args: argparse.Namespace | None = None) -> dict:
    """generate -> preprocess -> train -> evaluate -> explain -> the HTML report; returns the report."""
    from jobs import evaluate, explain, generate, preprocess, report, train
    from tfbs.lineage import run_report_uri

    timings = {}
    stages = (
        ("generate", generate),
        ("preprocess", preprocess),
        ("train", train),
        ("evaluate", evaluate),
        ("explain", explain),
        ("report", report),
    )
    outcomes = {}
    for name, stage in stages:
        started = time.monotonic()
        log.info("=== stage %s ===", name)
        outcomes[name] = stage.run(config, args)
        timings[name] = round(time.monotonic() - started, 1)
        log.info("=== stage %s done in %.1f s ===", name, timings[name])
    log.info("stage timings (s): %s", timings)
    print(f"\nreport: {run_report_uri(config.run_dir).removeprefix('file://')}/report.html (report.json beside it)")
    return outcomes["evaluate"]


def main(argv: list[str] | None = None) -> int:
    from jobs.common import run_stage

    return run_stage(__doc__, run, argv)


if __name__ == "__main__":
    sys.exit(main())
