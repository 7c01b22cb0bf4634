"""Streaming a DREAM label file into per-chromosome column blocks.

A ``.gz`` file cannot be split, so one task reads each label file. It reads
the (decompressed) stream in blocks of whole lines, one block ahead in a
background thread, and parses each block with Arrow's multi-threaded CSV
reader. Checks are vectorised; a block in which any check fails is parsed
again line by line, which names every bad line exactly. Line numbers are
1-based with the header as line 1, as an editor shows them.

Order: each chromosome's rows must be together and in increasing start
order (the DREAM files are sorted by chromosome name, then start; any
chromosome order is accepted). A row repeating the previous row's bin is a
duplicate, a bad row like a malformed one; any other step back is an
unsorted file, refused whatever ``bad_rows`` says, since setting aside every
row out of place could drop most of a file.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Generator, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from tfbs import storage
from tfbs.errors import BadInputError
from tfbs.formats.dream import BIN_SIZE, BIN_STEP, parse_label_header, parse_label_line

#: Label codes inside preprocessing: index into :data:`LABEL_LETTERS`.
CODE_U, CODE_B, CODE_A = 0, 1, 2
LABEL_LETTERS = ("U", "B", "A")


@dataclass
class LabelPiece:
    """Consecutive-in-file rows of one chromosome.

    ``codes`` has one column per kept cell, values :data:`CODE_U` ...
    """

    chrom: str
    starts: np.ndarray  # int64
    codes: np.ndarray  # uint8, (n_rows, n_cells)


@dataclass
class ReadReport:
    """What reading one label file found: its data rows and the bad ones."""

    uri: str
    n_rows: int = 0
    rejected: list[tuple[int, str]] = field(default_factory=list)


@dataclass
class _Order:
    """The last good row, and the chromosomes whose rows have ended."""

    uri: str
    chroms: list[str]
    chrom: int = -1
    start: int = -1
    line: int = 0
    finished: set[int] = field(default_factory=set)

    def take_block(self, chrom_ids: np.ndarray, starts: np.ndarray, last_line: int) -> bool:
        """Take a block's rows if they continue the order with no duplicate; else take nothing."""
        if len(chrom_ids) == 0:
            return True
        previous = np.concatenate([[self.chrom], chrom_ids])
        same = previous[1:] == previous[:-1]
        if np.any(same & (np.diff(np.concatenate([[self.start], starts])) <= 0)):
            return False
        new_runs = chrom_ids[~same].tolist()
        # A run of the current chromosome after another one resumes it, too.
        if len(set(new_runs)) != len(new_runs) or self.finished.union([self.chrom]).intersection(new_runs):
            return False
        if new_runs and self.chrom >= 0:
            self.finished.add(self.chrom)
        self.finished.update(new_runs[:-1])
        self.chrom, self.start, self.line = int(chrom_ids[-1]), int(starts[-1]), last_line
        return True

    def take_row(self, chrom_id: int, start: int, line: int) -> str | None:
        """Take one good row; return why it is a duplicate (a bad row), or raise if out of order.

        Raises
        ------
        BadInputError
            If the row comes before the last one of its chromosome, or its
            chromosome's rows ended earlier.
        """
        chrom = self.chroms[chrom_id]
        if chrom_id == self.chrom:
            if start == self.start:
                return f"duplicate of line {self.line} ({chrom} {start})"
            if start < self.start:
                raise BadInputError(
                    self.uri,
                    line,
                    f"unsorted: {chrom} {start} after {chrom} {self.start} on line {self.line}"
                    " (sort by chromosome, then start: sort -k1,1 -k2,2n)",
                )
        elif chrom_id in self.finished:
            raise BadInputError(
                self.uri,
                line,
                f"unsorted: {chrom} rows resume after those of {self.chroms[self.chrom]}"
                " (each chromosome's rows must be together: sort -k1,1 -k2,2n)",
            )
        elif self.chrom >= 0:
            self.finished.add(self.chrom)
        self.chrom, self.start, self.line = chrom_id, start, line
        return None


class _BlockHasBadRows(Exception):
    """The fast parse found something wrong; the block is re-read slowly."""


#: Decompressed bytes handed over at a time: a broken stream is located to within this many bytes of lines.
_READ_BYTES = 1 << 20
#: Compressed bytes read at a time from a ``.gz`` file.
_COMPRESSED_READ_BYTES = 1 << 17


