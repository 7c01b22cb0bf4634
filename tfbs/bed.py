"""BED and narrowPeak files, every line checked against the genome.

Peak files (ChIP-seq for ``tfbs labels``, DNase for preprocessing and
prediction) and the blacklist are small next to the label files, so each is
read whole. Arrow parses a clean file in one call and the checks run on
whole columns; if any check fails, the file is parsed again line by line so
that the error names the first bad line. Line numbers count the
decompressed text from 1, as ``zcat file | nl`` would.
"""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Iterator, Mapping
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from tfbs import storage
from tfbs.errors import BadInputError

log = logging.getLogger("tfbs.bed")

#: ``{chrom: (starts, ends)}``, int64 arrays in file order.
Intervals = dict[str, tuple[np.ndarray, np.ndarray]]

#: Lines a BED file may hold besides intervals (UCSC's header lines).
_HEADER_PREFIXES = ("#", "track", "browser")
_INTEGER = re.compile(r"-?[0-9]+")


class _NotClean(Exception):
    """The one-call parse found something wrong; the file is re-read line by line."""


def read_bed(
    uri: str,
    chrom_sizes: Mapping[str, int] | None = None,
    unknown_chroms: Literal["error", "skip"] = "error",
    past_end: Literal["error", "allow"] = "error",
) -> Intervals:
    """Read the intervals of a BED or narrowPeak file (``.gz`` or plain), checked.

    Parameters
    ----------
    uri
        The file. Columns beyond the third are not read, but every line must
        have as many as the first one. Blank lines and ``#``, ``track`` and
        ``browser`` lines are skipped.
    chrom_sizes
        The genome's chromosomes and lengths; without them only the
        columns and coordinates are checked.
    unknown_chroms
        ``error``: a line on a chromosome outside ``chrom_sizes`` is bad.
        ``skip``: such lines are left out and counted in the log (the DREAM
        blacklist lists chrY, chrM and unplaced contigs; hg19.autoX, the
        challenge's chromosome sizes, leaves out chrY), but a file of which
        no line is on a known chromosome is refused: its names cannot be
        this genome's (``1`` against ``chr1``).
    past_end
        ``error``: a line ending beyond its chromosome's length is bad (a
        peak called on another assembly). ``allow``: such a line is kept,
        for exclusion lists only (a blacklist over-reaching a chromosome
        excludes nothing that is not there).

    Returns
    -------
    dict
        ``{chrom: (starts, ends)}``, int64 arrays in file order.

    Raises
    ------
    BadInputError
        Naming file, line and reason: a wrong column count, a coordinate that
        is not a non-negative integer, start not before end, an unknown
        chromosome, an end beyond the chromosome's length, or a stream that
        cannot be decompressed.
    """
    try:
        with storage.open_input(uri) as stream:
            data = stream.read()
    except (OSError, EOFError) as err:
        if isinstance(err, FileNotFoundError):
            raise
        raise BadInputError(uri, 1, f"cannot be read ({err})") from None
    try:
        names, chrom_ids, starts, ends, skipped = _fast_parse(data, chrom_sizes, unknown_chroms, past_end)
    except _NotClean:
        names, chrom_ids, starts, ends, skipped = _slow_parse(data, uri, chrom_sizes, unknown_chroms, past_end)
    if skipped:
        log.info(
            "%s: %d line(s) on chromosomes not in the genome ignored (%s)",
            uri,
            sum(skipped.values()),
            ", ".join(f"{chrom} {n}" for chrom, n in sorted(skipped.items())),
        )
    return _by_chrom(names, chrom_ids, starts, ends)


