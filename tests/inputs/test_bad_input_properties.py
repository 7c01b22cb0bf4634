"""Properties of the readers over generated label, peak and MEME files: a valid file gives every row, one
defect is named at its line or set aside and counted."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from bad_input_files import LABEL_HEADER, MEME_HEAD, peak_line, write_file
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from preprocess.label_reader import LabelPiece, ReadReport, read_label_file
from tfbs.errors import BadInputError
from tfbs.formats.bed import read_bed
from tfbs.formats.motifs import read_meme

# --------------------------------------------------------------------------
# Properties: generated label and peak files, valid or with one defect
# --------------------------------------------------------------------------

LABEL_CHROMS = ["chr1", "chr2", "chr3"]
#: Few examples, no example database (nothing written into the checkout).
PROPERTY = settings(max_examples=40, deadline=None, database=None)


@st.composite
def label_rows(draw) -> list[str]:
    """A valid label file's data lines: chromosomes in any order, rising starts, gaps allowed."""
    chroms = draw(st.permutations(LABEL_CHROMS).map(lambda c: c[: draw(st.integers(1, 3))]))
    rows = []
    for chrom in chroms:
        bins = draw(st.lists(st.integers(0, 60), min_size=1, max_size=25, unique=True))
        for b in sorted(bins):
            labels = draw(st.lists(st.sampled_from("UBA"), min_size=2, max_size=2))
            rows.append(f"{chrom}\t{b * 50}\t{b * 50 + 200}\t{labels[0]}\t{labels[1]}\n")
    return rows


def _read_label_text(text: str, bad_rows: str, block_bytes: int) -> tuple[list[LabelPiece], ReadReport]:
    with tempfile.TemporaryDirectory() as tmp:
        uri = write_file(Path(tmp) / "CTCF.train.labels.tsv.gz", text)
        items = list(read_label_file(uri, ["HepG2", "K562"], LABEL_CHROMS, bad_rows, block_bytes))
    assert isinstance(items[-1], ReadReport)
    return [item for item in items if isinstance(item, LabelPiece)], items[-1]


@PROPERTY
@given(rows=label_rows(), block_bytes=st.integers(40, 400))
def test_valid_label_file_accounts_for_every_row(rows, block_bytes):
    pieces, report = _read_label_text(LABEL_HEADER + "".join(rows), "fail", block_bytes)
    assert report.n_rows == len(rows) and report.rejected == []
    got = sorted((piece.chrom, int(start)) for piece in pieces for start in piece.starts)
    assert got == sorted((row.split("\t")[0], int(row.split("\t")[1])) for row in rows)


def _off_grid(row: str) -> tuple[str, str]:
    chrom, start, stop, rest = row.split("\t", 3)
    return f"{chrom}\t{int(start) + 10}\t{int(stop) + 10}\t{rest}", f"start {int(start) + 10} is not on the 50 bp grid"


#: Defects a row can get: the bad row and the reason it is refused or set aside with.
ROW_DEFECTS: dict[str, Callable[[str], tuple[str, str]]] = {
    "label": lambda row: (row[:-2] + "Q\n", "unknown label 'Q' (expected U, B or A)"),
    "columns": lambda row: (row.rsplit("\t", 1)[0] + "\n", "expected 5 columns, found 4"),
    "chromosome": lambda row: ("chrUn" + row[row.index("\t") :], "chromosome 'chrUn' is not in the genome FASTA"),
    "off-grid": _off_grid,
}


@PROPERTY
@given(
    rows=label_rows(),
    where=st.floats(0, 1, exclude_max=True),
    defect=st.sampled_from([*ROW_DEFECTS, "duplicate"]),
    bad_rows=st.sampled_from(["fail", "set_aside"]),
    block_bytes=st.integers(40, 400),
)
def test_one_bad_row_is_named_or_set_aside(rows, where, defect, bad_rows, block_bytes):
    position = int(where * len(rows))
    if defect == "duplicate":
        row = rows[position]
        rows.insert(position + 1, row)
        chrom, start = row.split("\t")[:2]
        line, reason = position + 3, f"duplicate of line {position + 2} ({chrom} {start})"
    else:
        rows[position], reason = ROW_DEFECTS[defect](rows[position])
        line = position + 2
    text = LABEL_HEADER + "".join(rows)
    if bad_rows == "fail":
        with pytest.raises(BadInputError) as err:
            _read_label_text(text, bad_rows, block_bytes)
        assert (err.value.line, err.value.reason) == (line, reason)
        return
    pieces, report = _read_label_text(text, bad_rows, block_bytes)
    assert report.n_rows == len(rows) and report.rejected == [(line, reason)]
    assert sum(len(piece.starts) for piece in pieces) == len(rows) - 1


