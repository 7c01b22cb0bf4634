"""The staging folder of a shard build: where its files go and the private formats its stages pass on.

A build writes everything into ``<shards>._staging-<id>`` beside the shard
folder, which is swapped in whole once the manifest is written
(:func:`tfbs.storage.replace_dir`). Two folders in it hold what one Spark
stage leaves for the next, and are removed before the commit:

- ``annotated/<tf>/<chrom>.bins``: a training or validation chromosome's
  annotated bins (:func:`write_bins`), from the task that read its label
  file to the task that writes its shard;
- ``dealt/<tf>/<chrom>.rec``: the training records one chromosome's task
  dealt to the record files (:func:`store_dealt_records`), from that task to
  the ones that write the record files (:func:`read_dealt_chunks`).

Files rather than Spark's shuffle: PySpark's ``partitionBy`` held a task's
output until the task ended (a label file's bins pickled and written on one
core after the read, and kept in memory twice), and pickled every record
into the JVM and back (2.2 GB at full size).
"""

from __future__ import annotations

import json
import uuid
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from preprocess.segregate import ChromBins
from tfbs import storage
from tfbs.formats.dream import BIN_STEP

#: Folders of the staging directory that hold what passes between the stages; removed before the commit.
ANNOTATED, DEALT = "annotated", "dealt"


def new_staging_uri(shards_uri: str) -> str:
    """A fresh staging directory beside ``shards_uri``: one per build, so two builds never share one
    (a killed build's is a leftover, :mod:`tfbs.storage.leftovers`)."""
    return f"{shards_uri}{storage.STAGING_INFIX}{uuid.uuid4().hex[:8]}"


def annotated_file(staging_uri: str, tf: str, chrom: str) -> str:
    """Where a (TF, chromosome)'s annotated bins wait for the shard-writing stage."""
    return f"{staging_uri}/{ANNOTATED}/{tf}/{chrom}.bins"


def dealt_file(staging_uri: str, tf: str, chrom: str) -> str:
    """Where a (TF, chromosome)'s dealt records wait for the record-writing stage."""
    return f"{staging_uri}/{DEALT}/{tf}/{chrom}.rec"


def remove_folder(staging_uri: str, folder: str) -> None:
    """Remove one of the staging folders (:data:`ANNOTATED`, :data:`DEALT`) once its stage has read it."""
    storage.delete_dir(f"{staging_uri}/{folder}")


def write_bins(bins: ChromBins, uri: str) -> None:
    """Store annotated bins at ``uri`` (atomic) for another task to read.

    A line of JSON naming each array's dtype and shape, then the arrays'
    bytes, written straight from the arrays: ``np.savez`` into memory and out
    again copied a chromosome's arrays twice more. Most bins lie in no peak,
    so the proximities are stored as their non-zero entries and the flags as
    bits: a third of the arrays' bytes.
    """
    flat = bins.open.ravel()
    nonzero = np.flatnonzero(flat)
    starts = bins.starts
    # A whole chromosome's labels are one run of bins on the 50 bp grid: its first start stands for all.
    on_grid = len(starts) > 0 and bool(np.all(np.diff(starts) == BIN_STEP))
    arrays = {
        "starts": starts[:1] if on_grid else starts,
        "codes": bins.codes,
        "blacklisted": np.packbits(bins.blacklisted),
        "open_index": nonzero,
        "open_values": flat[nonzero],
    }
    header = {
        "names": [bins.tf, bins.chrom, bins.split],
        "grid": on_grid,
        "arrays": [[name, array.dtype.str, list(array.shape)] for name, array in arrays.items()],
    }
    with storage.open_output(uri, compression=None) as out:
        out.write(json.dumps(header).encode() + b"\n")
        for array in arrays.values():
            out.write(np.ascontiguousarray(array).data)


