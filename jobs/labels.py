"""Label bins from ChIP-seq peaks with the official DREAM rule (``tfbs labels``).

For every TF in ``data.tfs`` and cell in ``data.cells``, reads
``<peaks_dir>/ChIPseq.<CELL>.<TF>.{conservative.train,relaxed}.narrowPeak.gz``
and writes ``<labels_dir>/<TF>.train.labels.tsv.gz`` over the bins of
``data.chrom_sizes`` minus ``data.blacklist``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Literal

if __name__ == "__main__":
    # Run as a file (`spark-submit jobs/labels.py`): Python put jobs/ first on the
    # path, where jobs/preprocess.py would shadow the preprocess package.
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from tfbs.config import PipelineConfig
from tfbs.errors import ConfigError
from tfbs.storage import local_path


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--chroms", nargs="*", default=None, help="restrict to these chromosomes")


def run(config: PipelineConfig, args: argparse.Namespace | None = None) -> dict:
    """Write one label file per TF; returns ``{tf: counts}``."""
    from tfbs.formats.labels import build_labels
    from tfbs.storage import require

    data = config.data
    if not data.cells:
        raise ConfigError(f"{config.source}: data.cells: list the cell types to label")

    def peak_file(cell: str, tf: str, kind: Literal["conservative", "relaxed"]) -> str:
        return local_path(require(data.chip_peaks_uri(cell, tf, kind), f"{kind} peaks of {tf} in {cell}"))

    summary = {}
    for tf in data.tfs:
        peaks = {cell: (peak_file(cell, tf, "conservative"), peak_file(cell, tf, "relaxed")) for cell in data.cells}
        summary[tf] = build_labels(
            local_path(require(data.chrom_sizes, "chromosome sizes")),
            peaks,
            local_path(data.labels_uri(tf)),
            blacklist_path=local_path(require(data.blacklist, "blacklist")) if data.blacklist else None,
            chroms=getattr(args, "chroms", None),
        )
        print(f"labels: {data.labels_uri(tf)}")
    return summary


def main(argv: list[str] | None = None) -> int:
    from jobs.common import run_stage

    return run_stage(__doc__, run, argv, extra_arguments=_arguments)


if __name__ == "__main__":
    sys.exit(main())
