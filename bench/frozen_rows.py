"""Benchmark: a candidate's trainings against the boosted baseline fitted on the default sampling's rows.

Before commit b860159 an evaluation fitted the boosted baseline on the
model's training rows, so a candidate that changed which rows the shards
keep (``preprocess.*``) changed the baseline too. To judge such a candidate
against the baseline at its best, this scores the candidate's trainings, averaged bin by bin as
``bench/challenge.py`` does, beside the baseline of a run on the default
sampling of the same data set (the same test rows, checked), with the site
bootstrap: the model, the boosted baseline, and the joined scorer
``tfbs predict`` writes (:func:`tf_models.protocol.joined_probability`: the
model joined to the baseline fitted on its own rows, which its evaluation
keeps), each training and averaged. The candidate's own baseline stays
beside them as ``boosted_same_rows``, and the model joined to the
default rows' baseline as ``joined_default_rows``.

    .venv/bin/python bench/frozen_rows.py --candidate <work dir> --reference <work dir> --out <json>

(work dirs as ``bench/challenge.py --work-dir`` leaves them, demo data set.)
Since b860159 the evaluation fits the baseline on the default sampling's
rows whatever the candidate's (:func:`tf_models.boosted_fit.default_sampling_rows`):
without ``--reference`` the candidate's first training is the reference,
and ``boosted_same_rows`` equals ``boosted``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.challenge import DEFAULT, averaged_predictions  # noqa: E402
from bench.report import write_summary  # noqa: E402

#: The candidate's own baseline, fitted on its rows, and the model joined to the default rows' baseline.
SAME_ROWS, JOINED_DEFAULT_ROWS = "boosted_same_rows", "joined_default_rows"


def model_dirs(work: Path, data: str) -> list[Path]:
    """The trained versions of ``bench/challenge.py``'s default variant on ``data``."""
    models = work / data / DEFAULT.run_folder / "models"
    return sorted(path for path in models.iterdir() if path.is_dir() and not path.is_symlink())


def scored(candidate: list[Path], frozen: dict, heldout_cells: list[str]) -> dict:
    """Group figures with intervals of ``candidate``'s averaged trainings beside ``frozen``'s baseline
    (:func:`bench.challenge.averaged_predictions` of the reference run)."""
    from tf_models.protocol import JOINED, group_summary, joined_probability, site_intervals

    per_key = averaged_predictions(candidate)
    for key, arrays in per_key.items():
        other = frozen[key]
        for column in ("chrom", "start", "label"):
            if not (arrays[column] == other[column]).all():
                raise ValueError(f"{key}: the two runs scored different test rows ({column})")
        arrays[SAME_ROWS], arrays["boosted"] = arrays["boosted"], other["boosted"]
        # The product: what tfbs predict writes, the model joined to the baseline its evaluation kept.
        arrays[JOINED] = joined_probability(arrays["model"], arrays[SAME_ROWS])
        arrays[JOINED_DEFAULT_ROWS] = joined_probability(arrays["model"], arrays["boosted"])
    return group_summary(site_intervals(per_key, heldout_cells, 1000, seed=0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidate", type=Path, required=True, help="the candidate's bench/challenge.py work dir")
    parser.add_argument(
        "--reference", type=Path, help="a default-sampling run's work dir (default: the candidate's, since b860159)"
    )
    parser.add_argument("--data", default="demo")
    parser.add_argument("--config", default="conf/demo.yaml", help="the runs' configuration: its held-out cells")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    from tfbs.config import load_config

    heldout_cells = load_config(args.config, args.overrides).data.heldout_cells
    candidate = model_dirs(args.candidate, args.data)
    reference = model_dirs(args.reference or args.candidate, args.data)[0]
    frozen = averaged_predictions([reference])
    summary = {
        "trainings": [path.name for path in candidate],
        "reference": reference.name,
        "averaged": scored(candidate, frozen, heldout_cells),
        "each": {path.name: scored([path], frozen, heldout_cells) for path in candidate},
    }
    write_summary(summary, str(args.out), args, echo=False)
    for name, groups in [("averaged", summary["averaged"]), *summary["each"].items()]:
        for group in ("held-out cells", "training cells"):
            auprc = groups[group]["auprc"]
            print(name, group, {scorer: round(auprc[scorer]["estimate"], 3) for scorer in auprc})


if __name__ == "__main__":
    main()
