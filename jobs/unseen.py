"""Leave-one-TF-out: score TFs the model never saw, beside controls (``tfbs unseen``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __name__ == "__main__":
    # Run as a file: Python put jobs/ first on the path, where
    # jobs/preprocess.py would shadow the preprocess package.
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from tfbs.config import PipelineConfig


def run(config: PipelineConfig, args: argparse.Namespace | None = None) -> dict:
    """Train once per held-out TF on the others' shards; write ``unseen.json`` beside the LATEST report.

    Run after ``tfbs demo`` (or train and evaluate): it reads the shards'
    manifest and the LATEST version's report, and writes that report's page
    again with the table in it. With ``unseen.family_control`` it first
    generates and preprocesses the family control's data set (up to date:
    nothing to do).
    """
    from jobs import generate, preprocess, report
    from tf_models.unseen.run import family_control_config, run_unseen
    from tfbs.formats.manifest import read_manifest

    control = None
    if config.unseen.family_control:
        control_config = family_control_config(config)
        generate.run(control_config)
        preprocess.run(control_config)
        control = (control_config, read_manifest(control_config.shards_uri))
    result = run_unseen(config, read_manifest(config.shards_uri), control)
    print(f"unseen: {result['uri']}")
    report.run(config)
    return result


def main(argv: list[str] | None = None) -> int:
    from jobs.common import run_stage

    return run_stage(__doc__, run, argv)


if __name__ == "__main__":
    sys.exit(main())