def _fast_parse(
    data: bytes, chrom_sizes: Mapping[str, int] | None, unknown_chroms: str, past_end: str
) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, dict[str, int]]:
    """Parse and check the whole file with Arrow; raise :class:`_NotClean` on any doubt.

    Returns names, chromosome indices, starts, ends, and lines skipped by chromosome.
    """
    skipped: dict[str, int] = {}
    if not data.strip():
        return [], np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64), skipped
    try:
        table = pacsv.read_csv(
            io.BytesIO(data),
            read_options=pacsv.ReadOptions(autogenerate_column_names=True, block_size=1 << 24),
            parse_options=pacsv.ParseOptions(delimiter="\t", quote_char=False, ignore_empty_lines=True),
            convert_options=pacsv.ConvertOptions(
                include_columns=["f0", "f1", "f2"],
                column_types={"f0": pa.dictionary(pa.int32(), pa.string()), "f1": pa.int64(), "f2": pa.int64()},
                strings_can_be_null=False,
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowKeyError, KeyError):
        raise _NotClean from None
    chroms = table.unify_dictionaries().column("f0").combine_chunks()
    names = chroms.dictionary.to_pylist()
    chrom_ids = chroms.indices.to_numpy().astype(np.int64)
    starts, ends = table.column("f1").to_numpy(), table.column("f2").to_numpy()
    # A header line that happens to parse (its second and third fields
    # numbers) is left to the line-by-line parse, which skips it.
    if np.any(starts < 0) or np.any(ends <= starts) or any(name.startswith(_HEADER_PREFIXES) for name in names):
        raise _NotClean
    if chrom_sizes is not None:
        size_of = np.array([chrom_sizes.get(name, -1) for name in names], dtype=np.int64)
        row_sizes = size_of[chrom_ids]
        known = row_sizes >= 0
        if past_end == "error" and np.any(ends[known] > row_sizes[known]):
            raise _NotClean
        if not np.all(known):
            if unknown_chroms == "error" or not np.any(known):
                raise _NotClean
            counts = np.bincount(chrom_ids[~known], minlength=len(names))
            skipped = {names[i]: int(counts[i]) for i in np.flatnonzero(counts)}
            chrom_ids, starts, ends = chrom_ids[known], starts[known], ends[known]
    return names, chrom_ids, starts, ends, skipped


def _slow_parse(
    data: bytes, uri: str, chrom_sizes: Mapping[str, int] | None, unknown_chroms: str, past_end: str
) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, dict[str, int]]:
    """Parse line by line, raising on the first bad line."""
    index: dict[str, int] = {}
    chrom_ids, starts, ends = [], [], []
    first_unknown: tuple[int, str] | None = None
    skipped: dict[str, int] = {}
    for number, chrom, start, end in _checked_lines(data, uri, chrom_sizes if past_end == "error" else None):
        if chrom_sizes is not None and chrom not in chrom_sizes:
            if unknown_chroms == "error":
                raise BadInputError(uri, number, f"chromosome {chrom!r} is not in the genome")
            first_unknown = first_unknown or (number, chrom)
            skipped[chrom] = skipped.get(chrom, 0) + 1
            continue
        chrom_ids.append(index.setdefault(chrom, len(index)))
        starts.append(start)
        ends.append(end)
    if first_unknown is not None and not chrom_ids:
        number, chrom = first_unknown
        raise BadInputError(
            uri,
            number,
            f"chromosome {chrom!r} is not in the genome, nor is any other chromosome of this file (named another way?)",
        )
    return (
        list(index),
        np.asarray(chrom_ids, dtype=np.int64),
        np.asarray(starts, dtype=np.int64),
        np.asarray(ends, dtype=np.int64),
        skipped,
    )


def _checked_lines(data: bytes, uri: str, chrom_sizes: Mapping[str, int] | None) -> Iterator[tuple[int, str, int, int]]:
    """``(line, chrom, start, end)`` of every interval line, checked but for the chromosome's presence.

    Ends are checked against ``chrom_sizes`` when given.
    """
    n_columns, first_line = 0, 0
    for number, raw in enumerate(data.decode("utf-8", errors="replace").split("\n"), start=1):
        raw = raw.removesuffix("\r")
        if not raw.strip() or raw.startswith(_HEADER_PREFIXES):
            continue
        fields = raw.split("\t")
        if len(fields) < 3:
            raise BadInputError(uri, number, f"expected at least 3 tab-separated columns, found {len(fields)}")
        if not n_columns:
            n_columns, first_line = len(fields), number
        elif len(fields) != n_columns:
            raise BadInputError(
                uri, number, f"expected {n_columns} columns as on line {first_line}, found {len(fields)}"
            )
        chrom, start, end = (
            fields[0],
            _coordinate(fields[1], "start", uri, number),
            _coordinate(fields[2], "end", uri, number),
        )
        if start >= end:
            raise BadInputError(uri, number, f"start {start} is not before end {end}")
        size = None if chrom_sizes is None else chrom_sizes.get(chrom)
        if size is not None and end > size:
            raise BadInputError(uri, number, f"end {end} is beyond the end of {chrom} ({size} bp)")
        yield number, chrom, start, end


def _coordinate(text: str, what: str, uri: str, line: int) -> int:
    """A non-negative integer coordinate, or the error naming it."""
    if not _INTEGER.fullmatch(text):
        raise BadInputError(uri, line, f"{what} {text!r} is not an integer")
    value = int(text)
    if value < 0:
        raise BadInputError(uri, line, f"{what} {value} is negative")
    return value


def _by_chrom(names: list[str], chrom_ids: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> Intervals:
    """Group the rows by chromosome, keeping file order within each."""
    order = np.argsort(chrom_ids, kind="stable")
    bounds = np.searchsorted(chrom_ids[order], np.arange(len(names) + 1))
    return {
        name: (starts[order[low:high]], ends[order[low:high]])
        for name, low, high in zip(names, bounds[:-1], bounds[1:])
        if high > low
    }
