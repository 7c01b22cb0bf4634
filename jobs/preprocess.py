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
    from concurrent.futures import ThreadPoolExecutor

    from preprocess.build_shards import build_shards
    from preprocess.fingerprint import input_fingerprint
    from preprocess.inputs import check_preprocess_inputs
    from tfbs.session import spark_session

    cells_by_tf = check_preprocess_inputs(config.data)  # fail before the JVM starts
    # The inputs are hashed (a 3 GB genome at full size: seconds) while the JVM starts.
    with ThreadPoolExecutor(1, thread_name_prefix="tfbs-fingerprint") as pool:
        fingerprint = pool.submit(input_fingerprint, config, cells_by_tf)
        with spark_session(config.spark, app_suffix="-preprocess") as spark:
            manifest = build_shards(spark, config, fingerprint.result())
    print(f"manifest: {config.shards_uri}/manifest.json")
    return manifest


def main(argv: list[str] | None = None) -> int:
    from jobs.common import run_stage

    return run_stage(__doc__, run, argv)


if __name__ == "__main__":
    sys.exit(main())
