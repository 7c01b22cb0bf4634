"""Sequence windows from an indexed genome FASTA, a chromosome at a time.

A task loads one chromosome into a ``uint8`` array through the ``.fai``
offsets (a byte-range read, so ``gs://`` and ``hdfs://`` genomes work
without staging the whole FASTA), then cuts every window it needs with one
vectorised gather. Windows are centred on the 200 bp bin.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tfbs import storage
from tfbs.errors import BadInputError
from tfbs.formats.dream import BIN_SIZE

#: Status of a bin's window, as counted in the manifest.
WINDOW_OK, WINDOW_OUT_OF_BOUNDS, WINDOW_TOO_MANY_N = 0, 1, 2

_N = ord("N")

#: The letters a genome may hold, upper-cased: ACGT, N, and the IUPAC
#: ambiguity codes, which every reader here takes as N (no one-hot channel
#: set, :mod:`tf_models.encoding`). The codes are allowed because real
#: references carry them (GRCh38 has a few M and R bases), so refusing them
#: would refuse a real genome; anything else (digits, '-', '.', '*', other
#: letters) is a corrupt or non-DNA file.
GENOME_LETTERS = b"ACGTN" + b"RYKMSWBDHV"
#: The letters in either case.
_EITHER_CASE = GENOME_LETTERS + GENOME_LETTERS.lower()
_NOT_A_BASE = np.ones(256, dtype=bool)
_NOT_A_BASE[np.frombuffer(GENOME_LETTERS, dtype=np.uint8)] = False


@dataclass(frozen=True)
class FaiEntry:
    """One line of a ``.fai`` index."""

    length: int
    offset: int
    line_bases: int
    line_width: int
    #: The sequence's name, for messages.
    name: str = ""


def read_fai(fasta_uri: str) -> dict[str, FaiEntry]:
    """Read ``<fasta>.fai`` into ``{chrom: FaiEntry}``.

    Raises
    ------
    BadInputError
        On a line that is not five tab-separated fields with integer
        columns, a sequence listed twice, or an index without any.
    """
    fai_uri = f"{fasta_uri}.fai"
    entries: dict[str, FaiEntry] = {}
    for number, line in enumerate(storage.read_text(fai_uri).splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 5 or not all(field.isascii() and field.isdigit() for field in fields[1:5]):
            raise BadInputError(
                fai_uri, number, f"expected name, length, offset, bases and bytes per line; found {line!r}"
            )
        name, (length, offset, line_bases, line_width) = fields[0], (int(field) for field in fields[1:5])
        if name in entries:
            raise BadInputError(fai_uri, number, f"{name} is listed twice")
        if length and not 0 < line_bases <= line_width:
            raise BadInputError(fai_uri, number, f"{line_bases} bases in lines of {line_width} bytes")
        entries[name] = FaiEntry(length, offset, line_bases, line_width, name)
    if not entries:
        raise BadInputError(fai_uri, 1, "the index lists no sequence")
    return entries


def record_bytes(entry: FaiEntry) -> int:
    """Bytes from a record's first base to its last, line breaks inside included.

    Examples
    --------
    >>> record_bytes(FaiEntry(length=130, offset=6, line_bases=60, line_width=61))
    132
    """
    n_full, rest = divmod(entry.length, entry.line_bases) if entry.length else (0, 0)
    if rest == 0 and n_full:
        return n_full * entry.line_width - (entry.line_width - entry.line_bases)
    return n_full * entry.line_width + rest


#: Records whose headers are checked at most: the first, the last and evenly
#: spaced ones between (a genome of many scaffolds on gs:// stays a few reads).
_CHECKED_RECORDS = 256
#: Bytes read around a header line or a record's end; longer headers or gaps are errors.
_PEEK_BYTES = 4096


def check_fasta_index(fasta_uri: str) -> dict[str, FaiEntry]:
    """Read the ``.fai`` and check that it indexes this FASTA; return its entries.

    A stale index (the FASTA rewritten after ``samtools faidx``) makes every
    window wrong without any error, so: nothing but blank lines may precede
    the first ``>`` header; each checked record's offset must follow a
    ``>`` line of its name; the next record's header must start where the
    record's bases end, blank lines aside; and the file must end where the
    last record does. This costs a few small reads, not a pass over the genome.

    Raises
    ------
    BadInputError
        Naming the FASTA's line for text before the first header, or the
        ``.fai`` and its line for a stale record.
    """
    entries = read_fai(fasta_uri)
    # (offset, line in the .fai, name) in FASTA order
    records = sorted((entry.offset, number, name) for number, (name, entry) in enumerate(entries.items(), 1))
    step = max(1, len(records) // _CHECKED_RECORDS)
    checked = sorted({*range(0, len(records), step), len(records) - 1})
    fs, path = storage.filesystem(fasta_uri)
    size = fs.get_file_info(path).size
    with fs.open_input_file(path) as fasta:

        def read_at(offset: int, length: int) -> bytes:
            length = max(0, min(length, size - offset, _PEEK_BYTES))
            return fasta.read_at(length, offset) if length else b""

        _check_first_line(fasta_uri, read_at(0, _PEEK_BYTES))
        header_starts = {i: _header_start(fasta_uri, records[i], read_at) for i in checked}
        header_starts[len(records)] = size
        for i in checked:
            if i + 1 in header_starts:
                offset, number, name = records[i]
                what = "the file ends" if i + 1 == len(records) else f"{records[i + 1][2]}'s header starts"
                _check_record_end(fasta_uri, number, name, entries[name], header_starts[i + 1], what, read_at)
    return entries


def _check_first_line(fasta_uri: str, head: bytes) -> None:
    """Raise unless the first line that is not blank is a ``>`` header."""
    for number, line in enumerate(head.split(b"\n"), start=1):
        if line.strip():
            if not line.startswith(b">"):
                raise BadInputError(fasta_uri, number, "text before the first '>' header")
            return


def _stale(fasta_uri: str, number: int, reason: str) -> BadInputError:
    return BadInputError(f"{fasta_uri}.fai", number, f"stale index of {fasta_uri} (re-run `samtools faidx`): {reason}")


def _header_start(fasta_uri: str, record: tuple[int, int, str], read_at: Callable[[int, int], bytes]) -> int:
    """Byte at which the ``>`` line before a record's first base starts, checked."""
    offset, number, name = record
    before = read_at(max(0, offset - _PEEK_BYTES), min(offset, _PEEK_BYTES))
    line_start = before.rfind(b"\n", 0, len(before) - 1) + 1
    header = before[line_start:].rstrip(b"\r\n").decode("utf-8", errors="replace")
    if not before.endswith(b"\n") or header[1:].split()[:1] != [name] or not header.startswith(">"):
        raise _stale(fasta_uri, number, f"{name}'s offset {offset} does not follow a '>{name}' line")
    return offset - len(before) + line_start


