"""Stale shards and stale record copies are never used: the input
fingerprint follows every input's bytes (not its size or modification time),
and a node's copies of record files follow the manifest's checksums.

Each input is changed the way that fooled size-and-mtime checks: new bytes of
the same length, the modification time put back."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import logging
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from blake3 import blake3
from conftest import small_config

from preprocess.build_shards import build_shards, current_shards
from preprocess.fingerprint import changed_inputs, input_fingerprint
from tf_models.training_run import TrainingRun
from tfbs import storage
from tfbs.errors import BadInputError
from tfbs.formats.manifest import SCHEMA_VERSION
from tfbs.formats.records import RecordLayout
from tfbs.storage import local_path

# -- same-length edits of each input ------------------------------------------


def _gzip_to_size(text: bytes, size: int) -> bytes:
    """``text`` gzipped into exactly ``size`` bytes (a file name in the gzip header pads it)."""
    level = min(range(1, 10), key=lambda level: len(gzip.compress(text, level, mtime=0)))
    pad = size - len(gzip.compress(text, level, mtime=0))
    assert pad >= 2, "the edit must shrink the compressed text"
    out = io.BytesIO()
    with gzip.GzipFile(filename="x" * (pad - 1), mode="wb", fileobj=out, compresslevel=level, mtime=0) as sink:
        sink.write(text)
    assert len(out.getvalue()) == size
    return out.getvalue()


def _gzipped_lines(keep: Callable[[list[bytes]], list[bytes]]) -> Callable[[bytes], bytes]:
    """An edit of a gzipped text file: keep some of its lines, same compressed size."""

    def edit(raw: bytes) -> bytes:
        lines = gzip.decompress(raw).splitlines(keepends=True)
        return _gzip_to_size(b"".join(keep(lines)), len(raw))

    return edit


def _swap_bases_of(chrom: bytes) -> Callable[[bytes], bytes]:
    """Swap A and T on one chromosome of a FASTA: the same Ns, other windows."""

    def edit(raw: bytes) -> bytes:
        start = raw.index(b">" + chrom + b"\n")
        end = raw.find(b">", start + 1)
        end = len(raw) if end < 0 else end
        return raw[:start] + raw[start:end].translate(bytes.maketrans(b"ATat", b"TAta")) + raw[end:]

    return edit


def _shorter_chromosome(raw: bytes) -> bytes:
    """The ``.fai`` with its third chromosome one base shorter (as many digits)."""
    lines = raw.split(b"\n")
    fields = lines[2].split(b"\t")
    shorter = str(int(fields[1]) - 1).encode()
    assert len(shorter) == len(fields[1])
    lines[2] = b"\t".join([fields[0], shorter, *fields[2:]])
    return b"\n".join(lines)


def _other_residue(raw: bytes) -> bytes:
    """The protein FASTA with CTCF's 5th residue replaced."""
    at = raw.index(b"\n", raw.index(b">CTCF")) + 5
    return raw[:at] + (b"W" if raw[at : at + 1] != b"W" else b"Y") + raw[at + 1 :]


