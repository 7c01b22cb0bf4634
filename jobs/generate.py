"""Write the embedded ENCODE-DREAM-format data set (``tfbs generate``)."""

from __future__ import annotations

import argparse
import json
import sys

from tfbs.config import ConfigError, PipelineConfig


def run(config: PipelineConfig, args: argparse.Namespace | None = None) -> dict:
    """Generate the data set the configuration's ``generate`` section describes."""
    from preprocess.synthetic.generate import generate_dataset

    if config.generate is None:
        raise ConfigError(f"{config.source}: generate: section missing (needed by `tfbs generate`)")
    summary = generate_dataset(config.generate, config.data)
    print(json.dumps(summary.get("baseline", {}), indent=2))
    return summary


def main(argv: list[str] | None = None) -> int:
    from jobs.common import run_stage

    return run_stage(__doc__, run, argv)


if __name__ == "__main__":
    sys.exit(main())
