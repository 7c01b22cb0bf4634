"""The preprocessing Spark job on a generated data set: accounting, classes,
balance, bedtools annotations, windows, records, and bad input."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import small_config
from pyfaidx import Fasta

from preprocess.build_shards import build_shards
from preprocess.inputs import check_preprocess_inputs
from tfbs.errors import BadInputError, MissingInputError
from tfbs.formats.genome import window_starts
from tfbs.storage import local_path


def _label_lines(uri: str) -> list[str]:
    with gzip.open(local_path(uri), "rt") as handle:
        return handle.read().splitlines()[1:]


def _read_bed(uri: str) -> list[tuple[str, int, int]]:
    with gzip.open(local_path(uri), "rt") as handle:
        return [(f[0], int(f[1]), int(f[2])) for f in (line.split("\t") for line in handle)]


def _read_summits(uri: str) -> list[tuple[str, int, int, int]]:
    """A narrowPeak file's ``(chrom, start, end, summit)``, the summit (column 10) as a chromosome position."""
    with gzip.open(local_path(uri), "rt") as handle:
        return [(f[0], int(f[1]), int(f[2]), int(f[1]) + int(f[9])) for f in (line.split("\t") for line in handle)]


@pytest.fixture(scope="module")
def shard_table(small_shards):
    """Every split's Parquet rows in one table, with a ``split`` column."""
    _, manifest = small_shards
    tables = []
    for split, files in manifest.parquet.items():
        table = pq.read_table([local_path(f.path) for f in files])
        tables.append(table.append_column("split", pa.array([split] * table.num_rows)))
    return pa.concat_tables(tables, promote_options="default")


def test_manifest_accounts_for_every_input_row(small_shards):
    config, manifest = small_shards
    for tf in config.data.tfs:
        n_lines = len(_label_lines(config.data.labels_uri(tf)))
        assert manifest.inputs[tf].input_rows == n_lines
        for cell, outcomes in manifest.counts[tf].items():
            assert outcomes.total() == n_lines, (tf, cell)


def test_classes_by_split(small_shards, shard_table):
    config, manifest = small_shards
    split = np.asarray(shard_table.column("split").to_pylist())
    label = np.asarray(shard_table.column("label").to_pylist())
    assert set(label[split == "train"]) == {"B", "U"}
    assert set(label[split == "valid"]) <= {"B", "U"}
    assert "A" in set(label[split == "test"])  # kept for evaluation, removed there
    chroms = set(shard_table.column("chrom").to_pylist())
    test_chroms = {c for c, s in zip(shard_table.column("chrom").to_pylist(), split) if s == "test"}
    assert test_chroms == {"chr1", "chr8", "chr21"} & chroms
    for tf, cells in manifest.counts.items():
        for cell, outcomes in cells.items():
            train = outcomes.kept["train"]
            ratio = config.preprocess.negatives_per_positive
            assert 0.8 * ratio <= train["U"] / train["B"] <= 1.2 * ratio, (tf, cell, train)
            assert "A" not in train


def test_test_split_keeps_every_non_blacklisted_bin(small_shards):
    config, manifest = small_shards
    lines = _label_lines(config.data.labels_uri("CTCF"))
    on_test = sum(1 for line in lines if line.split("\t")[0] in ("chr1", "chr8", "chr21"))
    for _cell, outcomes in manifest.counts["CTCF"].items():
        kept = sum(outcomes.kept["test"].values())
        # On test chromosomes only the blacklist and unusable windows drop
        # bins; the training chromosomes account for the rest of those.
        dropped = sum(
            getattr(outcomes, k) for k in ("dropped_window_out_of_bounds", "dropped_window_n", "excluded_blacklist")
        )
        assert on_test - dropped <= kept <= on_test
        assert outcomes.kept["test"]["A"] > 0


def test_dnase_is_the_nearest_overlapping_summits_proximity(small_shards, shard_table):
    """0 outside every peak; inside, 1 - min(d, 500) / 1000 for the nearest summit d bases from the bin's centre."""
    config, _ = small_shards
    rows = shard_table.select(["chrom", "start", "cell", "dnase"]).to_pylist()
    peaks = {cell: _read_summits(config.data.dnase_peaks_uri(cell)) for cell in {r["cell"] for r in rows}}
    rng = np.random.default_rng(0)
    inside = 0
    for index in rng.choice(len(rows), 300, replace=False):
        row = rows[index]
        centre = row["start"] + 100
        distances = [
            abs(summit - centre)
            for c, s, e, summit in peaks[row["cell"]]
            if c == row["chrom"] and s < row["start"] + 200 and e > row["start"]
        ]
        expected = 1 - min(min(distances), 500) / 1000 if distances else 0.0
        inside += bool(distances)
        assert row["dnase"] == pytest.approx(expected, abs=1e-6), row
    assert 0 < inside < 300
    assert 0 < np.mean([r["dnase"] > 0 for r in rows]) < 1