def _check_record_end(
    fasta_uri: str,
    number: int,
    name: str,
    entry: FaiEntry,
    next_start: int,
    what: str,
    read_at: Callable[[int, int], bytes],
) -> None:
    """Raise unless a record's last base is a base, followed by line breaks only up to ``next_start``."""
    end = entry.offset + record_bytes(entry)
    last = end - 1 if entry.length else end
    gap = next_start - end
    tail = read_at(last, next_start - last) if 0 <= gap <= _PEEK_BYTES else b""
    if not 0 <= gap <= _PEEK_BYTES or tail[: end - last].isspace() or tail[end - last :].strip():
        raise _stale(
            fasta_uri,
            number,
            f"{name} of {entry.length} bp would end at byte {end}, but {what} at byte {next_start}",
        )


#: FASTA lines :func:`load_chromosome` reads at a time (4 MB of 60-base lines).
_LOAD_LINES = 1 << 16


def load_chromosome(fasta_uri: str, entry: FaiEntry) -> np.ndarray:
    """The bases of one chromosome, upper-cased, as a ``uint8`` array.

    Read a block of lines at a time: reading the whole sequence with its line
    breaks first cost a second allocation the size of the chromosome, whose
    first touch took longer than the copying (chr3: 0.39 s against 0.10 s).
    Each block's letters are checked as it is copied (:data:`GENOME_LETTERS`):
    the genome is checked where tasks read it, since checking it whole on the
    driver first would read every base twice.

    Raises
    ------
    BadInputError
        Naming the FASTA's line and column of the first character that is
        not a base (or of a line shorter or longer than the index says).
    """
    n_full, rest = divmod(entry.length, entry.line_bases)
    bases = np.empty(entry.length, dtype=np.uint8)
    blocks = [(first, min(_LOAD_LINES, n_full - first)) for first in range(0, n_full, _LOAD_LINES)]
    ranges = [(entry.offset + first * entry.line_width, lines * entry.line_width) for first, lines in blocks]
    if rest:
        ranges.append((entry.offset + n_full * entry.line_width, rest))
    for number, data in enumerate(storage.read_ranges(fasta_uri, ranges)):
        whole_lines = number < len(blocks)
        # The last, partial line (``rest`` bases) is read without its line break.
        first, lines = blocks[number] if whole_lines else (n_full, 1)
        n_bases = entry.line_bases if whole_lines else rest
        rows = np.frombuffer(data, dtype=np.uint8).reshape(lines, -1)
        if not _letters_and_breaks(data, rows, entry.line_bases):
            raise _not_a_base(fasta_uri, entry, first, rows)
        target = bases[first * entry.line_bases : first * entry.line_bases + lines * n_bases].reshape(lines, n_bases)
        # FASTA holds letters only: clearing bit 5 upper-cases them, here as they are copied.
        np.bitwise_and(rows[:, :n_bases], 0xDF, out=target)
    return bases


