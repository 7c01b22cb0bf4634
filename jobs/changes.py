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


def run(config: PipelineConfig, args: argparse.Namespace | None = None) -> int:
    """Print what changed since the ``LATEST`` model version; return the exit code."""
    from preprocess.changes import changes_since_latest
    from tf_models import MODEL_FORMAT
    from tf_models.model_format import recorded_model_code

    changes = changes_since_latest(config, MODEL_FORMAT, recorded_model_code())
    print(changes.describe())
    if changes.failed is not None:
        # Also on stderr, where a scheduler's alarm (or a reader of the task log) looks for why it failed.
        print(f"error: {changes.describe()}", file=sys.stderr)
        return FLOORS_FAILED
    return 0 if changes.anything_new else NOTHING_NEW


def main(argv: list[str] | None = None) -> int:
    from jobs.common import run_stage

    answer: list[int] = []
    code = run_stage(__doc__, lambda config, args: answer.append(run(config, args)), argv)
    # A user error (exit 2) wins; otherwise the answer is the exit code.
    return answer[0] if code == 0 and answer else code


if __name__ == "__main__":
    sys.exit(main())
