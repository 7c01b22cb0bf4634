"""A DREAM submission checked against its regions file, as the challenge checked it.

``F.<TF>.<CELL>.tab.gz`` is gzip-compressed, has no header and one line per
region of the ladder or test regions file, in exactly that file's order:
``chr start stop probability``, tab-separated, the probability in [0, 1].
Both files are streamed side by side, a line at a time, so a 60 M-line pair
takes no more memory than a short one.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from tfbs import storage
from tfbs.errors import BadInputError
from tfbs.formats.dream import BIN_SIZE, BIN_STEP
from tfbs.formats.genome import read_fai

#: The two bytes every gzip stream starts with.
GZIP_MAGIC = b"\x1f\x8b"

Region = tuple[str, int, int]


def _regions(uri: str) -> Iterator[tuple[int, Region]]:
    """``(line number, (chr, start, stop))`` of each line of a regions BED(.gz)."""
    with storage.open_text(uri) as handle:
        for number, line in enumerate(handle, 1):
            fields = line.rstrip("\r\n").split("\t")
            if len(fields) < 3 or not fields[1].isdigit() or not fields[2].isdigit():
                raise BadInputError(uri, number, "expected chr, start, stop (a regions BED line)")
            yield number, (fields[0], int(fields[1]), int(fields[2]))


def bins_in(length: int) -> int:
    """How many DREAM bins (200 bp on the 50 bp grid) fit in a chromosome of ``length`` bp.

    Examples
    --------
    >>> bins_in(400), bins_in(199)
    (5, 0)
    """
    return max(0, (length - BIN_SIZE) // BIN_STEP + 1)


def genome_bins(fasta_uri: str, chroms: list[str] | None = None) -> Iterator[Region]:
    """Every DREAM bin of the genome: 200 bp on the 50 bp grid, within each chromosome.

    In the FASTA index's chromosome order, ``chroms`` only if given: the
    regions of a genome-wide prediction.
    """
    for chrom, entry in read_fai(fasta_uri).items():
        if chroms is None or chrom in chroms:
            for start in range(0, bins_in(entry.length) * BIN_STEP, BIN_STEP):
                yield chrom, start, start + BIN_SIZE


def write_genome_bins(fasta_uri: str, chroms: list[str] | None, out_uri: str) -> int:
    """:func:`genome_bins` as a gzipped regions BED, streamed; returns the number of bins."""
    count = 0
    with storage.open_output(out_uri) as out:
        for chrom, start, stop in genome_bins(fasta_uri, chroms):
            out.write(f"{chrom}\t{start}\t{stop}\n".encode())
            count += 1
    return count


def _named(region: Region) -> str:
    chrom, start, stop = region
    return f"{chrom}:{start}-{stop}"


def _parse_row(text: str, uri: str, number: int) -> tuple[Region, float]:
    fields = text.rstrip("\r\n").split("\t")
    if len(fields) != 4:
        raise BadInputError(
            uri, number, f"expected 4 tab-separated columns (chr start stop probability), found {len(fields)}"
        )
    chrom, start, stop, probability = fields
    if not (start.isdigit() and stop.isdigit()):
        reason = "a header line: submissions have none" if number == 1 else "start/stop not non-negative integers"
        raise BadInputError(uri, number, f"{reason}: {text.strip()[:80]!r}")
    try:
        value = float(probability)
    except ValueError:
        raise BadInputError(uri, number, f"probability {probability!r} is not a number") from None
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise BadInputError(uri, number, f"probability {probability} outside [0, 1]")
    return (chrom, int(start), int(stop)), value


def validate_submission(submission_uri: str, regions_uri: str | None, fasta_uri: str | None = None) -> int:
    """Check ``submission_uri`` against ``regions_uri``; return its number of rows.

    Parameters
    ----------
    submission_uri
        The ``F.<TF>.<CELL>.tab.gz`` to check.
    regions_uri
        The regions (ladder or test) BED(.gz) it must follow line for line;
        None for a genome-wide prediction, checked against every bin of
        ``fasta_uri``'s genome (:func:`genome_bins`).
    fasta_uri
        The genome, when ``regions_uri`` is None.

    Raises
    ------
    BadInputError
        At the first bad line of the submission, naming its number and the
        reason: not gzip, a header, a line not of four columns, a
        probability that is not a number in [0, 1], a duplicate of the line
        before, a missing region, a row out of order or of no region, too
        few or too many rows.
    """
    with storage.open_input(submission_uri, compression=None) as raw:
        if raw.read(2) != GZIP_MAGIC:
            raise BadInputError(submission_uri, 0, "not gzip-compressed (the challenge took .tab.gz files)")
    if regions_uri is None:
        if fasta_uri is None:
            raise ValueError("validate_submission needs a regions file or, for a genome-wide prediction, the genome")
        regions_uri = f"the genome's 200 bp bins at {BIN_STEP} bp stride ({fasta_uri})"
        regions: Iterator[tuple[int, Region]] = enumerate(genome_bins(fasta_uri), 1)
    else:
        regions = _regions(regions_uri)
    expected = next(regions, None)
    previous: Region | None = None
    count = 0
    with storage.open_text(submission_uri) as rows:
        for number, text in enumerate(rows, 1):
            region, _ = _parse_row(text, submission_uri, number)
            if expected is None:
                raise BadInputError(submission_uri, number, f"more rows than the {count} regions of {regions_uri}")
            if region != expected[1]:
                if region == previous:
                    raise BadInputError(submission_uri, number, f"duplicate of line {number - 1} ({_named(region)})")
                following = next(regions, None)
                if following is not None and region == following[1]:
                    reason = (
                        f"region {_named(expected[1])} (line {expected[0]} of the regions) is missing: "
                        "this row is the next region's"
                    )
                else:
                    reason = (
                        f"{_named(region)} is not line {expected[0]} of the regions ({_named(expected[1])}): "
                        "out of order, or not a region"
                    )
                raise BadInputError(submission_uri, number, reason)
            previous, count = region, count + 1
            expected = next(regions, None)
    if expected is not None:
        raise BadInputError(
            submission_uri,
            count + 1,
            f"ends after {count} rows; region {_named(expected[1])} (line {expected[0]} of the regions) and any after it are missing",
        )
    return count