def _letters_and_breaks(data: bytes, rows: np.ndarray, line_bases: int) -> bool:
    """Whether a block's lines are letters of a genome, each ending in the same line break.

    Its letters deleted, a good block is its line breaks alone, one a line;
    and each line's break is where the index says. ``bytes.translate`` runs
    at memory speed (about 3 ms a 4 MB block, where a numpy lookup of every
    base takes 6 and the copy itself 3), and only the breaks' column is
    compared in numpy; a block that fails is searched by :func:`_not_a_base`.
    """
    line_break = rows[0, line_bases:].tobytes()
    if line_break not in (b"", b"\n", b"\r\n") or data.translate(None, _EITHER_CASE) != line_break * len(rows):
        return False
    return bool((rows[:, line_bases:] == rows[:1, line_bases:]).all())


def _not_a_base(fasta_uri: str, entry: FaiEntry, first_line: int, rows: np.ndarray) -> BadInputError:
    """The error for the first wrong byte of a block: its FASTA line and column, and what is wrong.

    Parameters
    ----------
    first_line
        The record's line (from 0) that the block starts with.
    rows
        The block's bytes, a row per line, line breaks included.
    """
    wrong = np.empty(rows.shape, dtype=bool)
    wrong[:, : entry.line_bases] = _NOT_A_BASE[rows[:, : entry.line_bases] & 0xDF]
    wrong[:, entry.line_bases :] = (rows[:, entry.line_bases :] != ord("\n")) & (
        rows[:, entry.line_bases :] != ord("\r")
    )
    row, column = divmod(int(np.argmax(wrong)), rows.shape[1])
    # The lines before the record are counted only here, on the way to an
    # error: a pass over what precedes the record is no cost to a good genome.
    line = _lines_before(fasta_uri, entry.offset) + first_line + row + 1
    byte = int(rows[row, column])
    stale = "of the index (re-run `samtools faidx`)"
    if column >= entry.line_bases:
        reason = f"{entry.name}'s line is longer than the {entry.line_bases} bases {stale}"
    elif byte in b"\r\n":
        reason = f"{entry.name}'s line is shorter than the {entry.line_bases} bases {stale}"
    else:
        reason = (
            f"invalid base {chr(byte)!r} in {entry.name} at column {column + 1} "
            "(allowed: A, C, G, T, N and the IUPAC ambiguity codes, in either case)"
        )
    return BadInputError(fasta_uri, line, reason)


def _lines_before(fasta_uri: str, offset: int) -> int:
    """Line breaks in the first ``offset`` bytes of a file, read a block at a time."""
    block = _LOAD_LINES * 64
    ranges = [(start, min(block, offset - start)) for start in range(0, offset, block)]
    return sum(data.count(b"\n") for data in storage.read_ranges(fasta_uri, ranges))