def test_no_kept_bin_touches_the_blacklist(small_shards, shard_table):
    config, _ = small_shards
    blacklist = _read_bed(config.data.blacklist)
    starts = shard_table.column("start").to_numpy()
    chroms = np.asarray(shard_table.column("chrom").to_pylist())
    for chrom, low, high in blacklist:
        hit = (chroms == chrom) & (starts < high) & (starts + 200 > low)
        assert not hit.any(), (chrom, low, high)


def test_windows_are_the_genome_sequence(small_shards, shard_table):
    config, manifest = small_shards
    genome = Fasta(local_path(config.data.genome_fasta), as_raw=True, sequence_always_upper=True)
    train = pq.read_table([local_path(f.path) for f in manifest.parquet["train"]])
    assert train.num_rows > 100
    for row in train.slice(0, 100).select(["chrom", "start", "sequence"]).to_pylist():
        low = int(window_starts(np.array([row["start"]]), manifest.window)[0])
        assert row["sequence"] == genome[row["chrom"]][low : low + manifest.window].encode()
        assert len(row["sequence"]) == manifest.window


def test_records_mirror_the_training_rows(small_shards, shard_table):
    _, manifest = small_shards
    layout = manifest.record_layout
    records = manifest.records["train"]
    files = records.positives + [f for draw in records.negatives for f in draw]
    assert sum(f.rows for f in files) == sum(1 for s in shard_table.column("split").to_pylist() if s == "train")
    sizes = [Path(local_path(f.path)).stat().st_size for f in files]
    assert sizes == [f.rows * layout["record_bytes"] for f in files]

    def labels(entries):
        arrays = [np.fromfile(local_path(f.path), np.uint8).reshape(-1, layout["record_bytes"]) for f in entries]
        return np.concatenate(arrays)[:, layout["window"]]

    n_bound = sum(cells.kept["train"]["B"] for tf in manifest.counts.values() for cells in tf.values())
    assert labels(records.positives).tolist() == [1] * n_bound
    assert not labels(records.negatives[0]).any()


def _record_columns(entries: list[dict], layout: dict) -> np.ndarray:
    """``(label, tf_index, cell_index)`` of every record in ``entries``."""
    rows = np.concatenate(
        [np.fromfile(local_path(f.path), np.uint8).reshape(-1, layout["record_bytes"]) for f in entries]
    )
    return rows[:, layout["window"] : layout["window"] + 3]


def test_every_workers_share_of_the_records_has_the_same_mix_of_tfs_and_cells(small_shards):
    """Positives and negatives are dealt to files at random, so a worker's share of
    the files (every n-th, as the input pipeline shards them) holds each TF and
    cell in the same proportion among positives as among negatives: the label
    cannot be told from the TF or cell. Files cut per (TF, chromosome) failed
    this, which let each ps worker learn its own TF prior."""
    _, manifest = small_shards
    layout = manifest.record_layout
    records = manifest.records["train"]
    assert len(records.positives) >= 2 and len(records.negatives[0]) >= 2
    for worker in range(2):
        positives = _record_columns(records.positives[worker::2], layout)
        negatives = _record_columns(records.negatives[0][worker::2], layout)
        for column, n_values in ((1, len(manifest.tfs)), (2, len(manifest.cells))):
            share_pos = np.bincount(positives[:, column], minlength=n_values) / len(positives)
            share_neg = np.bincount(negatives[:, column], minlength=n_values) / len(negatives)
            assert np.abs(share_pos - share_neg).max() < 0.08, (worker, column, share_pos, share_neg)


