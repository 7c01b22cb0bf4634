"""Say whether anything is new since the last evaluated model (``tfbs changes``).

Exit code 0: something is new (inputs, the configuration or the model
code's format), or ``LATEST``'s export is gone or damaged, so the pipeline
should run; :data:`NOTHING_NEW` (99, Airflow's skip code): nothing is, and a
scheduled run can end early; :data:`FLOORS_FAILED` (3): a version of exactly
these inputs and settings failed its floors, so retraining would fail again
and nothing is run, but the run must not pass for a quiet skip either: the
DAG fails it, with the reason, every week until something changes (2 stays
the code of a user error). No Spark: only the driver hashes the inputs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __name__ == "__main__":
    # Run as a file: Python put jobs/ first on the path, where
    # jobs/preprocess.py would shadow the preprocess package.
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from tfbs.config import PipelineConfig

#: Exit code when nothing is new (Airflow's BashOperator skips on it by default).
NOTHING_NEW = 99
#: Exit code when a version of exactly these inputs and settings failed its floors: an alarm, not a skip.
FLOORS_FAILED = 3


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--verdict", action="store_true", help="end with the answer as one JSON line")


def run(config: PipelineConfig, args: argparse.Namespace | None = None) -> int:
    """Print what changed since the ``LATEST`` model version; return the exit code."""
    from jobs.common import print_verdict
    from preprocess.changes import changes_since_latest
    from tf_models import MODEL_FORMAT
    from tf_models.model_format import recorded_model_code

    changes = changes_since_latest(config, MODEL_FORMAT, recorded_model_code())
    said = changes.describe()
    print(said)
    if changes.failed is not None:
        # Also on stderr, where a scheduler's alarm (or a reader of the task log) looks for why it failed.
        print(f"error: {said}", file=sys.stderr)
        code, verdict = FLOORS_FAILED, "fail"
    else:
        code, verdict = (0, "go") if changes.anything_new else (NOTHING_NEW, "skip")
    if args is not None and args.verdict:
        print_verdict(verdict, said)
    return code


def main(argv: list[str] | None = None) -> int:
    from jobs.common import stage_answer

    return stage_answer(__doc__, run, argv, extra_arguments=_arguments)


if __name__ == "__main__":
    sys.exit(main())
