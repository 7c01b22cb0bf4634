"""Writing one chromosome's kept rows: Parquet shards and training records.

Train and valid rows carry their sequence window; a row is a (bin, cell)
pair, positives once (``draw = -1``) and negatives once per draw that picked
them. Test rows carry no sequence: evaluation scores every test bin and
reads its window from the genome, so the held-out chromosomes are not copied
into the shards once per cell.

The graph-native training mirror splits the same rows into
``records/<split>/positives`` and ``records/<split>/negatives-<draw>``, so a
trainer can redraw negatives per epoch without touching the positives. A
task does not write those files itself: it deals each record to one of the
split's files at random (:func:`deal`) and stores what it dealt in one
chunk file of the staging folder (:mod:`preprocess.staging`); a later task
gathers each record file's chunks from every chunk file
(:func:`gather_dealt_records`), so every file holds a sample of all TFs, cells and chromosomes. Files cut
per (TF, chromosome) gave each worker, and each stretch of the stream, its
own mix of TFs among the positives and another among the negatives: a label
that the TF alone predicted, differently on each worker.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from blake3 import blake3

from preprocess.label_reader import CODE_B, LABEL_LETTERS
from preprocess.segregate import ChromBins, Decision
from preprocess.staging import DealtChunk, GatheredChunk, RecordChunk, read_dealt_chunks
from tfbs import storage
from tfbs.formats.dream import LABEL_CODES, TEST
from tfbs.formats.genome import gather_windows
from tfbs.formats.manifest import OUTCOMES
from tfbs.formats.records import RecordLayout, pack_records

_KEPT = OUTCOMES.index("kept")
#: Shard label codes (A = -1) by preprocessing code.
_SHARD_CODES = np.array([LABEL_CODES[letter] for letter in LABEL_LETTERS], dtype=np.int8)


#: Shard columns with few distinct values, stored dictionary-encoded.
_DICTIONARY_COLUMNS = ("tf", "chrom", "cell", "label", "label_code", "tf_index", "cell_index", "dnase", "draw")
#: Shard columns with min/max statistics, for readers that filter on them.
_STATISTICS_COLUMNS = ["tf", "chrom", "start", "cell"]


@dataclass(frozen=True)
class ShardContext:
    """What every chromosome task needs to write its outputs."""

    out_uri: str
    tfs: list[str]
    cells: list[str]
    window: int
    seed: int
    rows_per_row_group: int
    test_rows_per_row_group: int
    layout: RecordLayout
    #: Number of record files of each ``<split>/<kind>`` (``train/positives``, ``valid/negatives-0``...).
    record_files: dict[str, int] = field(default_factory=dict)


@dataclass
class ChromResult:
    """What one chromosome task wrote and counted."""

    tf: str
    split: str
    chrom: str
    counts: list[tuple[str, str, str, str, str, int]] = field(default_factory=list)
    draws: dict[str, list[int]] = field(default_factory=dict)
    parquet: list[dict] = field(default_factory=list)
    #: ``(file key "<split>/<kind>", file number, packed records)`` for the record writer.
    record_chunks: list[RecordChunk] = field(default_factory=list)
    #: The same records once stored (:func:`preprocess.staging.store_dealt_records`).
    dealt: list[DealtChunk] = field(default_factory=list)


def tally(bins: ChromBins, cells: list[str], decision: Decision) -> ChromResult:
    """Count every (bin, cell) by outcome, and kept rows by label."""
    result = ChromResult(bins.tf, bins.split, bins.chrom)
    n_outcomes, n_labels = len(OUTCOMES), len(LABEL_LETTERS)
    for c, cell in enumerate(cells):
        # Counted in one pass over (outcome, label) pairs: sorting for np.unique took most of the time.
        pairs = decision.outcome[:, c].astype(np.intp) * n_labels + bins.codes[:, c]
        by_pair = np.bincount(pairs, minlength=n_outcomes * n_labels).reshape(n_outcomes, n_labels)
        for code, n in enumerate(by_pair.sum(axis=1)):
            if code != _KEPT and n:
                result.counts.append((bins.tf, cell, OUTCOMES[code], bins.split, "", int(n)))
        for label, n in enumerate(by_pair[_KEPT]):
            if n:
                result.counts.append((bins.tf, cell, "kept", bins.split, LABEL_LETTERS[label], int(n)))
        result.draws[cell] = [int(n) for n in decision.drawn[:, c, :].sum(axis=0)]
    return result


@dataclass
class _KeptRows:
    """The columns of the rows to write, one entry per row."""

    starts: np.ndarray  # int64
    cols: np.ndarray  # int16: the cell's column in ``bins.codes``
    codes: np.ndarray  # uint8
    dnase: np.ndarray  # float32
    draws: np.ndarray | None  # int16, -1 for 'every draw'; None on a test chromosome


def _kept_rows(bins: ChromBins, decision: Decision) -> _KeptRows:
    """The rows to write: every kept (bin, cell) of a test chromosome; else positives, then each draw's negatives."""
    if bins.split == TEST:
        kept = decision.outcome == _KEPT
        # A boolean mask walks (bin, cell) in np.nonzero's order without its two
        # index arrays (at full size 40 M rows: 640 MB of fresh int64 per chromosome).
        cols = np.broadcast_to(np.arange(kept.shape[1], dtype=np.int16), kept.shape)[kept]
        return _KeptRows(np.repeat(bins.starts, kept.sum(axis=1)), cols, bins.codes[kept], bins.open[kept], None)
    pos_rows, pos_cols = np.nonzero((decision.outcome == _KEPT) & (bins.codes == CODE_B))
    neg_rows, neg_cols, neg_draws = np.nonzero(decision.drawn)
    rows = np.concatenate([pos_rows, neg_rows])
    cols = np.concatenate([pos_cols, neg_cols])
    return _KeptRows(
        bins.starts[rows],
        cols.astype(np.int16),
        bins.codes[rows, cols],
        bins.open[rows, cols],
        np.concatenate([np.full(len(pos_rows), -1), neg_draws]).astype(np.int16),
    )


