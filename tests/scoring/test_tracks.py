"""Browser tracks of a submission (tf_models/tracks.py), read back with pyBigWig.

The bigWig holds, per 50 bp step, the highest probability of the bins
covering it, under a header of every chromosome of the genome; the BED holds
exactly the bins at or above the evaluation's 10 % FDR threshold.
"""

from __future__ import annotations

import gzip
import json

import numpy as np
import pyBigWig

from tf_models.protocol import JOINED
from tf_models.tracks import read_submission, write_tracks
from tfbs import storage

#: chr2 comes first in the submission but second in the genome: the header's order wins.
ROWS = [
    ("chr2", 0, 200, 0.25),
    ("chr2", 50, 250, 0.75),
    ("chr1", 1000, 1200, 0.5),
    ("chr1", 1050, 1250, 0.125),
    ("chr1", 5000, 5200, 0.875),  # alone: a gap before it
]
SIZES = {"chr1": 6000, "chr2": 300, "chr3": 1000}


def _submission(tmp_path) -> str:
    path = tmp_path / "F.CTCF.K562.tab.gz"
    path.write_bytes(gzip.compress("".join(f"{c}\t{s}\t{e}\t{p}\n" for c, s, e, p in ROWS).encode()))
    return storage.to_uri(path)


def _report(tmp_path, threshold, joined_threshold=None) -> str:
    path = tmp_path / "report.json"
    joined = {JOINED: {"threshold_at_fdr_10": joined_threshold}}
    report = {"results": {"CTCF/K562": {"threshold_at_fdr_10": threshold}}, "baselines": {"CTCF/K562": joined}}
    path.write_text(json.dumps(report))
    return storage.to_uri(path)


def test_the_bigwig_holds_the_best_bin_per_step(tmp_path):
    written = write_tracks(_submission(tmp_path), SIZES, _report(tmp_path, 0.5), "CTCF", "K562")
    track = pyBigWig.open(storage.local_path(written["bigwig"]))
    assert track.chroms() == SIZES
    assert track.intervals("chr2") == (
        (0, 50, 0.25),
        (50, 100, 0.75),
        (100, 150, 0.75),
        (150, 200, 0.75),
        (200, 250, 0.75),
    )
    expected_chr1 = [(1000, 0.5), (1050, 0.5), (1100, 0.5), (1150, 0.5), (1200, 0.125)]
    expected_chr1 += [(start, 0.875) for start in range(5000, 5200, 50)]
    assert [(s, v) for s, e, v in track.intervals("chr1")] == expected_chr1
    assert all(e - s == 50 for s, e, _ in track.intervals("chr1"))
    assert track.intervals("chr3") is None  # in the header, nothing scored
    assert np.isclose(track.stats("chr1", 1000, 1250, type="max")[0], 0.5)


def test_the_bed_holds_the_bins_called_at_10_percent_fdr(tmp_path):
    written = write_tracks(_submission(tmp_path), SIZES, _report(tmp_path, 0.5), "CTCF", "K562")
    assert (written["threshold"], written["called"]) == (0.5, 3)
    lines = gzip.decompress((tmp_path / "CTCF.K562.fdr10.bed.gz").read_bytes()).decode().splitlines()
    assert lines[0].startswith('track name="CTCF_K562_FDR10"') and "useScore=1" in lines[0]
    assert [line.split("\t") for line in lines[1:]] == [
        ["chr2", "50", "250", "CTCF_K562_FDR10", "750", "."],
        ["chr1", "1000", "1200", "CTCF_K562_FDR10", "500", "."],
        ["chr1", "5000", "5200", "CTCF_K562_FDR10", "875", "."],
    ]


def test_a_joined_submission_is_called_at_the_joined_scorers_threshold(tmp_path):
    report = _report(tmp_path, 0.5, joined_threshold=0.8)
    written = write_tracks(_submission(tmp_path), SIZES, report, "CTCF", "K562", JOINED)
    assert (written["threshold"], written["called"]) == (0.8, 1)
    assert write_tracks(_submission(tmp_path), SIZES, report, "CTCF", "K562")["called"] == 3


def test_no_bed_without_a_threshold(tmp_path):
    written = write_tracks(_submission(tmp_path), SIZES, _report(tmp_path, None), "CTCF", "K562")
    assert written["bed"] is None and not (tmp_path / "CTCF.K562.fdr10.bed.gz").exists()
    assert read_submission(_submission(tmp_path)).num_rows == len(ROWS)
