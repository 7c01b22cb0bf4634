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
    from tfbs.formats.manifest import Manifest


def run(config: PipelineConfig, args: argparse.Namespace | None = None) -> Manifest:
    """Build the shards and manifest under ``<run_dir>/shards``."""
    from concurrent.futures import ThreadPoolExecutor

    from preprocess.build_shards import build_shards
    from preprocess.fingerprint import check_and_fingerprint
    from tfbs.launch.session import spark_session

    # Checked before the JVM starts; hashed (a 3 GB genome at full size: seconds) while it starts and the build runs.
    with ThreadPoolExecutor(1, thread_name_prefix="tfbs-fingerprint") as pool:
        inputs = check_and_fingerprint(config, pool)
        with spark_session(config.spark, app_suffix="-preprocess") as spark:
            manifest = build_shards(spark, config, inputs)
    print(f"manifest: {config.shards_uri}/manifest.json")
    return manifest


def main(argv: list[str] | None = None) -> int:
    from jobs.common import run_stage

    return run_stage(__doc__, run, argv)


if __name__ == "__main__":
    sys.exit(main())
