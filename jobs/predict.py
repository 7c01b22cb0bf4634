"""Score a regions file, or every bin of the genome, for TF/cells as DREAM submissions (``tfbs predict``)."""

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
    parser.add_argument(
        "--regions",
        default=None,
        help="BED(.gz) of 200 bp regions (ladder or test); default: every bin of the genome at 50 bp stride",
    )
    parser.add_argument("--tf", required=True, help="TF name(s) in the protein FASTA, comma-separated (seen or not)")
    parser.add_argument(
        "--cell",
        required=True,
        help="cell type(s), comma-separated: any cell with DNase peaks (one the model was trained on, if it reads the cell type)",
    )
    parser.add_argument(
        "--out",
        default=None,
        help="output URI, for one TF and one cell (default: <run_dir>/models/<version>/report/F.<TF>.<CELL>.tab.gz)",
    )
    parser.add_argument(
        "--model-version",
        default=None,
        metavar="V",
        help="score with the model version V of <run_dir>/models (default: the one models/LATEST names)",
    )


def run(config: PipelineConfig, args: argparse.Namespace) -> int:
    """Write a submission per TF/cell, check each against the regions, draw its tracks; returns the rows of each."""
    from tf_models.kept_baseline import submission_scorers
    from tf_models.predict import Target, predict_targets
    from tf_models.submission_outputs import check_and_draw
    from tfbs.errors import ConfigError
    from tfbs.launch.session import spark_session
    from tfbs.lineage import EXPORT_METADATA, chosen_version, export_uri, report_uri, require_whole_export
    from tfbs.storage import require, to_uri

    regions = require(to_uri(args.regions), "regions file") if args.regions else None
    version = chosen_version(config.run_dir, args.model_version)
    export = export_uri(config.run_dir, version)
    require(f"{export}/{EXPORT_METADATA}", f"exported model of version {version} (run `tfbs train` first)")
    # Damaged metadata or files are refused here, before the JVM starts (else a Spark task fails on them).
    require_whole_export(export)
    pairs = [(tf, cell) for tf in args.tf.split(",") for cell in args.cell.split(",")]
    if args.out and len(pairs) > 1:
        raise ConfigError(f"--out names one submission; {len(pairs)} TF/cells were asked for (leave --out out)")
    targets = [
        Target(
            tf, cell, to_uri(args.out) if args.out else f"{report_uri(config.run_dir, version)}/F.{tf}.{cell}.tab.gz"
        )
        for tf, cell in pairs
    ]
    with spark_session(config.spark, app_suffix="-predict") as spark:
        count = predict_targets(spark, config, export, regions, targets)
    against = regions or f"every bin of {config.data.genome_fasta}"
    scorers = submission_scorers(config, version, [target.tf for target in targets])
    for target in targets:
        scorer = scorers[target.tf]
        summary = check_and_draw(config, version, regions, target.out_uri, target.tf, target.cell, count, scorer)
        print(
            f"submission: {target.out_uri} ({count} rows, model version {version}, scored by {scorer}), "
            f"valid against {against}"
        )
        print(f"track: {summary['bigWig']}")
        if summary["BED"]:
            threshold, called = summary["10% FDR threshold"], summary["bins called"]
            print(f"calls at 10% FDR (probability >= {threshold:.4f}): {summary['BED']} ({called} bins)")
        else:
            print(
                f"no BED of calls: version {version}'s evaluation has no 10% FDR threshold for {target.tf}/{target.cell}"
            )
    return count


def main(argv: list[str] | None = None) -> int:
    from jobs.common import run_stage

    return run_stage(__doc__, run, argv, extra_arguments=_arguments)


if __name__ == "__main__":
    sys.exit(main())