@PROPERTY
@given(rows=label_rows(), where=st.floats(0, 1, exclude_max=True), bad_rows=st.sampled_from(["fail", "set_aside"]))
def test_a_start_stepping_back_is_refused_there(rows, where, bad_rows):
    neighbours = [i for i in range(len(rows) - 1) if rows[i].split("\t")[0] == rows[i + 1].split("\t")[0]]
    assume(neighbours)
    position = neighbours[int(where * len(neighbours))]
    rows[position], rows[position + 1] = rows[position + 1], rows[position]
    with pytest.raises(BadInputError, match=r":\d+: unsorted: ") as err:
        _read_label_text(LABEL_HEADER + "".join(rows), bad_rows, 64)
    assert err.value.line == position + 3


@PROPERTY
@given(
    rows=label_rows(),
    which=st.floats(0, 1, exclude_max=True),
    where=st.floats(0, 1, exclude_max=True),
    bad_rows=st.sampled_from(["fail", "set_aside"]),
    block_bytes=st.integers(40, 400),
)
def test_a_chromosome_resuming_is_refused_there(rows, which, where, bad_rows, block_bytes):
    first_chrom = rows[0].split("\t")[0]
    n_first = sum(row.split("\t")[0] == first_chrom for row in rows)
    assume(2 <= n_first < len(rows))
    # One of the first chromosome's rows moves past a row of the next one.
    moved = rows.pop(int(which * n_first))
    position = n_first + int(where * (len(rows) - n_first + 1))
    rows.insert(position, moved)
    with pytest.raises(BadInputError, match=rf":\d+: unsorted: {first_chrom} rows resume after") as err:
        _read_label_text(LABEL_HEADER + "".join(rows), bad_rows, block_bytes)
    assert err.value.line == position + 2


PEAK_SIZES = {"chr1": 5_000, "chr2": 3_000, "chrX": 4_000}


@st.composite
def peak_lines(draw) -> list[str]:
    lines = []
    for _ in range(draw(st.integers(1, 30))):
        chrom = draw(st.sampled_from(sorted(PEAK_SIZES)))
        start = draw(st.integers(0, PEAK_SIZES[chrom] - 1))
        end = draw(st.integers(start + 1, PEAK_SIZES[chrom]))
        lines.append(peak_line(chrom, start, end))
    return lines


#: Defects a peak line can get: ``(chrom, start, end) -> bad line``, and the reason's template.
PEAK_DEFECTS: dict[str, tuple[Callable[[str, int, int], str], str]] = {
    "columns": (lambda c, s, e: peak_line(c, s, e, columns=8), "expected 10 columns as on line {first}, found 8"),
    "short": (lambda c, s, e: f"{c}\t{s}\n", "expected at least 3 tab-separated columns, found 2"),
    "non-integer": (lambda c, s, e: peak_line(c, f"{s}.5", e), "start '{s}.5' is not an integer"),
    "negative": (lambda c, s, e: peak_line(c, -s - 1, e), "start {negative} is negative"),
    "reversed": (lambda c, s, e: peak_line(c, e, s), "start {e} is not before end {s}"),
    "chromosome": (lambda c, s, e: peak_line("chrM", s, e), "chromosome 'chrM' is not in the genome"),
    "beyond-end": (
        lambda c, s, e: peak_line(c, s, PEAK_SIZES[c] + 1),
        "end {beyond} is beyond the end of {c} ({size} bp)",
    ),
}


@PROPERTY
@given(lines=peak_lines(), gz=st.booleans(), header=st.booleans())
def test_valid_peak_file_gives_every_interval(lines, gz, header):
    with tempfile.TemporaryDirectory() as tmp:
        uri = write_file(
            Path(tmp) / ("p.narrowPeak.gz" if gz else "p.narrowPeak"), "track x\n" * header + "".join(lines)
        )
        intervals = read_bed(uri, PEAK_SIZES)
    got = sorted((chrom, int(s), int(e)) for chrom, (starts, ends) in intervals.items() for s, e in zip(starts, ends))
    assert got == sorted((f[0], int(f[1]), int(f[2])) for f in (line.split("\t") for line in lines))


@PROPERTY
@given(
    lines=peak_lines(),
    where=st.floats(0, 1, exclude_max=True),
    defect=st.sampled_from(sorted(PEAK_DEFECTS)),
    gz=st.booleans(),
    header=st.booleans(),
)
def test_one_bad_peak_line_is_named(lines, where, defect, gz, header):
    if defect == "columns":
        lines.insert(0, peak_line("chr1", 0, 10))  # the first interval line sets the column count
    position = max(int(where * len(lines)), 1 if defect == "columns" else 0)
    chrom, s, e = lines[position].split("\t")[:3]
    start, end = int(s), int(e)
    make_bad, template = PEAK_DEFECTS[defect]
    lines[position] = make_bad(chrom, start, end)
    size = PEAK_SIZES[chrom]
    reason = template.format(first=1 + header, s=start, e=end, negative=-start - 1, beyond=size + 1, c=chrom, size=size)
    with tempfile.TemporaryDirectory() as tmp:
        uri = write_file(
            Path(tmp) / ("p.narrowPeak.gz" if gz else "p.narrowPeak"), "track x\n" * header + "".join(lines)
        )
        with pytest.raises(BadInputError) as err:
            read_bed(uri, PEAK_SIZES)
    assert (err.value.uri, err.value.line, err.value.reason) == (uri, position + 1 + header, reason)


