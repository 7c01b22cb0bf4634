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

log = logging.getLogger("tfbs.formats.bed")

#: ``{chrom: (starts, ends)}`` (or ``(starts, ends, summits)``), int64 arrays in file order.
Intervals = dict[str, tuple[np.ndarray, ...]]

#: narrowPeak's summit column (0-based): the summit's offset from the start, -1 when not called.
_SUMMIT_FIELD = 9

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
    summits: bool = False,
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
    summits
        Also read narrowPeak's summit (10th column, an offset from the
        start; -1, or a file of fewer columns, means none was called and
        the peak's midpoint stands in), as a position on the chromosome.

    Returns
    -------
    dict
        ``{chrom: (starts, ends)}``, or ``(starts, ends, summits)`` with
        ``summits``: int64 arrays in file order.

    Raises
    ------
    BadInputError
        Naming file, line and reason: a wrong column count, a coordinate that
        is not a non-negative integer, start not before end, an unknown
        chromosome, an end beyond the chromosome's length, a summit outside
        its peak, or a stream that cannot be decompressed.
    """
    try:
        with storage.open_input(uri) as stream:
            data = stream.read()
    except (OSError, EOFError) as err:
        if isinstance(err, FileNotFoundError):
            raise
        raise BadInputError(uri, 1, f"cannot be read ({err})") from None
    try:
        names, chrom_ids, columns, skipped = _fast_parse(data, chrom_sizes, unknown_chroms, past_end, summits)
    except _NotClean:
        names, chrom_ids, columns, skipped = _slow_parse(data, uri, chrom_sizes, unknown_chroms, past_end, summits)
    if skipped:
        log.info(
            "%s: %d line(s) on chromosomes not in the genome ignored (%s)",
            uri,
            sum(skipped.values()),
            ", ".join(f"{chrom} {n}" for chrom, n in sorted(skipped.items())),
        )
    return _by_chrom(names, chrom_ids, columns)


def _fast_parse(
    data: bytes, chrom_sizes: Mapping[str, int] | None, unknown_chroms: str, past_end: str, summits: bool
) -> tuple[list[str], np.ndarray, list[np.ndarray], dict[str, int]]:
    """Parse and check the whole file with Arrow; raise :class:`_NotClean` on any doubt.

    Returns names, chromosome indices, the columns (starts, ends[, summits]),
    and lines skipped by chromosome.
    """
    skipped: dict[str, int] = {}
    if not data.strip():
        return [], np.empty(0, np.int64), [np.empty(0, np.int64)] * (3 if summits else 2), skipped
    wanted = ["f0", "f1", "f2", *([f"f{_SUMMIT_FIELD}"] if summits else [])]
    try:
        table = pacsv.read_csv(
            io.BytesIO(data),
            read_options=pacsv.ReadOptions(autogenerate_column_names=True, block_size=1 << 24),
            parse_options=pacsv.ParseOptions(delimiter="\t", quote_char=False, ignore_empty_lines=True),
            convert_options=pacsv.ConvertOptions(
                include_columns=wanted,
                column_types={name: pa.int64() for name in wanted[1:]} | {"f0": pa.dictionary(pa.int32(), pa.string())},
                strings_can_be_null=False,
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowKeyError, KeyError):
        raise _NotClean from None
    chroms = table.unify_dictionaries().column("f0").combine_chunks()
    names = chroms.dictionary.to_pylist()
    chrom_ids = chroms.indices.to_numpy().astype(np.int64)
    starts, ends = table.column("f1").to_numpy(), table.column("f2").to_numpy()
    columns = [starts, ends]
    if summits:
        offsets = table.column(f"f{_SUMMIT_FIELD}").to_numpy()
        if np.any((offsets < -1) | (offsets >= ends - starts)):
            raise _NotClean
        columns.append(np.where(offsets < 0, (starts + ends) // 2, starts + offsets))
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
            chrom_ids, columns = chrom_ids[known], [column[known] for column in columns]
    return names, chrom_ids, columns, skipped


def _slow_parse(
    data: bytes, uri: str, chrom_sizes: Mapping[str, int] | None, unknown_chroms: str, past_end: str, summits: bool
) -> tuple[list[str], np.ndarray, list[np.ndarray], dict[str, int]]:
    """Parse line by line, raising on the first bad line."""
    index: dict[str, int] = {}
    chrom_ids, starts, ends, summit_at = [], [], [], []
    first_unknown: tuple[int, str] | None = None
    skipped: dict[str, int] = {}
    sizes = chrom_sizes if past_end == "error" else None
    for number, chrom, start, end, summit in _checked_lines(data, uri, sizes, summits):
        if chrom_sizes is not None and chrom not in chrom_sizes:
            if unknown_chroms == "error":
                raise BadInputError(uri, number, f"chromosome {chrom!r} is not in the genome")
            first_unknown = first_unknown or (number, chrom)
            skipped[chrom] = skipped.get(chrom, 0) + 1
            continue
        chrom_ids.append(index.setdefault(chrom, len(index)))
        starts.append(start)
        ends.append(end)
        summit_at.append(summit)
    if first_unknown is not None and not chrom_ids:
        number, chrom = first_unknown
        raise BadInputError(
            uri,
            number,
            f"chromosome {chrom!r} is not in the genome, nor is any other chromosome of this file (named another way?)",
        )
    columns = [np.asarray(values, dtype=np.int64) for values in (starts, ends, *([summit_at] if summits else []))]
    return list(index), np.asarray(chrom_ids, dtype=np.int64), columns, skipped


def _checked_lines(
    data: bytes, uri: str, chrom_sizes: Mapping[str, int] | None, summits: bool = False
) -> Iterator[tuple[int, str, int, int, int]]:
    """``(line, chrom, start, end, summit)`` of every interval line, checked but for the chromosome's presence.

    Ends are checked against ``chrom_sizes`` when given; the summit is a
    position on the chromosome (the midpoint when not read or not called).
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
        yield number, chrom, start, end, _summit(fields, start, end, uri, number) if summits else (start + end) // 2


def _summit(fields: list[str], start: int, end: int, uri: str, line: int) -> int:
    """The summit of a narrowPeak line as a position (its midpoint when none was called)."""
    if len(fields) <= _SUMMIT_FIELD or fields[_SUMMIT_FIELD] == "-1":
        return (start + end) // 2
    offset = _coordinate(fields[_SUMMIT_FIELD], "summit offset", uri, line)
    if offset >= end - start:
        raise BadInputError(uri, line, f"summit offset {offset} is outside the peak ({end - start} bp)")
    return start + offset


def _coordinate(text: str, what: str, uri: str, line: int) -> int:
    """A non-negative integer coordinate, or the error naming it."""
    if not _INTEGER.fullmatch(text):
        raise BadInputError(uri, line, f"{what} {text!r} is not an integer")
    value = int(text)
    if value < 0:
        raise BadInputError(uri, line, f"{what} {value} is negative")
    return value


def _by_chrom(names: list[str], chrom_ids: np.ndarray, columns: list[np.ndarray]) -> Intervals:
    """Group the rows by chromosome, keeping file order within each."""
    order = np.argsort(chrom_ids, kind="stable")
    bounds = np.searchsorted(chrom_ids[order], np.arange(len(names) + 1))
    return {
        name: tuple(column[order[low:high]] for column in columns)
        for name, low, high in zip(names, bounds[:-1], bounds[1:])
        if high > low
    }
