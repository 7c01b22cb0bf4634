"""Score a regions file for one TF and cell as a DREAM submission (``tfbs predict``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __name__ == "__main__":
    # Run as a file (`spark-submit jobs/predict.py`): Python put jobs/ first on the
    # path, where jobs/preprocess.py would shadow the preprocess package.
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from tfbs.config import PipelineConfig


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--regions", required=True, help="BED(.gz) of 200 bp regions (ladder or test)")
    parser.add_argument("--tf", required=True, help="TF name in the protein FASTA (seen in training or not)")
    parser.add_argument("--cell", required=True, help="cell type known to the model")
    parser.add_argument(
        "--out", default=None, help="output URI (default: <run_dir>/models/<version>/report/F.<TF>.<CELL>.tab.gz)"
    )
    parser.add_argument(
        "--model-version",
        default=None,
        metavar="V",
        help="score with the model version V of <run_dir>/models (default: the one models/LATEST names)",
    )


def run(config: PipelineConfig, args: argparse.Namespace) -> int:
    """Write the submission, check it against the regions, draw its tracks; returns its number of rows."""
    from tf_models.predict import check_and_draw, predict_regions
    from tfbs.lineage import EXPORT_METADATA, chosen_version, export_uri, report_uri
    from tfbs.session import spark_session
    from tfbs.storage import require, to_uri

    regions = require(to_uri(args.regions), "regions file")
    version = chosen_version(config.run_dir, args.model_version)
    export = export_uri(config.run_dir, version)
    require(f"{export}/{EXPORT_METADATA}", f"exported model of version {version} (run `tfbs train` first)")
    out = to_uri(args.out) if args.out else f"{report_uri(config.run_dir, version)}/F.{args.tf}.{args.cell}.tab.gz"
    with spark_session(config.spark, app_suffix="-predict") as spark:
        count = predict_regions(spark, config, export, regions, args.tf, args.cell, out)
    summary = check_and_draw(config, version, regions, out, args.tf, args.cell, count)
    print(f"submission: {out} ({count} rows, model version {version}), valid against {regions}")
    print(f"track: {summary['bigWig']}")
    if summary["BED"]:
        threshold, called = summary["10% FDR threshold"], summary["bins called"]
        print(f"calls at 10% FDR (probability >= {threshold:.4f}): {summary['BED']} ({called} bins)")
    else:
        print(f"no BED of calls: version {version}'s evaluation has no 10% FDR threshold for {args.tf}/{args.cell}")
    return count


def main(argv: list[str] | None = None) -> int:
    from jobs.common import run_stage

    return run_stage(__doc__, run, argv, extra_arguments=_arguments)


if __name__ == "__main__":
    sys.exit(main())
