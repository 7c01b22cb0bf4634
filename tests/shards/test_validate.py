"""``tfbs validate``: a DREAM submission checked against its regions file as the challenge did.

Each defect is refused at its line with its reason: a wrong order, a missing
row, a duplicate, a probability out of range or not a number, a header, too
many or too few rows, a file that is not gzip.
"""

from __future__ import annotations

import gzip
import subprocess
import sys

import pytest
from conftest import REPO

from tfbs import storage
from tfbs.errors import BadInputError
from tfbs.formats.submission import validate_submission

REGIONS = [("chr1", 600, 800), ("chr1", 650, 850), ("chr1", 700, 900), ("chr2", 0, 200), ("chr2", 50, 250)]


def _rows(probabilities=(0.1, 0.5, 0.9, 0.0, 1.0), regions=REGIONS) -> list[str]:
    return [f"{c}\t{s}\t{e}\t{p}" for (c, s, e), p in zip(regions, probabilities)]


@pytest.fixture
def files(tmp_path):
    """The regions file (gzipped, as the challenge shipped it) and a writer of submissions."""
    regions = tmp_path / "test_regions.blacklistfiltered.bed.gz"
    regions.write_bytes(gzip.compress("".join(f"{c}\t{s}\t{e}\n" for c, s, e in REGIONS).encode()))

    def submission(lines: list[str], compress: bool = True) -> str:
        path = tmp_path / "F.CTCF.K562.tab.gz"
        text = "".join(f"{line}\n" for line in lines).encode()
        path.write_bytes(gzip.compress(text) if compress else text)
        return storage.to_uri(path)

    return storage.to_uri(regions), submission


def test_a_valid_submission_counts_its_rows(files):
    regions, submission = files
    assert validate_submission(submission(_rows()), regions) == 5


@pytest.mark.parametrize(
    "edit, line, reason",
    [
        (lambda rows: [rows[0], rows[3], rows[2], rows[1], rows[4]], 2, "chr2:0-200 is not line 2 of the regions"),
        (lambda rows: [rows[0], *rows[2:]], 2, "region chr1:650-850 (line 2 of the regions) is missing"),
        (lambda rows: [rows[0], rows[1], rows[1], *rows[2:]], 3, "duplicate of line 2 (chr1:650-850)"),
        (lambda rows: [*rows[:3], "chr2\t0\t200\t1.2", rows[4]], 4, "probability 1.2 outside [0, 1]"),
        (lambda rows: [*rows[:3], "chr2\t0\t200\t-0.01", rows[4]], 4, "probability -0.01 outside [0, 1]"),
        (lambda rows: [*rows[:3], "chr2\t0\t200\tnan", rows[4]], 4, "probability nan outside [0, 1]"),
        (lambda rows: [*rows[:3], "chr2\t0\t200\thigh", rows[4]], 4, "probability 'high' is not a number"),
        (lambda rows: ["chr\tstart\tstop\tprobability", *rows], 1, "a header line: submissions have none"),
        (lambda rows: [*rows[:2], "chr1\t700\t900", *rows[3:]], 3, "expected 4 tab-separated columns"),
        (lambda rows: [*rows, "chr2\t100\t300\t0.5"], 6, "more rows than the 5 regions"),
        (lambda rows: rows[:4], 5, "ends after 4 rows; region chr2:50-250 (line 5 of the regions)"),
    ],
    ids=["order", "missing", "duplicate", "above-1", "below-0", "nan", "text", "header", "columns", "extra", "short"],
)
def test_each_defect_is_refused_at_its_line(files, edit, line, reason):
    regions, submission = files
    uri = submission(edit(_rows()))
    with pytest.raises(BadInputError) as refused:
        validate_submission(uri, regions)
    assert refused.value.uri == uri and refused.value.line == line
    assert reason in refused.value.reason, refused.value.reason


def test_a_plain_text_submission_is_refused(files):
    regions, submission = files
    uri = submission(_rows(), compress=False)
    with pytest.raises(BadInputError, match="not gzip-compressed"):
        validate_submission(uri, regions)


def test_tfbs_validate_says_valid_or_names_the_line(files):
    regions, submission = files
    command = [sys.executable, "-m", "jobs.cli", "validate", "--regions", regions, "--submission"]
    good = subprocess.run([*command, submission(_rows())], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert good.returncode == 0, good.stderr
    assert good.stdout.strip().endswith("valid: 5 rows, one per region, in order, probabilities in [0, 1]")
    bad = subprocess.run([*command, submission(_rows()[:4])], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines()[-1].startswith(f"error: {submission(_rows()[:4])}:5: ends after 4 rows")


def test_a_genome_wide_submission_is_checked_against_every_bin_of_the_genome(tmp_path):
    from tfbs.formats.submission import genome_bins, write_genome_bins

    fasta = tmp_path / "genome.fa"
    fasta.write_text(">chr1\n" + "A" * 400 + "\n>chr2\n" + "C" * 260 + "\n")
    (tmp_path / "genome.fa.fai").write_text("chr1\t400\t6\t400\t401\nchr2\t260\t413\t260\t261\n")
    genome = storage.to_uri(fasta)
    bins = list(genome_bins(genome))
    assert bins == [("chr1", s, s + 200) for s in range(0, 201, 50)] + [("chr2", 0, 200), ("chr2", 50, 250)]
    assert write_genome_bins(genome, ["chr2"], storage.to_uri(tmp_path / "chr2.bed.gz")) == 2

    submission = tmp_path / "F.CTCF.K562.tab.gz"
    submission.write_bytes(gzip.compress("".join(f"{c}\t{s}\t{e}\t0.5\n" for c, s, e in bins).encode()))
    assert validate_submission(storage.to_uri(submission), None, genome) == 7
    submission.write_bytes(gzip.compress("".join(f"{c}\t{s}\t{e}\t0.5\n" for c, s, e in bins[:6]).encode()))
    with pytest.raises(BadInputError, match=r":7: ends after 6 rows; region chr2:50-250 \(line 7 of the regions\)"):
        validate_submission(storage.to_uri(submission), None, genome)
