"""Remove what a run folder holds that nothing will read again (``tfbs gc``).

Killed writers' leftovers (temporary files, staging and partial folders,
swap asides: :mod:`tfbs.storage.leftovers`) older than ``--older-than``
hours, and model versions past ``evaluate.keep_versions``. ``--older-than
0`` takes every leftover: only when no run of this folder is writing.
"""

from __future__ import annotations

import argparse
import sys
from datetime import timedelta
from pathlib import Path

if __name__ == "__main__":
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from tfbs.config import PipelineConfig


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--older-than",
        type=float,
        default=6.0,
        metavar="HOURS",
        help="leftovers whose newest file is older than this (default: %(default)s; 0: all, no run writing)",
    )
    parser.add_argument("--dry-run", action="store_true", help="list what would go, remove nothing")


def run(config: PipelineConfig, args: argparse.Namespace) -> None:
    """Collect the run folder's garbage and print what went."""
    from tfbs.errors import ConfigError
    from tfbs.gc import collect

    if args.older_than < 0:
        raise ConfigError(f"--older-than: {args.older_than} hours is negative")
    collected = collect(config, timedelta(hours=args.older_than), dry_run=args.dry_run)
    print(collected.describe(removed=not args.dry_run))


def main(argv: list[str] | None = None) -> int:
    from jobs.common import run_stage

    return run_stage(__doc__, run, argv, extra_arguments=_arguments, sweep=False)


if __name__ == "__main__":
    sys.exit(main())