def write_chromosome(
    bins: ChromBins, cells: list[str], decision: Decision, chromosome: np.ndarray, context: ShardContext
) -> ChromResult:
    """Write a chromosome's kept rows and return what was written and counted.

    Parameters
    ----------
    bins, cells, decision
        The annotated bins, their cell names and outcomes.
    chromosome
        The chromosome's bases (:func:`tfbs.formats.genome.load_chromosome`).
    context
        Output location and layout.
    """
    result = tally(bins, cells, decision)
    kept = _kept_rows(bins, decision)
    n_rows = len(kept.starts)
    if n_rows == 0:
        return result
    tf_index = context.tfs.index(bins.tf)
    cell_index = np.array([context.cells.index(cell) for cell in cells], dtype=np.int32)[kept.cols]
    codes, dnase, draws = kept.codes, kept.dnase, kept.draws
    one_value = np.zeros(n_rows, dtype=np.int8)
    columns = {
        "tf": _strings([bins.tf], one_value),
        "chrom": _strings([bins.chrom], one_value),
        "start": pa.array(kept.starts, pa.int64()),
        "cell": _strings(cells, kept.cols),
        "label": _strings(LABEL_LETTERS, codes.view(np.int8)),
        "label_code": pa.array(_SHARD_CODES[codes], pa.int8()),
        "tf_index": pa.array(np.full(n_rows, tf_index, dtype=np.int32)),
        "cell_index": pa.array(cell_index),
        "dnase": pa.array(dnase),
    }
    windows = None
    if draws is not None:
        # One copy of each row's window, here, and one more into its record below: at full size a
        # copy is 3 GB of fresh memory, whose first touch costs more than the copying.
        windows = gather_windows(chromosome, kept.starts, context.window)
        columns["draw"] = pa.array(draws)
        columns["sequence"] = pa.FixedSizeBinaryArray.from_buffers(
            pa.binary(context.window), n_rows, [None, pa.py_buffer(windows)]
        )
    path = f"{context.out_uri}/parquet/{bins.split}/{bins.tf}/{bins.chrom}.parquet"
    # Test rows are read whole by evaluation: large row groups write several times faster.
    row_group = context.test_rows_per_row_group if bins.split == TEST else context.rows_per_row_group
    checksum = _write_parquet(pa.table(columns), path, row_group)
    result.parquet.append({"path": path, "rows": n_rows, "blake3": checksum})
    if windows is not None and draws is not None:
        labels = (codes == CODE_B).astype(np.uint8)
        tf_indices = np.full(n_rows, tf_index)
        for draw in np.unique(draws):
            kind = "positives" if draw < 0 else f"negatives-{draw}"
            file_key = f"{bins.split}/{kind}"
            rng = np.random.default_rng([context.seed, *f"{file_key}/{bins.tf}/{bins.chrom}".encode()])
            chosen = np.flatnonzero(draws == draw)
            # Packed in dealt order, so each file's records are one slice.
            order, files = deal(len(chosen), context.record_files[file_key], rng)
            packed = pack_records(windows, labels, tf_indices, cell_index, dnase, context.layout, rows=chosen[order])
            result.record_chunks.extend((file_key, number, packed[part]) for number, part in files)
    return result