def test_parquet_row_groups_are_small_for_training_and_large_for_test(small_shards):
    config, manifest = small_shards
    for split, rows_per_group in (
        ("train", config.preprocess.rows_per_row_group),
        ("test", config.preprocess.test_rows_per_row_group),
    ):
        largest = max(manifest.parquet[split], key=lambda f: f.rows)
        parquet = pq.ParquetFile(local_path(largest.path))
        assert parquet.metadata.num_row_groups == -(-largest.rows // rows_per_group), split
        # Dictionary-encoded when written, plain strings when read.
        assert parquet.schema_arrow.field("cell").type == pa.string()
    assert -(-largest.rows // config.preprocess.rows_per_row_group) > 1


def test_missing_input_is_named_before_spark(small_dataset, tmp_path):
    config = small_config(
        tmp_path, f"data.root={local_path(small_dataset.data.root)}", f"data.genome_fasta={tmp_path}/missing.fa"
    )
    with pytest.raises(MissingInputError, match="missing.fa: genome FASTA not found"):
        check_preprocess_inputs(config.data)


def _corrupt_labels(config, tmp_path, bad_line: str, position: int) -> str:
    labels_dir = tmp_path / "labels"
    labels_dir.mkdir()
    lines = ["chr\tstart\tstop\tGM12878\tHepG2\tK562"] + _label_lines(config.data.labels_uri("CTCF"))
    lines.insert(position, bad_line)
    with gzip.open(labels_dir / "CTCF.train.labels.tsv.gz", "wt") as out:
        out.write("\n".join(lines) + "\n")
    return str(labels_dir)


def _with(config, tmp_path, labels_dir: str, bad_rows: str):
    """The small data set with the corrupted CTCF labels, writing under tmp_path."""
    return small_config(
        tmp_path,
        f"data.root={local_path(config.data.root)}",
        f"data.labels_dir={labels_dir}",
        "data.tfs=[CTCF]",
        f"preprocess.bad_rows={bad_rows}",
    )


def test_bad_line_stops_the_job_naming_file_and_line(spark, small_dataset, tmp_path):
    labels_dir = _corrupt_labels(small_dataset, tmp_path, "chr2\t1000\t1200\tU\tQ\tU", position=101)
    config = _with(small_dataset, tmp_path, labels_dir, "fail")
    with pytest.raises(BadInputError) as err:
        build_shards(spark, config)
    assert err.value.line == 102
    assert err.value.uri.endswith("CTCF.train.labels.tsv.gz")
    assert "unknown label 'Q'" in err.value.reason


def test_bad_line_set_aside_is_counted(spark, small_dataset, tmp_path):
    labels_dir = _corrupt_labels(small_dataset, tmp_path, "chr2\t1010\t1210\tU\tU\tU", position=50)
    config = _with(small_dataset, tmp_path, labels_dir, "set_aside")
    manifest = build_shards(spark, config)
    rejected = [entry.model_dump() for entry in manifest.inputs["CTCF"].rejected]
    assert rejected == [{"line": 51, "reason": "start 1010 is not on the 50 bp grid"}]
    n_lines = len(_label_lines(small_dataset.data.labels_uri("CTCF"))) + 1
    for _cell, outcomes in manifest.counts["CTCF"].items():
        assert outcomes.rejected_bad_line == 1
        assert outcomes.total() == n_lines


def test_accessible_negatives_share(small_shards, shard_table):
    config, _ = small_shards
    rows = shard_table.select(["split", "label", "dnase"]).to_pylist()
    train_u = [r["dnase"] > 0 for r in rows if r["split"] == "train" and r["label"] == "U"]
    test_u = [r["dnase"] > 0 for r in rows if r["split"] == "test" and r["label"] == "U"]
    share = np.mean(train_u)
    # Drawn U bins are open at the configured share, far above the genome's.
    assert abs(share - config.preprocess.hard_negative_fraction) < 0.12
    assert np.mean(test_u) < share / 2


def test_truncated_gzip_stops_the_job_naming_file_and_line(spark, small_dataset, tmp_path):
    labels_dir = tmp_path / "labels"
    labels_dir.mkdir()
    whole = Path(local_path(small_dataset.data.labels_uri("CTCF"))).read_bytes()
    (labels_dir / "CTCF.train.labels.tsv.gz").write_bytes(whole[: len(whole) * 2 // 3])
    config = _with(small_dataset, tmp_path, str(labels_dir), "fail")
    with pytest.raises(BadInputError, match="cannot be read from this line on") as err:
        build_shards(spark, config)
    assert err.value.uri.endswith("labels/CTCF.train.labels.tsv.gz") and err.value.line > 1
    assert not list(tmp_path.glob("run/shards*"))  # nothing half-written is left


def test_negative_draws_share_positives_and_rerun_is_skipped_or_replaced(spark, small_dataset, tmp_path):
    def config_with(*extra):
        return small_config(tmp_path, f"data.root={local_path(small_dataset.data.root)}", "data.tfs=[CTCF]", *extra)

    manifest = build_shards(spark, config_with("preprocess.negative_draws=2"))
    records = manifest.records["train"]
    assert len(records.negatives) == 2

    def rows(entries):
        layout = manifest.record_layout
        arrays = [np.fromfile(local_path(f.path), np.uint8).reshape(-1, layout["record_bytes"]) for f in entries]
        return {bytes(r) for r in np.concatenate(arrays)}

    first, second = rows(records.negatives[0]), rows(records.negatives[1])
    assert len(first & second) < 0.2 * len(first)  # independent draws of a large pool
    for cell, by_split in manifest.draws["CTCF"].items():
        kept_u = manifest.counts["CTCF"][cell].kept["train"]["U"]
        assert max(by_split["train"]) <= kept_u <= sum(by_split["train"])

    again = build_shards(spark, config_with("preprocess.negative_draws=2"))
    assert again.created_unix == manifest.created_unix  # same inputs and settings: kept as is
    assert rows(again.records["train"].negatives[1]) == second

    replaced = build_shards(spark, config_with("preprocess.negative_draws=1", "preprocess.seed=99"))
    assert len(replaced.records["train"].negatives) == 1
    assert rows(replaced.records["train"].positives) == rows(records.positives)
    assert rows(replaced.records["train"].negatives[0]) != first
    shard_dirs = sorted(p.name for p in (tmp_path / "run").iterdir())
    assert shard_dirs == ["shards"]  # no staging directory left beside it
    assert sorted(p.name for p in (tmp_path / "run/shards/records/train").iterdir()) == ["negatives-0", "positives"]
