"""The shards without one TF: its rows filtered out of the record files, not rebuilt.

Record files mix TFs, so each is read and written again without the
held-out TF's records. TF indices are renumbered into the remaining TFs, so
the model's protein table never holds the held-out protein: it is not even
run through the protein branch during training.
"""

from __future__ import annotations

import numpy as np
from blake3 import blake3

from tfbs import storage
from tfbs.formats.manifest import FileEntry, Manifest, SplitRecords
from tfbs.formats.records import RecordLayout


def filter_record_file(source: str, target: str, layout: RecordLayout, new_index: np.ndarray) -> FileEntry:
    """Copy ``source`` to ``target`` keeping the records whose TF has a new index, renumbered.

    Parameters
    ----------
    new_index
        ``int`` (256,): the new TF index of each old one, -1 to drop it.

    Returns
    -------
    FileEntry
        The written file, its rows and BLAKE3.
    """
    with storage.open_input(source, compression=None) as handle:
        raw = np.frombuffer(handle.read(), dtype=np.uint8)
    records = raw.reshape(-1, layout.record_bytes)
    renumbered = new_index[records[:, layout.tf_offset]]
    kept = records[renumbered >= 0].copy()
    kept[:, layout.tf_offset] = renumbered[renumbered >= 0]
    data = kept.tobytes()
    storage.write_bytes(target, data)
    return FileEntry(path=target, rows=int(kept.shape[0]), blake3=blake3(data).hexdigest())


def _renumbering(tfs: list[str], held_out: str) -> np.ndarray:
    """Old TF index -> index among the remaining TFs (-1: the held-out one, or none)."""
    table = np.full(256, -1, dtype=np.int64)
    remaining = [tf for tf in tfs if tf != held_out]
    for old, tf in enumerate(tfs):
        if tf != held_out:
            table[old] = remaining.index(tf)
    return table


def without_tf(manifest: Manifest, held_out: str, out_uri: str) -> Manifest:
    """A manifest of the same shards without ``held_out``: filtered record files under ``out_uri``.

    The Parquet entries and counts stay those of the whole shards (the
    derived manifest is for training only); ``tfs``, ``proteins`` and the
    record files lose the held-out TF. Files left empty are not listed.

    Raises
    ------
    ValueError
        If ``held_out`` is not a TF of the manifest, or is its only TF.
    """
    if held_out not in manifest.tfs or len(manifest.tfs) < 2:
        raise ValueError(f"cannot hold out {held_out} from the TFs {manifest.tfs}")
    layout = RecordLayout(manifest.window)
    new_index = _renumbering(manifest.tfs, held_out)

    def filtered(files: list[FileEntry]) -> list[FileEntry]:
        entries = []
        for entry in files:
            relative = entry.path.partition("/records/")[2]
            written = filter_record_file(entry.path, f"{out_uri}/records/{relative}", layout, new_index)
            if written.rows:
                entries.append(written)
        return entries

    records = {
        split: SplitRecords(positives=filtered(files.positives), negatives=[filtered(draw) for draw in files.negatives])
        for split, files in manifest.records.items()
    }
    remaining = [tf for tf in manifest.tfs if tf != held_out]
    # model_copy does not validate: the counts still describe every TF's rows.
    return manifest.model_copy(
        update={"tfs": remaining, "proteins": {tf: manifest.proteins[tf] for tf in remaining}, "records": records}
    )


def count_by_tf(files: list[FileEntry], layout: RecordLayout) -> np.ndarray:
    """Records per TF index (256 counts) over ``files``."""
    counts = np.zeros(256, dtype=np.int64)
    for entry in files:
        with storage.open_input(entry.path, compression=None) as handle:
            raw = np.frombuffer(handle.read(), dtype=np.uint8).reshape(-1, layout.record_bytes)
        counts += np.bincount(raw[:, layout.tf_offset], minlength=256)
    return counts
