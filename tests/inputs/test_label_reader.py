"""Streaming label files: exact line numbers and a clear error for every
kind of bad input, or a counted set-aside."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from preprocess.label_reader import (
    CODE_A,
    CODE_B,
    CODE_U,
    LabelPiece,
    ReadReport,
    read_label_file,
)
from tfbs.errors import BadInputError

HEADER = "chr\tstart\tstop\tGM12878\tK562\n"
CHROMS = ["chr1", "chr2"]


def _lines(n: int, chrom: str = "chr1") -> list[str]:
    labels = ["U\tU", "B\tU", "U\tA"]
    return [f"{chrom}\t{i * 50}\t{i * 50 + 200}\t{labels[i % 3]}\n" for i in range(n)]


def _write(tmp_path, lines: list[str], name: str = "CTCF.train.labels.tsv.gz", header: str = HEADER) -> str:
    path = tmp_path / name
    text = (header + "".join(lines)).encode()
    path.write_bytes(gzip.compress(text) if name.endswith(".gz") else text)
    return f"file://{path}"


def _read(uri: str, bad_rows: str = "fail", block_bytes: int = 256, cells=("GM12878", "K562")):
    items = list(read_label_file(uri, list(cells), CHROMS, bad_rows, block_bytes))
    pieces = [i for i in items if isinstance(i, LabelPiece)]
    report = items[-1]
    assert isinstance(report, ReadReport)
    return pieces, report


@pytest.mark.parametrize("name", ["labels.tsv.gz", "labels.tsv"])
def test_rows_and_codes_across_many_blocks(tmp_path, name):
    lines = _lines(40) + _lines(20, "chr2")
    pieces, report = _read(_write(tmp_path, lines, name))
    assert report.n_rows == 60 and report.rejected == []
    starts = np.concatenate([p.starts for p in pieces if p.chrom == "chr1"])
    assert starts.tolist() == [i * 50 for i in range(40)]
    codes = np.concatenate([p.codes for p in pieces if p.chrom == "chr1"])
    assert codes[:3].tolist() == [[CODE_U, CODE_U], [CODE_B, CODE_U], [CODE_U, CODE_A]]
    assert sum(len(p.starts) for p in pieces if p.chrom == "chr2") == 20


def test_keeps_only_the_chosen_cells_in_their_order(tmp_path):
    pieces, _ = _read(_write(tmp_path, _lines(3)), cells=("K562",))
    assert pieces[0].codes[:, 0].tolist() == [CODE_U, CODE_U, CODE_A]


def test_last_line_without_newline(tmp_path):
    uri = _write(tmp_path, [*_lines(5), "chr1\t250\t450\tB\tB"])
    pieces, report = _read(uri)
    assert report.n_rows == 6
    assert pieces[-1].codes[-1].tolist() == [CODE_B, CODE_B]


BAD_LINES = [
    ("chr1\t100\t300\tU\n", "expected 5 columns, found 4"),
    ("chr1\t100\t300\tU\tQ\n", "unknown label 'Q' (expected U, B or A)"),
    ("chr1\t110\t310\tU\tU\n", "start 110 is not on the 50 bp grid"),
    ("chr1\t100\t350\tU\tU\n", "bin is 250 bp, expected 200"),
    ("chr1\tten\t300\tU\tU\n", "start/stop not integers: 'ten', '300'"),
    ("chrUn\t100\t300\tU\tU\n", "chromosome 'chrUn' is not in the genome FASTA"),
    ("\n", "expected 5 columns, found 1"),
]


@pytest.mark.parametrize("bad_line,reason", BAD_LINES)
def test_bad_line_fails_naming_file_line_and_reason(tmp_path, bad_line, reason):
    lines = _lines(30)
    lines.insert(17, bad_line)  # line 19 of the file: the header is line 1
    uri = _write(tmp_path, lines)
    with pytest.raises(BadInputError) as err:
        _read(uri)
    assert (err.value.uri, err.value.line, err.value.reason) == (uri, 19, reason)
    assert str(err.value) == f"{uri}:19: {reason}"


def test_bad_lines_set_aside_are_counted_with_line_and_reason(tmp_path):
    lines = _lines(30)
    for position, (bad_line, _) in enumerate(BAD_LINES):
        lines.insert(3 + 4 * position, bad_line)
    pieces, report = _read(_write(tmp_path, lines), bad_rows="set_aside")
    assert report.n_rows == 30 + len(BAD_LINES)
    assert report.rejected == [(5 + 4 * position, reason) for position, (_, reason) in enumerate(BAD_LINES)]
    assert sum(len(p.starts) for p in pieces) == 30


def test_truncated_gzip_names_the_first_unread_line(tmp_path):
    path = tmp_path / "CTCF.train.labels.tsv.gz"
    whole = gzip.compress((HEADER + "".join(_lines(20000))).encode())
    path.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(BadInputError, match="cannot be read from this line on") as err:
        _read(f"file://{path}", block_bytes=4096)
    assert 2 < err.value.line < 20000


def test_empty_and_headerless_files(tmp_path):
    empty = tmp_path / "empty.tsv.gz"
    empty.write_bytes(gzip.compress(b""))
    with pytest.raises(BadInputError, match="file is empty"):
        _read(f"file://{empty}")
    with pytest.raises(BadInputError) as err:
        _read(_write(tmp_path, _lines(3), header="chrom\tstart\tend\tK562\n"))
    assert err.value.line == 1 and "header must start with chr, start, stop" in err.value.reason


def test_header_only_file_is_refused(tmp_path):
    uri = _write(tmp_path, [])
    with pytest.raises(BadInputError) as err:
        _read(uri)
    assert str(err.value) == f"{uri}:1: header but no data rows"


@pytest.mark.parametrize("block_bytes", [256, 1 << 20])  # many blocks (runs cross them), one block
@pytest.mark.parametrize("bad_rows", ["fail", "set_aside"])
def test_duplicate_bin_is_a_bad_row_wherever_it_falls(tmp_path, block_bytes, bad_rows):
    lines = _lines(40) + _lines(20, "chr2")
    for position in (45, 12):  # chr2 bin 200 (line 47 after the first insert), chr1 bin 550
        lines.insert(position, lines[position - 1])
    uri = _write(tmp_path, lines)
    if bad_rows == "fail":
        with pytest.raises(BadInputError) as err:
            _read(uri, block_bytes=block_bytes)
        assert (err.value.line, err.value.reason) == (14, "duplicate of line 13 (chr1 550)")
        return
    pieces, report = _read(uri, bad_rows, block_bytes)
    assert report.n_rows == 62
    assert report.rejected == [(14, "duplicate of line 13 (chr1 550)"), (48, "duplicate of line 47 (chr2 200)")]
    assert sum(len(p.starts) for p in pieces) == 60


@pytest.mark.parametrize("bad_rows", ["fail", "set_aside"])
def test_duplicate_across_a_block_boundary_names_the_row_before(tmp_path, bad_rows):
    # Rows of one width: the first block ends exactly after the 10th row, which
    # the 11th repeats (the vectorised check sees it against the block before).
    lines = [f"chr1\t{start}\t{start + 200}\tU\tB\n" for start in range(1000, 2000, 50)]
    lines.insert(10, lines[9])
    uri = _write(tmp_path, lines, name="labels.tsv")
    first_block = len(HEADER) + len("".join(lines[:10]))
    if bad_rows == "fail":
        with pytest.raises(BadInputError) as err:
            _read(uri, block_bytes=first_block)
        assert (err.value.line, err.value.reason) == (12, "duplicate of line 11 (chr1 1450)")
        return
    pieces, report = _read(uri, bad_rows, block_bytes=first_block)
    assert report.rejected == [(12, "duplicate of line 11 (chr1 1450)")] and report.n_rows == 21
    assert [len(p.starts) for p in pieces] == [10, 10]


@pytest.mark.parametrize("block_bytes", [256, 1 << 20])
@pytest.mark.parametrize(
    "lines, line, reason",
    [
        (
            _lines(10) + _lines(10)[3:4] + _lines(5, "chr2"),
            12,
            "unsorted: chr1 150 after chr1 450 on line 11 (sort by chromosome, then start: sort -k1,1 -k2,2n)",
        ),
        (
            _lines(30) + _lines(5, "chr2") + [f"chr1\t{50 * 40}\t{50 * 40 + 200}\tU\tU\n"],
            37,
            "unsorted: chr1 rows resume after those of chr2 (each chromosome's rows must be together: "
            "sort -k1,1 -k2,2n)",
        ),
    ],
    ids=["start-steps-back", "chromosome-resumes"],
)
@pytest.mark.parametrize("bad_rows", ["fail", "set_aside"])
def test_unsorted_file_is_refused_even_when_setting_rows_aside(tmp_path, lines, line, reason, block_bytes, bad_rows):
    uri = _write(tmp_path, lines)
    with pytest.raises(BadInputError) as err:
        _read(uri, bad_rows, block_bytes)
    assert (err.value.uri, err.value.line, err.value.reason) == (uri, line, reason)


def test_chromosomes_in_any_order_and_gaps_are_fine(tmp_path):
    lines = _lines(5, "chr2") + [line for i, line in enumerate(_lines(30)) if i % 7]
    pieces, report = _read(_write(tmp_path, lines))
    assert report.n_rows == len(lines) and report.rejected == []
