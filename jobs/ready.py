"""Say whether the label files a run reads are all there (``tfbs ready``).

The files are ``<data.labels_dir>/<TF>.train.labels.tsv.gz`` for each TF of
``data.tfs``, or those given with ``--labels`` (paths or URIs); local, HDFS
(an unreachable name node fails the look in seconds) or any storage the
stages read. Exit code 0: every one exists; :data:`NOT_READY` (75, ``EX_TEMPFAIL``:
try again later): some are missing, each named. With ``--verdict`` the last
line is the answer as JSON for a scheduler (the DAG's sensor):
``{"verdict": "go" | "wait", "reason": ..., "labels": [...], "missing": [...]}``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __name__ == "__main__":
    # Run as a file: Python put jobs/ first on the path, where jobs/preprocess.py
    # would shadow the preprocess package.
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from tfbs.config import PipelineConfig

#: Exit code when a label file is missing (sysexits' EX_TEMPFAIL: try again later).
NOT_READY = 75


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--labels", nargs="*", default=[], help="the label files to look for (default: every TF's)")
    parser.add_argument("--verdict", action="store_true", help="end with the answer as one JSON line")


def run(config: PipelineConfig, args: argparse.Namespace) -> int:
    """Print which label files are there and which are missing; return the exit code."""
    from jobs.common import print_verdict
    from tfbs.storage import exists, to_uri

    labels = [to_uri(label) for label in args.labels] or [config.data.labels_uri(tf) for tf in config.data.tfs]
    missing = [uri for uri in labels if not exists(uri)]
    if missing:
        reason = f"waiting for {len(missing)} of {len(labels)} label files: {', '.join(missing)}"
    else:
        reason = f"all {len(labels)} label files are there: {', '.join(labels)}"
    print(reason)
    if args.verdict:
        print_verdict("wait" if missing else "go", reason, labels=labels, missing=missing)
    return NOT_READY if missing else 0


def main(argv: list[str] | None = None) -> int:
    from jobs.common import stage_answer

    return stage_answer(__doc__, run, argv, extra_arguments=_arguments)


if __name__ == "__main__":
    sys.exit(main())
