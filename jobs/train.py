"""Train the TFBS model with TensorFlowOnSpark (``tfbs train``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __name__ == "__main__":
    # Run as a file (`spark-submit jobs/train.py`): Python put jobs/ first on the
    # path, where jobs/preprocess.py would shadow the preprocess package.
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from tfbs.config import PipelineConfig


def run(config: PipelineConfig, args: argparse.Namespace | None = None) -> dict:
    """Train on the shards; export to ``<run_dir>/models/<version>/export``.

    A version already trained from these shards and this ``train`` section
    is not trained again, and no Spark starts.
    """
    from tf_models.train import train_on_spark
    from tf_models.training_launch import training_master, training_needs
    from tf_models.versions import prepare_version, up_to_date_summary
    from tfbs.formats.manifest import read_manifest
    from tfbs.launch.session import spark_session
    from tfbs.lineage import export_uri
    from tfbs.storage import is_remote, local_path

    # Fail, or find the model up to date, before the JVM starts.
    manifest = read_manifest(config.shards_uri)
    lineage, up_to_date = prepare_version(config, manifest)
    if up_to_date:
        print(f"model: {export_uri(config.run_dir, lineage.version)} (version {lineage.version}, up to date)")
        return up_to_date_summary(config, lineage)
    with spark_session(
        config.spark,
        master=training_master(config),
        app_suffix="-train",
        needs=training_needs(config),
        scratch_dir=None if is_remote(config.run_dir) else local_path(config.run_dir),
    ) as spark:
        summary = train_on_spark(spark, config, manifest, claimed=lineage)
    print(f"model: {export_uri(config.run_dir, summary['version'])} (version {summary['version']})")
    return summary


def main(argv: list[str] | None = None) -> int:
    from jobs.common import run_stage

    return run_stage(__doc__, run, argv)


if __name__ == "__main__":
    sys.exit(main())
