"""Fixed-length training records: the graph-native mirror of the shards.

Under ``ParameterServerStrategy`` the input pipeline runs on remote workers
and must be pure TensorFlow graph ops, and no maintained graph-native Parquet
reader exists for TF 2.21. The train and validation splits are therefore
also written as files of fixed-length records that
``tf.data.FixedLengthRecordDataset`` streams and ``tf.io.decode_raw``
decodes, with no protobuf parsing. Parquet stays the canonical format.

Layout of one record (``window + 4`` bytes)::

    [0, window)   DNA window, one ASCII byte per base
    window        label: 0 unbound, 1 bound
    window + 1    TF index (into the manifest's ``tfs``)
    window + 2    cell index (into the manifest's ``cells``)
    window + 3    DNase proximity (tfbs.formats.annotate.peak_proximity), 0-255 for 0.0-1.0
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass

import numpy as np

from tfbs import storage

#: Largest TF or cell index a record can hold (one byte each).
MAX_INDEX = 255


@dataclass(frozen=True)
class RecordLayout:
    """Byte offsets of one record, recorded in the manifest."""

    window: int

    @property
    def record_bytes(self) -> int:
        return self.window + 4

    @property
    def label_offset(self) -> int:
        return self.window

    @property
    def tf_offset(self) -> int:
        return self.window + 1

    @property
    def cell_offset(self) -> int:
        return self.window + 2

    @property
    def dnase_offset(self) -> int:
        return self.window + 3

    def to_dict(self) -> dict[str, int]:
        return {**asdict(self), "record_bytes": self.record_bytes}


#: Rows whose windows :func:`pack_records` copies at once (4 MB of 1 kb windows).
_PACK_BLOCK = 4096


def pack_records(
    windows: np.ndarray,
    labels: np.ndarray,
    tf_index: np.ndarray,
    cell_index: np.ndarray,
    dnase: np.ndarray,
    layout: RecordLayout,
    rows: np.ndarray | None = None,
) -> np.ndarray:
    """Pack column arrays into records.

    Parameters
    ----------
    windows
        ``uint8`` (n, window) ASCII bases.
    labels, tf_index, cell_index
        Per row: 0 unbound / 1 bound, and the indices into the manifest.
    dnase
        Per row, in [0, 1].
    rows
        The rows to pack, in this order (default: all of them). Their
        windows are copied straight into the records, a block at a time,
        rather than gathered into an array of their own first.

    Returns
    -------
    numpy.ndarray
        ``uint8`` array (n, record_bytes), one record per row packed.
    """
    if windows.shape[1:] != (layout.window,):
        raise ValueError(f"windows of shape {windows.shape}, expected (n, {layout.window})")
    for name, index in (("TF", tf_index), ("cell", cell_index)):
        # One byte each: a larger index would wrap into another TF's or cell's.
        if np.any(np.asarray(index) > MAX_INDEX):
            raise ValueError(f"{name} index above {MAX_INDEX}: records hold at most {MAX_INDEX + 1} {name}s")
    picked = slice(None) if rows is None else rows
    n = len(windows) if rows is None else len(rows)
    packed = np.empty((n, layout.record_bytes), dtype=np.uint8)
    if rows is None:
        packed[:, : layout.window] = windows
    else:
        for first in range(0, n, _PACK_BLOCK):
            packed[first : first + _PACK_BLOCK, : layout.window] = windows[rows[first : first + _PACK_BLOCK]]
    packed[:, layout.label_offset] = np.asarray(labels)[picked]
    packed[:, layout.tf_offset] = np.asarray(tf_index)[picked]
    packed[:, layout.cell_offset] = np.asarray(cell_index)[picked]
    packed[:, layout.dnase_offset] = np.round(np.asarray(dnase, dtype=np.float64)[picked] * 255)
    return packed


def encode_records(rows: Iterable[tuple[bytes, int, int, int, float]], layout: RecordLayout) -> np.ndarray:
    """Pack ``(sequence, label, tf_index, cell_index, dnase)`` rows.

    Returns
    -------
    numpy.ndarray
        ``uint8`` array (n_rows, record_bytes).
    """
    rows = list(rows)
    for sequence, *_ in rows:
        if len(sequence) != layout.window:
            raise ValueError(f"sequence of {len(sequence)} bp, expected {layout.window}")
    windows = np.frombuffer(b"".join(r[0] for r in rows), dtype=np.uint8).reshape(len(rows), layout.window)
    labels, tf_index, cell_index, dnase = (np.asarray([r[i] for r in rows]) for i in range(1, 5))
    return pack_records(windows, labels, tf_index, cell_index, dnase, layout)


def write_record_file(rows: Iterable[tuple[bytes, int, int, int, float]], uri: str, layout: RecordLayout) -> int:
    """Write rows as one record file; returns the number of records."""
    packed = encode_records(rows, layout)
    if len(packed):
        storage.write_bytes(uri, packed.tobytes())
    return len(packed)
