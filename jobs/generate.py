"""Write the generated ENCODE-DREAM-format data set (``tfbs generate``).

``generate.mode: embedded`` (the default) writes the whole embedded data set;
``genome_scale`` writes a genome of ``data.chrom_sizes``' sizes with motifs at
the real peaks of ``data.peaks_dir``, DNase peaks and proteins (labels then
come from ``tfbs labels``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

if __name__ == "__main__":
    # Run as a file (`spark-submit jobs/generate.py`): Python put jobs/ first on the
    # path, where jobs/preprocess.py would shadow the preprocess package.
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from tfbs.config import PipelineConfig
from tfbs.errors import ConfigError


def run(config: PipelineConfig, args: argparse.Namespace | None = None) -> dict:
    """Generate the data set the configuration's ``generate`` section describes."""
    from synthetic.generate import generate_dataset

    if config.generate is None:
        raise ConfigError(f"{config.source}: generate: section missing (needed by `tfbs generate`)")
    if config.generate.mode == "genome_scale":
        from synthetic.genome_scale import generate_genome_scale

        summary = generate_genome_scale(config.generate, config.data)
        print(json.dumps(summary["counts"], indent=2, sort_keys=True))
        return summary
    summary = generate_dataset(config.generate, config.data)
    print(json.dumps({tf: figures["cells"] for tf, figures in summary["tfs"].items()}, indent=2, sort_keys=True))
    return summary


def main(argv: list[str] | None = None) -> int:
    from jobs.common import run_stage

    return run_stage(__doc__, run, argv)


if __name__ == "__main__":
    sys.exit(main())
