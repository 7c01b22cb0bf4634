"""Write a model version's HTML report again (``tfbs report``), with the sections other stages added since."""

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
    parser.add_argument(
        "--model-version", default=None, metavar="V", help="model version (default: the one LATEST names)"
    )


def run(config: PipelineConfig, args: argparse.Namespace | None = None) -> str:
    """Write ``report.html`` (and ``page.json``) of a version; ``<run_dir>/report/`` too if it is ``LATEST``.

    Raises
    ------
    MissingInputError
        If no version is named and none is ``LATEST``, or the version was never evaluated.
    """
    from tf_models.report import write_html_report
    from tfbs.formats.manifest import read_manifest
    from tfbs.lineage import chosen_version, read_latest

    version = chosen_version(config.run_dir, getattr(args, "model_version", None))
    latest = read_latest(config.run_dir)
    page = write_html_report(
        config.run_dir,
        version,
        read_manifest=read_manifest,
        table_uris=config.data.generator_table_uris,
        copy_to_run=latest is not None and latest.version == version,
    )
    print(f"report: {page}")
    return page


def main(argv: list[str] | None = None) -> int:
    from jobs.common import run_stage

    return run_stage(__doc__, run, argv, extra_arguments=_arguments)


if __name__ == "__main__":
    sys.exit(main())