def deal(n_records: int, n_files: int, rng: np.random.Generator) -> tuple[np.ndarray, list[tuple[int, slice]]]:
    """Deal ``n_records`` records to ``n_files`` files at random.

    Returns
    -------
    tuple
        The order of the records that puts each file's together (in their
        own order), and ``(file number, slice of that order)`` of each
        non-empty file.

    Examples
    --------
    >>> order, files = deal(5, 2, np.random.default_rng(0))
    >>> sorted(order.tolist()), [(number, part.stop - part.start) for number, part in files]
    ([0, 1, 2, 3, 4], [(0, 2), (1, 3)])
    """
    numbers = rng.integers(0, n_files, size=n_records)
    # One stable sort, then slices: a mask per file cost a pass over every record for each of hundreds of files.
    order = np.argsort(numbers, kind="stable")
    present, firsts = np.unique(numbers[order], return_index=True)
    bounds = [*firsts.tolist(), n_records]
    return order, [(int(number), slice(low, high)) for number, low, high in zip(present, bounds, bounds[1:])]


def gather_dealt_records(chunks: list[DealtChunk], record_bytes: int, out_uri: str, seed: int) -> list[tuple]:
    """Write every record file whose chunks are given, reading one byte range of each chunk file.

    Returns
    -------
    list of tuple
        ``(file key, entry)`` of each file written (:func:`write_dealt_records`).
    """
    parts = read_dealt_chunks(chunks, record_bytes)
    return [
        (file_key, write_dealt_records(file_key, number, files, out_uri, seed))
        for (file_key, number), files in sorted(parts.items())
    ]


def write_dealt_records(file_key: str, number: int, chunks: list[GatheredChunk], out_uri: str, seed: int) -> dict:
    """Write one record file from the chunks every task dealt to it, in a seeded random order.

    Parameters
    ----------
    file_key
        ``<split>/<kind>``.
    number
        The file's number within its kind.
    chunks
        ``(tf, chrom, records)`` from the tasks; sorted here, so the file
        does not depend on the order Spark delivers them in.
    out_uri
        The shards directory.
    seed
        Shuffling seed.

    Returns
    -------
    dict
        ``{"path", "rows", "blake3"}``: the checksum of the bytes written,
        against which a node's cached copy is checked.
    """
    packed = np.concatenate([records for _, _, records in sorted(chunks, key=lambda c: (c[0], c[1]))])
    order = np.random.default_rng([seed, number, *file_key.encode()]).permutation(len(packed))
    path = f"{out_uri}/records/{file_key}/part-{number:05d}.rec"
    shuffled = packed[order]
    with storage.open_output(path, compression=None) as out:
        out.write(shuffled.data)
    return {"path": path, "rows": len(packed), "blake3": blake3(shuffled.data).hexdigest()}


def _strings(values: "list[str] | tuple[str, ...]", index: np.ndarray) -> pa.DictionaryArray:
    """``values[index]`` as a dictionary-encoded string column, without a string per row.

    Parquet stores it as it stores any string column (:func:`_write_parquet`
    leaves out the Arrow schema), so every reader gets plain strings back.
    """
    # Indices as narrow as given (int8 for one value): the width does not reach the file.
    return pa.DictionaryArray.from_arrays(pa.array(index), pa.array(list(values)))


class _HashedSink:
    """A binary stream that hashes what goes through it (BLAKE3) on its way to ``sink``.

    The checksum is of exactly the bytes stored, without holding the file
    in memory first (a buffer grown to a chromosome's shard cost a fifth of
    the Parquet writing, in fresh memory and its copies). Closing it leaves
    ``sink`` open for its owner to commit.
    """

    def __init__(self, sink: Any) -> None:
        self.sink, self.digest, self.closed, self.position = sink, blake3(), False, 0

    def write(self, data: bytes) -> int:
        self.digest.update(data)
        self.sink.write(data)
        self.position += len(data)
        return len(data)

    def tell(self) -> int:
        return self.position

    def flush(self) -> None:
        """Nothing held here: every write went on to ``sink``."""

    def close(self) -> None:
        self.closed = True


def _write_parquet(table: pa.Table, uri: str, rows_per_row_group: int) -> str:
    """Write ``table`` to ``uri``; returns the BLAKE3 of the file's bytes."""
    # Without the Arrow schema the dictionary columns read back as strings.
    # Dictionaries only where values repeat (the writer otherwise builds one
    # for every window and start before giving up), deltas for the sorted
    # starts, statistics on the columns a reader filters by: a third of the
    # time and a fifth of the bytes of the defaults on a test chromosome.
    with storage.open_output(uri, compression=None) as sink:
        hashed = _HashedSink(sink)
        pq.write_table(
            table,
            pa.PythonFile(hashed, mode="w"),
            row_group_size=rows_per_row_group,
            compression="zstd",
            store_schema=False,
            use_dictionary=[name for name in _DICTIONARY_COLUMNS if name in table.column_names],
            column_encoding={"start": "DELTA_BINARY_PACKED"},
            write_statistics=_STATISTICS_COLUMNS,
        )
    return hashed.digest.hexdigest()
