"""What a model version learned: attributions, motifs, TOMTOM matches and logos (``tfbs explain``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __name__ == "__main__":
    # Run as a file (`spark-submit jobs/explain.py`): Python put jobs/ first on the
    # path, where jobs/preprocess.py would shadow the preprocess package.
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from tfbs.config import PipelineConfig


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model-version",
        default=None,
        metavar="V",
        help="explain the model version V of <run_dir>/models (default: the one models/LATEST names)",
    )


def run(config: PipelineConfig, args: argparse.Namespace | None = None) -> dict:
    """Write ``motifs.json`` for the version; returns its table."""
    from tf_models.explain.run import explain_version
    from tfbs.launch.session import spark_session
    from tfbs.lineage import chosen_version, report_uri

    version = chosen_version(config.run_dir, getattr(args, "model_version", None))
    with spark_session(config.spark, app_suffix="-explain") as spark:
        table = explain_version(spark, config, version)
    columns = table["columns"]
    for row in table["rows"]:
        print("  ".join(f"{c}={v:.3g}" if isinstance(v, float) else f"{c}={v}" for c, v in zip(columns, row)))
    print(f"motifs: {report_uri(config.run_dir, version)}/motifs.json (model version {version})")
    return table


def main(argv: list[str] | None = None) -> int:
    from jobs.common import run_stage

    return run_stage(__doc__, run, argv, extra_arguments=_arguments)


if __name__ == "__main__":
    sys.exit(main())