def _decompressed_chunks(uri: str, chunk_bytes: int) -> Generator[bytes, None, None]:
    """The file's bytes in chunks of at most ``chunk_bytes``, decompressed if gzipped (every member).

    zlib itself for ``.gz``, not a file object: on a truncated or corrupt
    stream it has handed over everything before the break, so the error
    names the first line actually lost (Arrow's codec and Python's gzip
    lose the whole read).

    Raises
    ------
    EOFError
        If a gzip member ends before its end marker (a truncated file).
    zlib.error
        If the compressed data is corrupt.
    """
    gzipped = uri.endswith(".gz")
    with storage.open_input(uri, compression=None if gzipped else "detect") as raw:
        if not gzipped:
            while chunk := raw.read(chunk_bytes):
                yield chunk
            return
        decompressor, started = zlib.decompressobj(wbits=31), False
        while compressed := raw.read(_COMPRESSED_READ_BYTES):
            while compressed:
                started = True
                yield decompressor.decompress(compressed, chunk_bytes)
                if decompressor.eof:  # the next member, if any, follows
                    compressed = decompressor.unused_data
                    decompressor, started = zlib.decompressobj(wbits=31), False
                else:
                    compressed = decompressor.unconsumed_tail
        if started:
            yield decompressor.flush()
            if not decompressor.eof:
                raise EOFError("compressed stream ended before its end-of-stream marker")


def _read_block(chunks: Iterator[bytes], block_bytes: int) -> tuple[bytes, Exception | None, bool]:
    """Read about ``block_bytes``: ``(data, the error that stopped the read or None, stream ended)``."""
    parts: list[bytes] = []
    size = 0
    try:
        while size < block_bytes:
            chunk = next(chunks, None)
            if chunk is None:
                return b"".join(parts), None, True
            parts.append(chunk)
            size += len(chunk)
    except (OSError, EOFError, zlib.error) as err:  # truncated or corrupt
        return b"".join(parts), err, True
    return b"".join(parts), None, False


def _line_blocks(uri: str, block_bytes: int) -> Iterator[tuple[int, int, bytes]]:
    """Yield ``(first_line_number, n_lines, text)`` blocks of whole lines.

    Raises
    ------
    BadInputError
        If the stream cannot be decompressed (truncated or corrupt gzip),
        after the blocks read so far, naming the first line not read.
    """
    next_line, carry, ended = 1, b"", False
    # Reads no larger than a block: a small block_bytes (as in tests) gives
    # many blocks even for a small file.
    chunks = _decompressed_chunks(uri, min(_READ_BYTES, block_bytes))
    with closing(chunks), ThreadPoolExecutor(1) as reader:
        # The next block is read and decompressed in a thread while this one
        # is parsed (zlib and Arrow release the GIL).
        pending = reader.submit(_read_block, chunks, block_bytes)
        while not ended:
            data, failure, ended = pending.result()
            if not ended:
                pending = reader.submit(_read_block, chunks, block_bytes)
            text = carry + data
            cut = text.rfind(b"\n") + 1
            if cut:
                n_lines = text.count(b"\n", 0, cut)
                yield next_line, n_lines, text[:cut]
                next_line += n_lines
            carry = text[cut:]
    if failure is not None:
        raise BadInputError(uri, next_line, f"cannot be read from this line on ({failure})")
    if carry:
        yield next_line, 1, carry + b"\n"  # a last line without its newline


def _fast_parse(block: bytes, n_cells: int, keep: list[int], chrom_index: dict[str, int]):
    """Parse a clean block with Arrow; raise :class:`_BlockHasBadRows` otherwise.

    Returns ``(chrom_ids, starts, codes)``, chrom ids indexing ``chrom_index``.
    """
    names = ["chrom", "start", "stop", *[f"cell{i}" for i in range(n_cells)]]
    labels = pa.dictionary(pa.int32(), pa.string())
    types = {"chrom": labels, "start": pa.int64(), "stop": pa.int64(), **{n: labels for n in names[3:]}}

    try:
        table = pacsv.read_csv(
            io.BytesIO(block),
            read_options=pacsv.ReadOptions(column_names=names, block_size=1 << 22),
            parse_options=pacsv.ParseOptions(delimiter="\t", quote_char=False, ignore_empty_lines=False),
            convert_options=pacsv.ConvertOptions(column_types=types, strings_can_be_null=False),
        )
    except pa.ArrowInvalid:
        raise _BlockHasBadRows from None
    starts = table.column("start").to_numpy()
    stops = table.column("stop").to_numpy()
    if np.any(stops - starts != BIN_SIZE) or np.any(starts % BIN_STEP) or np.any(starts < 0):
        raise _BlockHasBadRows
    chrom_ids = _dictionary_lookup(table.column("chrom"), chrom_index)
    codes = np.empty((len(starts), len(keep)), dtype=np.uint8)
    letters = {letter: code for code, letter in enumerate(LABEL_LETTERS)}
    for out, cell in enumerate(keep):
        codes[:, out] = _dictionary_lookup(table.column(f"cell{cell}"), letters)
    if np.any(chrom_ids < 0) or np.any(codes == 255):
        raise _BlockHasBadRows
    return chrom_ids, starts, codes


def _dictionary_lookup(column: pa.ChunkedArray, index: dict[str, int]) -> np.ndarray:
    """Map a dictionary-encoded string column through ``index`` (-1 if absent)."""
    parts = []
    for chunk in column.chunks:
        table = np.array([index.get(value, -1) for value in chunk.dictionary.to_pylist()], dtype=np.int64)
        parts.append(table[chunk.indices.to_numpy()] if len(table) else np.empty(0, np.int64))
    return np.concatenate(parts) if parts else np.empty(0, np.int64)