#: Input name -> (file under the data root, same-length edit).
EDITS: dict[str, tuple[str, Callable[[bytes], bytes]]] = {
    "labels/CTCF": ("labels/CTCF.train.labels.tsv.gz", _gzipped_lines(lambda lines: lines[:-1])),
    "dnase/K562": ("dnase/DNASE.K562.conservative.narrowPeak.gz", _gzipped_lines(lambda ls: ls[: len(ls) // 2])),
    "blacklist": ("annotations/blacklist.bed.gz", _gzipped_lines(lambda lines: lines[:-1])),
    "genome": ("genome/genome.fa", _swap_bases_of(b"chr2")),
    "proteins": ("proteins/tf_proteins.fa", _other_residue),
}


@contextlib.contextmanager
def _edited(path: Path, edit: Callable[[bytes], bytes]) -> Iterator[None]:
    """``path`` rewritten by ``edit`` with its size and mtime kept; put back afterwards."""
    original, stat = path.read_bytes(), path.stat()
    changed = edit(original)
    assert changed != original and len(changed) == len(original)
    path.write_bytes(changed)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (stat.st_size, stat.st_mtime_ns)
    try:
        yield
    finally:
        path.write_bytes(original)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def _copy_data(small_dataset, root: Path) -> Path:
    shutil.copytree(local_path(small_dataset.data.root), root / "data")
    return root / "data"


@pytest.fixture(scope="module")
def built(spark, small_dataset, tmp_path_factory):
    """CTCF's shards built from a copy of the small data set: ``(config, manifest, data root)``."""
    root = tmp_path_factory.mktemp("fingerprint")
    data = _copy_data(small_dataset, root)
    config = small_config(root, "data.tfs=[CTCF]")
    return config, build_shards(spark, config), data


# -- the fingerprint ------------------------------------------------------------


def test_fingerprint_is_a_content_digest_of_every_input(small_dataset):
    config = small_dataset
    fingerprint = input_fingerprint(config)
    assert fingerprint == input_fingerprint(config)  # a pure function of the inputs
    inputs = fingerprint["inputs"]
    cells = ["GM12878", "HepG2", "K562"]
    assert list(inputs) == sorted(
        [
            "labels/CTCF",
            "labels/FOXA1",
            *(f"dnase/{c}" for c in cells),
            "genome",
            "genome_index",
            "proteins",
            "blacklist",
        ]
    )
    assert fingerprint["config"] == config.content_digest({"data", "preprocess"})
    for entry in inputs.values():
        content = Path(local_path(entry["uri"])).read_bytes()
        assert entry["kind"] == "blake3"
        assert entry["digest"] == blake3(content).hexdigest()
        assert entry["size"] == len(content)
    assert "mtime" not in str(fingerprint)


def test_files_preprocessing_does_not_read_leave_the_fingerprint_alone(small_dataset, tmp_path):
    data = _copy_data(small_dataset, tmp_path)
    config = small_config(tmp_path, "data.cells=[HepG2, K562]")
    before = input_fingerprint(config)
    assert "dnase/GM12878" not in before["inputs"]
    for unread in ("dnase/DNASE.GM12878.conservative.narrowPeak.gz", "annotations/chrom.sizes"):
        (data / unread).write_bytes(b"chr1\t1\t2\n")
    assert input_fingerprint(config) == before


def test_an_index_edited_alone_is_refused_as_stale_not_fingerprinted(built):
    """The ``.fai`` is fingerprinted with the genome, but new bytes of the
    index alone (same size and mtime) no longer describe the FASTA: they are
    refused before any digest is compared."""
    config, _, data = built
    stale = pytest.raises(BadInputError, match=r"genome\.fa\.fai:3: stale index of .*re-run `samtools faidx`")
    with _edited(data / "genome" / "genome.fa.fai", _shorter_chromosome), stale:
        input_fingerprint(config)


@pytest.mark.parametrize("name", list(EDITS))
def test_new_bytes_of_the_same_size_and_mtime_change_the_fingerprint_and_the_shards_go(built, name, caplog):
    config, manifest, data = built
    before = input_fingerprint(config)
    assert before == manifest.fingerprint  # unchanged inputs: the manifest's, through its JSON
    relative, edit = EDITS[name]
    with _edited(data / relative, edit):
        after = input_fingerprint(config)
        assert changed_inputs(before, after) == [name]
        assert after["inputs"][name]["size"] == before["inputs"][name]["size"]
        with caplog.at_level(logging.INFO, logger="tfbs.preprocess"):
            assert current_shards(config.shards_uri, after) is None  # build_shards rebuilds
        assert f"changed since they were built: {name}" in caplog.text
    assert input_fingerprint(config) == before
    assert current_shards(config.shards_uri, before) == manifest  # the bytes back: kept


def test_the_same_bytes_elsewhere_and_another_layout_keep_the_shards(built, tmp_path, caplog):
    """Where the inputs are and how shards are cut into files are no part of the
    fingerprint: a copy of the data, with other layout settings, is up to date."""
    config, manifest, data = built
    shutil.copytree(data, tmp_path / "data")
    layout = ["preprocess.rows_per_record_file=100", "preprocess.read_block_mb=1", "preprocess.bad_rows=set_aside"]
    moved = small_config(tmp_path, "data.tfs=[CTCF]", *layout)
    assert moved.data.root != config.data.root
    after = input_fingerprint(moved)
    assert changed_inputs(manifest.fingerprint, after) == []
    with caplog.at_level(logging.INFO, logger="tfbs.preprocess"):
        assert current_shards(config.shards_uri, after) == manifest
    assert "up to date" in caplog.text


def test_shards_of_an_older_schema_are_rebuilt_naming_the_version(built, tmp_path, caplog):
    """Schema 5 held SHA-256 where schema 6 holds BLAKE3: the log gives the version, not each entry's field."""
    config, manifest, _ = built
    text = storage.read_text(f"{config.shards_uri}/manifest.json")
    current, older_version = f'"schema_version": {SCHEMA_VERSION}', f'"schema_version": {SCHEMA_VERSION - 1}'
    assert current in text and text.count('"blake3":') >= 3  # the rewrite below changes something
    older = text.replace('"blake3":', '"sha256":').replace(current, older_version)
    (tmp_path / "manifest.json").write_text(older)
    with caplog.at_level(logging.INFO, logger="tfbs.preprocess"):
        assert current_shards(str(tmp_path), manifest.fingerprint) is None
    assert "rebuilding the shards: " in caplog.text
    expected = f"schema_version {SCHEMA_VERSION - 1}, expected {SCHEMA_VERSION}: run `tfbs preprocess` again"
    assert expected in caplog.text
    assert "sha256" not in caplog.text


def test_fingerprint_of_a_bucket_uses_the_stores_md5(small_dataset, gcs_base):
    local_root = Path(local_path(small_dataset.data.root))
    for path in sorted(p for p in local_root.rglob("*") if p.is_file()):
        storage.write_bytes(f"{gcs_base}/data/{path.relative_to(local_root)}", path.read_bytes())
    config = small_config(Path("/unused"), f"data.root={gcs_base}/data")
    fingerprint = input_fingerprint(config)
    local = input_fingerprint(small_dataset)["inputs"]
    for name, entry in fingerprint["inputs"].items():
        content = Path(local_path(local[name]["uri"])).read_bytes()
        assert entry["uri"].startswith(gcs_base)
        assert (entry["kind"], entry["digest"]) == ("md5", hashlib.md5(content).hexdigest())
        assert entry["size"] == len(content)


# -- the shards -------------------------------------------------------------------


def test_halved_dnase_peaks_of_the_same_size_rebuild_the_shards(spark, small_dataset, tmp_path, caplog):
    """The case that went unseen: one cell's DNase peaks cut in half."""
    data = _copy_data(small_dataset, tmp_path)
    config = small_config(tmp_path, "data.tfs=[CTCF]")
    first = build_shards(spark, config)
    cells = ["HepG2", "K562"]
    before = [_open_share(first, cell) for cell in cells]
    relative, edit = EDITS["dnase/K562"]
    with _edited(data / relative, edit), caplog.at_level(logging.INFO, logger="tfbs.preprocess"):
        rebuilt = build_shards(spark, config)
        assert "changed since they were built: dnase/K562\n" in caplog.text
        assert "shards committed" in caplog.text
        caplog.clear()
        assert build_shards(spark, config) == rebuilt  # the same inputs again: kept
        assert "up to date" in caplog.text and "shards committed" not in caplog.text

    after = [_open_share(rebuilt, cell) for cell in cells]
    assert after[0] == before[0] and after[1] != before[1]  # K562's DNase changed, HepG2's not


def _open_share(manifest, cell: str) -> float:
    """Share of a cell's training rows in open chromatin."""
    table = _read_parquet([f.path for f in manifest.parquet["train"]])
    return float(np.mean(table.filter(pc.equal(table["cell"], cell)).column("dnase")))


# -- a node's copies of the record files ------------------------------------------


def _read_parquet(uris: list[str]) -> pa.Table:
    tables = []
    for uri in uris:
        with storage.open_input(uri, compression=None) as stream:
            tables.append(pq.read_table(pa.BufferReader(stream.read())))
    return pa.concat_tables(tables)


def _windows(paths: list[str], layout: RecordLayout) -> list[bytes]:
    """The DNA windows of every record in local record files, sorted."""
    rows = np.concatenate([np.fromfile(p, np.uint8).reshape(-1, layout.record_bytes) for p in paths])
    return sorted(bytes(row[: layout.window]) for row in rows)


def test_rebuilt_shards_at_the_same_uri_are_fetched_again(spark, small_dataset, gcs_base, tmp_path):
    data = _copy_data(small_dataset, tmp_path)
    config = small_config(tmp_path, "data.tfs=[CTCF]", f"run_dir={gcs_base}/run")
    cache = str(tmp_path / "cache")
    old_manifest = build_shards(spark, config)
    old_run = TrainingRun.from_manifest(old_manifest)
    layout = old_run.layout
    old = old_run.readable_by_tensorflow(cache, ("train", "valid"))
    assert all(Path(p).is_file() for p in old.positive_files + old.valid_files)
    old_windows = _windows(old.positive_files, layout)

    # Same rows, sizes and URIs; other windows: what a size check took for the same file.
    relative, edit = EDITS["genome"]
    with _edited(data / relative, edit):
        manifest = build_shards(spark, config)
    entries = manifest.records["train"].positives
    old_entries = old_manifest.records["train"].positives
    assert [(f.path, f.rows) for f in entries] == [(f.path, f.rows) for f in old_entries]
    assert [f.blake3 for f in entries] != [f.blake3 for f in old_entries]

    new = TrainingRun.from_manifest(manifest).readable_by_tensorflow(cache, ("train", "valid"))
    assert new.positive_files != old.positive_files  # a folder of the new content
    assert not any(Path(p).exists() for p in old.positive_files)  # the old copies are gone
    new_windows = _windows(new.positive_files, layout)
    assert new_windows != old_windows
    train = _read_parquet([f.path for f in manifest.parquet["train"]])
    positives = train.filter(pc.equal(train["label"], "B"))
    assert new_windows == sorted(positives.column("sequence").to_pylist())  # the rows training reads are new

    # A copy of the right size but other bytes is fetched again.
    damaged = Path(new.positive_files[0])
    damaged.write_bytes(bytes(damaged.stat().st_size))
    again = TrainingRun.from_manifest(manifest).readable_by_tensorflow(cache, ("train",))
    assert again.positive_files == new.positive_files
    assert _windows(again.positive_files, layout) == new_windows
    assert not list(Path(cache).rglob("*.part-*"))

    # The old manifest's files are no longer there: an error, not the new rows.
    with pytest.raises(BadInputError, match="rebuilt after this manifest was read"):
        old_run.readable_by_tensorflow(cache, ("train",))
