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
    window + 3    DNase overlap, 0-255 for 0.0-1.0
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass

import numpy as np

from tfbs import uri as storage


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


def encode_records(
    rows: Iterable[tuple[bytes, int, int, int, float]], layout: RecordLayout
) -> np.ndarray:
    """Pack ``(sequence, label, tf_index, cell_index, dnase)`` rows.

    Returns
    -------
    numpy.ndarray
        ``uint8`` array (n_rows, record_bytes).
    """
    rows = list(rows)
    packed = np.zeros((len(rows), layout.record_bytes), dtype=np.uint8)
    for i, (sequence, label, tf_index, cell_index, dnase) in enumerate(rows):
        if len(sequence) != layout.window:
            raise ValueError(f"sequence of {len(sequence)} bp, expected {layout.window}")
        packed[i, : layout.window] = np.frombuffer(sequence, dtype=np.uint8)
        packed[i, layout.label_offset] = label
        packed[i, layout.tf_offset] = tf_index
        packed[i, layout.cell_offset] = cell_index
        packed[i, layout.dnase_offset] = round(dnase * 255)
    return packed


def write_record_file(
    rows: Iterable[tuple[bytes, int, int, int, float]], uri: str, layout: RecordLayout
) -> int:
    """Write rows as one record file; returns the number of records."""
    packed = encode_records(rows, layout)
    if len(packed):
        storage.write_bytes(uri, packed.tobytes())
    return len(packed)