def window_starts(bin_starts: np.ndarray, window: int) -> np.ndarray:
    """First base of the ``window``-bp interval centred on each bin.

    Examples
    --------
    >>> window_starts(np.array([1000]), 1000).tolist()
    [600]
    """
    return np.asarray(bin_starts, dtype=np.int64) + BIN_SIZE // 2 - window // 2


#: Bases :func:`base_positions` compares at a time.
_SCAN_BLOCK = 1 << 18


def base_positions(chromosome: np.ndarray, base: int) -> np.ndarray:
    """Positions where ``chromosome`` holds ``base`` (an ASCII code), in order.

    Compared a block at a time into one small reused mask: a mask of the
    whole chromosome is a fresh allocation as large as the chromosome, and
    on 2 cores its first touch cost twenty times the comparing (chr1:
    0.7 s against 0.03 s).

    Examples
    --------
    >>> base_positions(np.frombuffer(b"ACNNGN", np.uint8), ord("N")).tolist()
    [2, 3, 5]
    """
    mask = np.empty(min(len(chromosome), _SCAN_BLOCK), dtype=bool)
    found = []
    for first in range(0, len(chromosome), _SCAN_BLOCK):
        block = chromosome[first : first + _SCAN_BLOCK]
        hits = np.equal(block, base, out=mask[: len(block)])
        if hits.any():
            found.append(np.flatnonzero(hits) + first)
    return np.concatenate(found) if found else np.empty(0, dtype=np.intp)


def window_status(
    chromosome: np.ndarray, bin_starts: np.ndarray, window: int, max_n_fraction: float, pad: bool
) -> np.ndarray:
    """Classify each bin's window: OK, out of bounds, or too many N.

    Parameters
    ----------
    chromosome
        The chromosome's bases (:func:`load_chromosome`).
    bin_starts
        Bin starts on this chromosome.
    window
        Window length in bp.
    max_n_fraction
        Windows with a larger share of N (padding included) are
        :data:`WINDOW_TOO_MANY_N`.
    pad
        Windows that leave the chromosome are padded with N instead of being
        :data:`WINDOW_OUT_OF_BOUNDS`.
    """
    low = window_starts(bin_starts, window)
    high = low + window
    inside_low, inside_high = np.clip(low, 0, len(chromosome)), np.clip(high, 0, len(chromosome))
    # N counts by binary search over the N positions: one pass over the
    # chromosome for every window, memory in proportion to its Ns.
    n_positions = base_positions(chromosome, _N)
    inside_n = np.searchsorted(n_positions, inside_high) - np.searchsorted(n_positions, inside_low)
    n_count = inside_n + (inside_low - low) + (high - inside_high)
    status = np.full(len(low), WINDOW_OK, dtype=np.int8)
    status[n_count > max_n_fraction * window] = WINDOW_TOO_MANY_N
    if not pad:
        status[(low < 0) | (high > len(chromosome))] = WINDOW_OUT_OF_BOUNDS
    return status


def gather_windows(chromosome: np.ndarray, bin_starts: np.ndarray, window: int) -> np.ndarray:
    """Window bytes for each bin, N where a window leaves the chromosome.

    Returns
    -------
    numpy.ndarray
        ``uint8`` array (n_bins, window) of ASCII bases.
    """
    starts = window_starts(bin_starts, window)
    inside = (starts >= 0) & (starts + window <= len(chromosome))
    if len(chromosome) >= window and inside.all():
        # The usual case: rows of a strided view, gathered straight into the result.
        return np.lib.stride_tricks.sliding_window_view(chromosome, window)[starts]
    windows = np.full((len(starts), window), _N, dtype=np.uint8)
    if len(chromosome) >= window:
        # Rows of a strided view: one contiguous copy per window, no index arrays.
        windows[inside] = np.lib.stride_tricks.sliding_window_view(chromosome, window)[starts[inside]]
    for row in np.flatnonzero(~inside):  # windows that leave the chromosome: rare
        low, high = max(starts[row], 0), min(starts[row] + window, len(chromosome))
        if high > low:
            windows[row, low - starts[row] : high - starts[row]] = chromosome[low:high]
    return windows
