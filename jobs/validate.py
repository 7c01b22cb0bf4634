"""Check a DREAM submission against its regions file (``tfbs validate``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __name__ == "__main__":
    # Run as a file: Python put jobs/ first on the path, where jobs/preprocess.py
    # would shadow the preprocess package.
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from tfbs.config import PipelineConfig


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--submission", required=True, help="F.<TF>.<CELL>.tab.gz to check")
    parser.add_argument(
        "--regions",
        default=None,
        help="the regions BED(.gz) it answers (ladder or test); default: every bin of the genome (data.genome_fasta)",
    )


def run(config: PipelineConfig, args: argparse.Namespace) -> int:
    """Print that the submission is valid, or stop at its first bad line; returns its number of rows."""
    from tfbs.formats.submission import validate_submission
    from tfbs.storage import to_uri

    submission = to_uri(args.submission)
    regions = to_uri(args.regions) if args.regions else None
    count = validate_submission(submission, regions, config.data.genome_fasta)
    print(f"{submission}: valid: {count} rows, one per region, in order, probabilities in [0, 1]")
    return count


def main(argv: list[str] | None = None) -> int:
    from jobs.common import run_stage

    return run_stage(__doc__, run, argv, extra_arguments=_arguments)


if __name__ == "__main__":
    sys.exit(main())
