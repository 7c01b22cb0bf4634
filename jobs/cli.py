"""The ``tfbs`` command: one subcommand per stage, each also a spark-submit job.

tfbs demo                      # generate, preprocess, train, evaluate
tfbs preprocess --config conf/encode_dream_ctcf.yaml --set preprocess.window=1000
"""

from __future__ import annotations

import importlib
import sys

STAGES = (
    "generate",
    "labels",
    "preprocess",
    "changes",
    "ready",
    "train",
    "evaluate",
    "predict",
    "validate",
    "explain",
    "unseen",
    "report",
    "gc",
    "demo",
)


def main(argv: list[str] | None = None) -> int:
    """Dispatch ``tfbs <stage> [options]`` to ``jobs.<stage>.main``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in STAGES:
        print(f"usage: tfbs {{{','.join(STAGES)}}} [--config FILE] [--set KEY=VALUE ...]", file=sys.stderr)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    job = importlib.import_module(f"jobs.{argv[0]}")
    return job.main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