def read_bins(uri: str) -> ChromBins:
    """Annotated bins stored by :func:`write_bins` (its arrays read-only views of one read)."""
    with storage.open_input(uri, compression=None) as stream:
        data = stream.read()
    end_of_header = data.index(b"\n")
    header = json.loads(data[:end_of_header])
    arrays, offset = {}, end_of_header + 1
    for name, dtype_str, shape in header["arrays"]:
        dtype, count = np.dtype(dtype_str), int(np.prod(shape))
        arrays[name] = np.frombuffer(data, dtype, count, offset).reshape(shape)
        offset += count * dtype.itemsize
    codes = arrays["codes"]
    proximity = np.zeros(codes.shape, dtype=np.float32)
    proximity.ravel()[arrays["open_index"]] = arrays["open_values"]
    blacklisted = np.unpackbits(arrays["blacklisted"], count=len(codes)).astype(bool)
    tf, chrom, split = header["names"]
    starts = arrays["starts"]
    if header["grid"]:
        first = int(starts[0])
        starts = np.arange(first, first + BIN_STEP * len(codes), BIN_STEP, dtype=np.int64)
    return ChromBins(tf, chrom, split, starts, codes, blacklisted, proximity)


@dataclass(frozen=True)
class DealtChunk:
    """Where the records one chromosome task dealt to one record file lie in its chunk file."""

    uri: str
    file_key: str  # "<split>/<kind>"
    number: int
    tf: str
    chrom: str
    offset: int
    size: int  # bytes


#: One record file's records from one task: ``(file key "<split>/<kind>", file number, packed records)``.
RecordChunk = tuple[str, int, np.ndarray]
#: One record file's records from one (TF, chromosome), as the record writer takes them.
GatheredChunk = tuple[str, str, np.ndarray]


def store_dealt_records(
    tf: str, chrom: str, record_chunks: list[RecordChunk], uri: str, writer_of: Mapping[tuple[str, int], int]
) -> list[DealtChunk]:
    """Store a (TF, chromosome)'s dealt records in one file at ``uri``; returns where each record file's chunk lies.

    Chunks are stored by the task that gathers them (``writer_of``, by
    ``(file key, number)``), so each gathering task reads one byte range of
    the file.

    Parameters
    ----------
    tf, chrom
        Whose records they are.
    record_chunks
        What the task dealt to each record file.
    uri
        The chunk file (:func:`dealt_file`).
    writer_of
        The gathering task of every record file.
    """
    chunks = sorted(record_chunks, key=lambda chunk: (writer_of[(chunk[0], chunk[1])], chunk[0], chunk[1]))
    dealt, offset = [], 0
    with storage.open_output(uri, compression=None) as out:
        for file_key, number, records in chunks:
            out.write(records.data)
            dealt.append(DealtChunk(uri, file_key, number, tf, chrom, offset, records.nbytes))
            offset += records.nbytes
    return dealt


def read_dealt_chunks(chunks: list[DealtChunk], record_bytes: int) -> dict[tuple[str, int], list[GatheredChunk]]:
    """The records of the given chunks by record file ``(file key, number)``, reading one byte range of each chunk file.

    Returns
    -------
    dict
        ``{(file key, number): [(tf, chrom, records), ...]}``, ``records``
        uint8 ``(n, record_bytes)`` views of the bytes read.
    """
    by_file: dict[str, list[DealtChunk]] = defaultdict(list)
    for chunk in chunks:
        by_file[chunk.uri].append(chunk)
    parts: dict[tuple[str, int], list[GatheredChunk]] = defaultdict(list)
    for uri, refs in by_file.items():
        start = min(ref.offset for ref in refs)
        data = storage.read_range(uri, start, max(ref.offset + ref.size for ref in refs) - start)
        for ref in refs:
            records = np.frombuffer(data, np.uint8, ref.size, ref.offset - start).reshape(-1, record_bytes)
            parts[(ref.file_key, ref.number)].append((ref.tf, ref.chrom, records))
    return parts