# --------------------------------------------------------------------------
# Properties: generated MEME motif files, valid or with one mangled line
# --------------------------------------------------------------------------


@st.composite
def meme_files(draw) -> tuple[list[str], dict[str, np.ndarray], list[int]]:
    """A MEME file's lines, its matrices as written (6 decimals, rows summing to 1) and its row lines (1-based)."""
    lines = list(MEME_HEAD)
    matrices: dict[str, np.ndarray] = {}
    row_lines: list[int] = []
    for number in range(draw(st.integers(1, 4))):
        width = draw(st.integers(1, 8))
        weights = draw(st.lists(st.lists(st.integers(0, 1000), min_size=4, max_size=4), min_size=width, max_size=width))
        rows = np.array([[w + (i == 0 and not sum(row)) for i, w in enumerate(row)] for row in weights], dtype=float)
        rows = np.round(rows / rows.sum(axis=1, keepdims=True), 6)
        name = f"M{number}_f1"
        lines += [f"MOTIF {name} M{number}", "", f"letter-probability matrix: alength= 4 w= {width} nsites= 20 E= 0"]
        for row in rows:
            row_lines.append(len(lines) + 1)
            lines.append(" ".join(f"{value:.6f}" for value in row))
        lines += ["", f"URL http://example.org/{name}", ""]
        matrices[name] = rows
    return lines, matrices, row_lines


def _read_meme_lines(lines: list[str] | bytes) -> dict[str, np.ndarray]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "motifs.meme"
        path.write_bytes(lines if isinstance(lines, bytes) else ("\n".join(lines) + "\n").encode())
        return read_meme(str(path))


@PROPERTY
@given(meme=meme_files())
def test_valid_motif_file_gives_every_matrix(meme):
    lines, matrices, _ = meme
    got = _read_meme_lines(lines)
    assert list(got) == list(matrices)
    for name, matrix in matrices.items():
        np.testing.assert_allclose(got[name], matrix / matrix.sum(axis=1, keepdims=True), atol=1e-12)


#: Defects a matrix row can get: ``fields -> (bad line, reason)``.
MOTIF_ROW_DEFECTS: dict[str, Callable[[list[str]], tuple[str, str]]] = {
    "not-a-number": lambda f: (" ".join([f[0], f[1] + "x", *f[2:]]), f"{f[1] + 'x'!r} is not a number"),
    "columns": lambda f: (" ".join(f[:3]), "expected 4 columns, found 3"),
    "extra-column": lambda f: (" ".join([*f, "0.0"]), "expected 4 columns, found 5"),
    "zeros": lambda f: ("0 0 0 0", "every probability of the row is 0"),
    "negative": lambda f: (" ".join(["-0.5", *f[1:]]), "'-0.5' is not a probability (0 to 1)"),
    "above-one": lambda f: (" ".join(["1.5", *f[1:]]), "'1.5' is not a probability (0 to 1)"),
    "inf": lambda f: (" ".join(["inf", *f[1:]]), "'inf' is not a probability (0 to 1)"),
    "half": lambda f: ("0.125 0.125 0.125 0.125", "the row sums to 0.5, not 1"),
    "blank": lambda f: ("", "expected 4 columns, found 0"),
}


@PROPERTY
@given(meme=meme_files(), where=st.floats(0, 1, exclude_max=True), defect=st.sampled_from(sorted(MOTIF_ROW_DEFECTS)))
def test_one_mangled_matrix_row_is_named(meme, where, defect):
    lines, matrices, row_lines = meme
    line = row_lines[int(where * len(row_lines))]
    lines[line - 1], reason = MOTIF_ROW_DEFECTS[defect](lines[line - 1].split())
    motif = next(text.split()[1] for text in reversed(lines[:line]) if text.startswith("MOTIF"))
    with pytest.raises(BadInputError) as err:
        _read_meme_lines(lines)
    assert (err.value.line, err.value.reason) == (line, f"motif {motif}: {reason}")


@PROPERTY
@given(meme=meme_files(), where=st.floats(0, 1, exclude_max=True), junk=st.binary(max_size=40))
def test_any_mangled_line_is_read_or_refused_at_a_line(meme, where, junk):
    """Whatever replaces a line, the reader returns motifs or names a line of the file: never another exception."""
    lines, _, _ = meme
    position = int(where * len(lines))
    encoded = [line.encode() for line in lines]
    encoded[position] = junk.replace(b"\n", b" ").replace(b"\r", b" ")
    try:
        _read_meme_lines(b"\n".join(encoded) + b"\n")
    except BadInputError as err:
        assert 0 < err.line <= len(lines) and "\n" not in str(err)
