"""Segregate, balance and shard the label data (``tfbs preprocess``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __name__ == "__main__":
    # Run as a file (`spark-submit jobs/preprocess.py`): Python put jobs/ first on the
    # path, where jobs/preprocess.py would shadow the preprocess package.
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from typing import TYPE_CHECKING

from tfbs.config import PipelineConfig

if TYPE_CHECKING:
    from tfbs.manifest import Manifest


def run(config: PipelineConfig, args: argparse.Namespace | None = None) -> Manifest:
    """Build the shards and manifest under ``<run_dir>/shards``."""
    from preprocess.build_shards import build_shards
    from preprocess.inputs import check_preprocess_inputs
    from tfbs.session import spark_session

    check_preprocess_inputs(config.data)  # fail before the JVM starts
    with spark_session(config.spark, app_suffix="-preprocess") as spark:
        manifest = build_shards(spark, config)
    print(f"manifest: {config.shards_uri}/manifest.json")
    return manifest


def main(argv: list[str] | None = None) -> int:
    from jobs.common import run_stage

    return run_stage(__doc__, run, argv)


if __name__ == "__main__":
    sys.exit(main())
