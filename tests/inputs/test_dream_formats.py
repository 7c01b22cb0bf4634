"""Label-file parsing: every malformed line is named by file, line and reason."""

from __future__ import annotations

import pytest

from tfbs.errors import BadInputError
from tfbs.formats.dream import parse_label_header, parse_label_line

URI = "file:///data/CTCF.train.labels.tsv.gz"


def test_header_gives_cells():
    assert parse_label_header("chr\tstart\tstop\tA549\tK562\n", URI) == ["A549", "K562"]


@pytest.mark.parametrize(
    "header, reason",
    [
        ("chrom\tstart\tend\tK562", "header must start with chr, start, stop"),
        ("chr\tstart\tstop", "names no cell type"),
        ("chr\tstart\tstop\tK562\tA549", "alphabetical"),
    ],
)
def test_bad_header(header, reason):
    with pytest.raises(BadInputError, match=reason) as err:
        parse_label_header(header, URI)
    assert err.value.line == 1 and err.value.uri == URI


def test_good_line():
    row = parse_label_line("chr2\t600\t800\tU\tB\n", 2, URI, 5)
    assert (row.chrom, row.start, row.stop, row.labels) == ("chr2", 600, 800, "UB")


@pytest.mark.parametrize(
    "line, reason",
    [
        ("chr2\t600\t800\tU", "expected 5 columns, found 4"),
        ("chr2\tsix\t800\tU\tB", "not integers"),
        ("chr2\t600\t900\tU\tB", "bin is 300 bp"),
        ("chr2\t610\t810\tU\tB", "not on the 50 bp grid"),
        ("chr2\t600\t800\tU\tX", "unknown label 'X'"),
    ],
)
def test_bad_line_names_file_line_reason(line, reason):
    with pytest.raises(BadInputError) as err:
        parse_label_line(line, 2, URI, 42)
    assert str(err.value).startswith(f"{URI}:42: ")
    assert reason in err.value.reason


def test_error_survives_a_round_trip_through_text():
    original = BadInputError(URI, 7, "unknown label 'X'")
    rebuilt = BadInputError.from_message(str(original))
    assert (rebuilt.uri, rebuilt.line, rebuilt.reason) == (URI, 7, "unknown label 'X'")