def _slow_parse(
    block: bytes,
    first_line: int,
    n_cells: int,
    keep: list[int],
    chrom_index: dict[str, int],
    order: _Order,
    fail: bool,
):
    """Parse a block line by line; returns good rows and ``(line, reason)`` rejects.

    Raises
    ------
    BadInputError
        On the first bad line if ``fail``; on rows out of order always.
    """
    chrom_ids, starts, codes, rejected = [], [], [], []
    letters = {letter: code for code, letter in enumerate(LABEL_LETTERS)}
    for offset, raw in enumerate(block.decode("utf-8", errors="replace").split("\n")[:-1]):
        line = first_line + offset
        try:
            row = parse_label_line(raw, n_cells, order.uri, line)
            if row.chrom not in chrom_index:
                raise BadInputError(order.uri, line, f"chromosome {row.chrom!r} is not in the genome FASTA")
        except BadInputError as err:
            if fail:
                raise
            rejected.append((line, err.reason))
            continue
        duplicate = order.take_row(chrom_index[row.chrom], row.start, line)  # raises if unsorted
        if duplicate:
            if fail:
                raise BadInputError(order.uri, line, duplicate)
            rejected.append((line, duplicate))
            continue
        chrom_ids.append(chrom_index[row.chrom])
        starts.append(row.start)
        codes.append([letters[row.labels[cell]] for cell in keep])
    return (
        np.asarray(chrom_ids, dtype=np.int64),
        np.asarray(starts, dtype=np.int64),
        np.asarray(codes, dtype=np.uint8).reshape(len(starts), len(keep)),
        rejected,
    )


def read_label_file(
    uri: str,
    keep_cells: list[str],
    chroms: list[str],
    bad_rows: Literal["fail", "set_aside"],
    block_bytes: int,
) -> Iterator[LabelPiece | ReadReport]:
    """Stream a label file as :class:`LabelPiece` s, then its :class:`ReadReport`.

    Parameters
    ----------
    uri
        The label file (``file://``, ``gs://``, ``hdfs://``; ``.gz`` or plain).
    keep_cells
        Cells whose columns are kept, in output order.
    chroms
        Chromosomes of the genome FASTA; a row on another one is a bad row.
    bad_rows
        ``fail`` raises on the first bad line; ``set_aside`` counts it in
        the report with its reason.
    block_bytes
        Decompressed bytes per parsed block.

    Raises
    ------
    BadInputError
        A bad line (``bad_rows="fail"``; a duplicate bin is one), a wrong
        header, a header without rows, rows out of order, or an unreadable
        stream, naming file and line.
    """
    chrom_index = {chrom: i for i, chrom in enumerate(chroms)}
    report = ReadReport(uri)
    order = _Order(uri, chroms)
    n_cells, keep = 0, []
    for first_line, n_lines, block in _line_blocks(uri, block_bytes):
        if first_line == 1:
            header, _, block = block.partition(b"\n")
            cells = parse_label_header(header.decode("utf-8", errors="replace"), uri)
            n_cells, keep = len(cells), [cells.index(cell) for cell in keep_cells]
            first_line, n_lines = 2, n_lines - 1
            if not block:
                continue
        try:
            chrom_ids, starts, codes = _fast_parse(block, n_cells, keep, chrom_index)
            if not order.take_block(chrom_ids, starts, first_line + n_lines - 1):
                raise _BlockHasBadRows
        except _BlockHasBadRows:
            chrom_ids, starts, codes, rejected = _slow_parse(
                block, first_line, n_cells, keep, chrom_index, order, fail=bad_rows == "fail"
            )
            report.rejected.extend(rejected)
        report.n_rows += n_lines
        yield from _pieces(chrom_ids, starts, codes, chroms)
    if n_cells == 0:
        raise BadInputError(uri, 1, "file is empty")
    if report.n_rows == 0:
        raise BadInputError(uri, 1, "header but no data rows")
    yield report


def _pieces(chrom_ids: np.ndarray, starts: np.ndarray, codes: np.ndarray, chroms: list[str]) -> Iterator[LabelPiece]:
    """Split a block's rows by chromosome (usually one: files are sorted), in file order.

    File order lets a reader take a chromosome as complete when the next
    one's rows begin.
    """
    if len(chrom_ids) == 0:
        return
    if chrom_ids[0] == chrom_ids[-1] and np.all(chrom_ids == chrom_ids[0]):
        yield LabelPiece(chroms[chrom_ids[0]], starts, codes)
        return
    unique, first = np.unique(chrom_ids, return_index=True)
    for chrom_id in unique[np.argsort(first)]:
        mask = chrom_ids == chrom_id
        yield LabelPiece(chroms[chrom_id], starts[mask], codes[mask])
