"""Writing one chromosome's kept rows without Spark: the outcome tally and its
accounting, the Parquet shard, the training-record chunks, and the dealing of
records to files and their writing."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from blake3 import blake3

from preprocess.label_reader import CODE_A, CODE_B, CODE_U
from preprocess.segregate import ChromBins, Decision, decide
from preprocess.shard_writer import ShardContext, deal, tally, write_chromosome, write_dealt_records
from tfbs.formats.dream import BIN_STEP, TEST, TRAIN
from tfbs.formats.genome import gather_windows, window_status
from tfbs.formats.manifest import OUTCOMES, CellOutcomes, ManifestMismatchError, check_accounting, tally_outcomes
from tfbs.formats.records import RecordLayout
from tfbs.storage import local_path, to_uri

WINDOW = 400
LAYOUT = RecordLayout(WINDOW)
#: FOXA1 is labelled in two of the three cells: its cell indices are global ones.
TFS, ALL_CELLS, CELLS = ["CTCF", "FOXA1"], ["GM12878", "HepG2", "K562"], ["HepG2", "K562"]
RECORD_FILES = {"train/positives": 2, "train/negatives-0": 3, "train/negatives-1": 3}
KEPT = OUTCOMES.index("kept")
LETTER = {CODE_U: "U", CODE_B: "B", CODE_A: "A"}


def _chromosome() -> np.ndarray:
    """4,000 random bases with an N run at 2,000-2,300."""
    bases = np.frombuffer(b"ACGT", np.uint8)[np.random.default_rng(0).integers(0, 4, 4000)]
    bases[2000:2300] = ord("N")
    return bases


def _case(split: str, n_draws: int = 2) -> tuple[ChromBins, Decision, np.ndarray]:
    """FOXA1 bins on chr2 decided the way the job does, edge bins bound (windows padded with N)."""
    rng = np.random.default_rng(1)
    starts = np.arange(0, 3801, BIN_STEP, dtype=np.int64)
    codes = rng.choice(np.array([CODE_U] * 5 + [CODE_B, CODE_A], np.uint8), size=(len(starts), 2))
    codes[[0, -1]] = CODE_B
    blacklisted = np.zeros(len(starts), bool)
    blacklisted[[10, 11, 12]] = True
    bins = ChromBins("FOXA1", "chr2", split, starts, codes, blacklisted, rng.random((len(starts), 2)) < 0.4)
    chromosome = _chromosome()
    status = window_status(chromosome, starts, WINDOW, max_n_fraction=0.5, pad=True)
    decision = decide(bins, CELLS, {"HepG2": (0.7, 0.4), "K562": (0.5, 0.6)}, n_draws, 3, status.__getitem__)
    return bins, decision, chromosome


def _context(tmp_path) -> ShardContext:
    return ShardContext(to_uri(tmp_path / "shards"), TFS, ALL_CELLS, WINDOW, 3, 16, 64, LAYOUT, RECORD_FILES)


def _expected_train_rows(bins: ChromBins, decision: Decision) -> list[tuple[int, str, int, str]]:
    """``(start, cell, draw, label)``: kept positives once (draw -1), negatives once per draw."""
    rows = [
        (int(bins.starts[r]), CELLS[c], -1, "B")
        for r, c in zip(*np.nonzero((decision.outcome == KEPT) & (bins.codes == CODE_B)))
    ]
    rows += [(int(bins.starts[r]), CELLS[c], int(d), "U") for r, c, d in zip(*np.nonzero(decision.drawn))]
    return sorted(rows)


def _record(sequence: bytes, label: int, tf_index: int, cell_index: int, dnase: float) -> bytes:
    return sequence + bytes([label, tf_index, cell_index, round(dnase * 255)])


# -- tally and accounting --------------------------------------------------------


@pytest.mark.parametrize("split", [TRAIN, TEST])
def test_tally_accounts_for_every_bin_and_cell_by_outcome(split):
    bins, decision, _ = _case(split)
    n = len(bins.starts)
    result = tally(bins, CELLS, decision)
    assert (result.tf, result.chrom, result.split) == ("FOXA1", "chr2", split)
    assert sum(row[-1] for row in result.counts) == n * len(CELLS)
    tree = tally_outcomes(result.counts)
    for c, cell in enumerate(CELLS):
        entry = tree["FOXA1"][cell]
        by_outcome = np.bincount(decision.outcome[:, c], minlength=len(OUTCOMES))
        dropped = {name: int(k) for name, k in zip(OUTCOMES, by_outcome) if k and name != "kept"}
        assert {key: value for key, value in entry.items() if key != "kept"} == dropped
        kept_codes = bins.codes[decision.outcome[:, c] == KEPT, c]
        assert entry["kept"] == {split: {LETTER[code]: int(k) for code, k in Counter(kept_codes.tolist()).items()}}
        assert CellOutcomes(**entry).total() == n
        assert result.draws[cell] == decision.drawn[:, c, :].sum(axis=0).tolist()
    assert tree["FOXA1"]["HepG2"]["excluded_blacklist"] == 3
    if split == TEST:
        assert "A" in tree["FOXA1"]["HepG2"]["kept"][TEST]
    totals = {"FOXA1": {cell: CellOutcomes(**entry).total() for cell, entry in tree["FOXA1"].items()}}
    check_accounting(totals, {"FOXA1": n})
    with pytest.raises(ManifestMismatchError, match=f"FOXA1/HepG2: outcomes add up to {n}, input has {n + 1}"):
        check_accounting(totals, {"FOXA1": n + 1})


def test_tally_outcomes_adds_up_rows_of_several_chromosomes():
    rows = [
        ("CTCF", "K562", "kept", "train", "B", 3),
        ("CTCF", "K562", "kept", "train", "B", 4),
        ("CTCF", "K562", "kept", "test", "A", 2),
        ("CTCF", "K562", "dropped_sampling", "train", "", 10),
        ("CTCF", "K562", "dropped_sampling", "valid", "", 5),
        ("CTCF", "HepG2", "excluded_blacklist", "test", "", 1),
    ]
    assert tally_outcomes(rows) == {
        "CTCF": {
            "K562": {"kept": {"train": {"B": 7}, "test": {"A": 2}}, "dropped_sampling": 15},
            "HepG2": {"excluded_blacklist": 1},
        }
    }


# -- the Parquet shard -----------------------------------------------------------


def test_train_parquet_holds_the_kept_rows_with_their_windows(tmp_path):
    bins, decision, chromosome = _case(TRAIN)
    context = _context(tmp_path)
    result = write_chromosome(bins, CELLS, decision, chromosome, context)
    expected = _expected_train_rows(bins, decision)
    path = f"{context.out_uri}/parquet/train/FOXA1/chr2.parquet"
    checksum = blake3(Path(local_path(path)).read_bytes()).hexdigest()
    assert result.parquet == [{"path": path, "rows": len(expected), "blake3": checksum}]
    table = pq.read_table(local_path(path))
    rows = table.to_pylist()
    assert sorted((r["start"], r["cell"], r["draw"], r["label"]) for r in rows) == expected
    row_of = {int(start): i for i, start in enumerate(bins.starts)}
    for r in rows:
        i, c = row_of[r["start"]], CELLS.index(r["cell"])
        assert (r["tf"], r["chrom"], r["tf_index"]) == ("FOXA1", "chr2", 1)
        assert r["cell_index"] == ALL_CELLS.index(r["cell"])
        assert r["label_code"] == {"B": 1, "U": 0}[r["label"]]
        assert r["dnase"] == float(bins.open[i, c])
        assert r["sequence"] == gather_windows(chromosome, bins.starts[i : i + 1], WINDOW)[0].tobytes()
    assert {0, 3800} <= {r["start"] for r in rows}  # windows padded with N at both ends
    assert pq.ParquetFile(local_path(path)).metadata.num_row_groups == math.ceil(len(rows) / 16)


def test_test_parquet_keeps_ambiguous_rows_and_carries_no_sequence(tmp_path):
    bins, decision, chromosome = _case(TEST)
    context = _context(tmp_path)
    result = write_chromosome(bins, CELLS, decision, chromosome, context)
    assert result.record_chunks == []
    table = pq.read_table(local_path(f"{context.out_uri}/parquet/test/FOXA1/chr2.parquet"))
    assert "sequence" not in table.column_names and "draw" not in table.column_names
    kept = [
        (int(bins.starts[r]), CELLS[c], LETTER[int(bins.codes[r, c])])
        for r, c in zip(*np.nonzero(decision.outcome == KEPT))
    ]
    assert sorted(zip(*(table.column(k).to_pylist() for k in ("start", "cell", "label")))) == sorted(kept)
    codes = dict(zip(table.column("label").to_pylist(), table.column("label_code").to_pylist()))
    assert codes == {"U": 0, "B": 1, "A": -1}


def test_a_chromosome_with_nothing_kept_writes_no_file(tmp_path):
    bins, _, chromosome = _case(TRAIN)
    bins.blacklisted[:] = True
    status = np.zeros(len(bins.starts), np.int8)
    decision = decide(bins, CELLS, {"HepG2": (1.0, 1.0), "K562": (1.0, 1.0)}, 2, 3, status.__getitem__)
    result = write_chromosome(bins, CELLS, decision, chromosome, _context(tmp_path))
    assert result.parquet == [] and result.record_chunks == []
    assert not (tmp_path / "shards").exists()
    assert sum(row[-1] for row in result.counts) == len(bins.starts) * len(CELLS)


# -- training records --------------------------------------------------------------


def test_record_chunks_mirror_the_parquet_rows_per_draw(tmp_path):
    bins, decision, chromosome = _case(TRAIN)
    context = _context(tmp_path)
    result = write_chromosome(bins, CELLS, decision, chromosome, context)
    rows = pq.read_table(local_path(result.parquet[0]["path"])).to_pylist()
    assert sum(len(chunk) for _, _, chunk in result.record_chunks) == len(rows)
    for key in RECORD_FILES:
        draw = -1 if key.endswith("positives") else int(key.rsplit("-", 1)[1])
        chunks = [(number, chunk) for file_key, number, chunk in result.record_chunks if file_key == key]
        numbers = [number for number, _ in chunks]
        assert len(set(numbers)) == len(numbers) > 1 and set(numbers) <= set(range(RECORD_FILES[key]))
        records = sorted(bytes(r) for _, chunk in chunks for r in chunk)
        wanted = sorted(
            _record(r["sequence"], int(r["label"] == "B"), r["tf_index"], r["cell_index"], r["dnase"])
            for r in rows
            if r["draw"] == draw
        )
        assert records == wanted, key
        assert len(records) == (
            int(((decision.outcome == KEPT) & (bins.codes == CODE_B)).sum())
            if draw < 0
            else int(decision.drawn[:, :, draw].sum())
        )


def test_a_cell_index_beyond_one_byte_is_not_wrapped_silently(tmp_path):
    bins, decision, chromosome = _case(TRAIN)
    many_cells = [f"cell{i:03d}" for i in range(300)] + CELLS  # HepG2 is cell 300, K562 cell 301
    context = ShardContext(to_uri(tmp_path), TFS, many_cells, WINDOW, 3, 16, 64, LAYOUT, RECORD_FILES)
    # Parquet says 300 and 301; the records cannot: the task should refuse rather than write 44 and 45.
    with pytest.raises((ValueError, OverflowError)):
        write_chromosome(bins, CELLS, decision, chromosome, context)


def test_record_chunks_are_dealt_the_same_way_on_a_rerun(tmp_path):
    bins, decision, chromosome = _case(TRAIN)
    first = write_chromosome(bins, CELLS, decision, chromosome, _context(tmp_path / "a"))
    second = write_chromosome(bins, CELLS, decision, chromosome, _context(tmp_path / "b"))
    assert [(k, n) for k, n, _ in first.record_chunks] == [(k, n) for k, n, _ in second.record_chunks]
    assert all(np.array_equal(a, b) for (_, _, a), (_, _, b) in zip(first.record_chunks, second.record_chunks))


def _numbered(n: int) -> np.ndarray:
    """``n`` two-byte records holding their own index."""
    return np.arange(n, dtype="<u2").view(np.uint8).reshape(n, 2)


def _ids(records: np.ndarray) -> list[int]:
    return np.ascontiguousarray(records).view("<u2").ravel().tolist()


def _dealt_records(packed: np.ndarray, n_files: int, rng: np.random.Generator) -> list[tuple[int, np.ndarray]]:
    """``(file number, records)`` of each non-empty file, as :func:`deal` orders and slices them."""
    order, files = deal(len(packed), n_files, rng)
    return [(number, packed[order][part]) for number, part in files]


def test_deal_records_keeps_every_record_once_and_spreads_them():
    packed = _numbered(1000)
    dealt = _dealt_records(packed, 4, np.random.default_rng(0))
    assert sorted(number for number, _ in dealt) == [0, 1, 2, 3]
    assert sorted(i for _, chunk in dealt for i in _ids(chunk)) == list(range(1000))
    assert all(150 < len(chunk) < 350 for _, chunk in dealt)
    again = _dealt_records(packed, 4, np.random.default_rng(0))
    assert [_ids(chunk) for _, chunk in again] == [_ids(chunk) for _, chunk in dealt]
    other = _dealt_records(packed, 4, np.random.default_rng(1))
    assert [_ids(chunk) for _, chunk in other] != [_ids(chunk) for _, chunk in dealt]


def test_deal_records_edge_cases():
    assert [(n, _ids(c)) for n, c in _dealt_records(_numbered(5), 1, np.random.default_rng(0))] == [
        (0, [0, 1, 2, 3, 4])
    ]
    assert _dealt_records(_numbered(0), 3, np.random.default_rng(0)) == []
    few = _dealt_records(_numbered(2), 50, np.random.default_rng(0))
    assert all(len(chunk) > 0 for _, chunk in few) and sum(len(c) for _, c in few) == 2


# -- record files from dealt chunks ------------------------------------------------------


def _chunks() -> list[tuple[str, str, np.ndarray]]:
    """Chunks of three tasks, records numbered apart: CTCF/chr2 0-99, CTCF/chr3 100-149, FOXA1/chr2 150-299."""
    ids = _numbered(300)
    return [("CTCF", "chr2", ids[:100]), ("FOXA1", "chr2", ids[150:]), ("CTCF", "chr3", ids[100:150])]


def _written(entry: dict) -> list[int]:
    return _ids(np.fromfile(local_path(entry["path"]), np.uint8).reshape(-1, 2))


def test_write_dealt_records_does_not_depend_on_chunk_order(tmp_path):
    chunks = _chunks()
    first = write_dealt_records("train/negatives-1", 2, chunks, to_uri(tmp_path / "a"), seed=7)
    second = write_dealt_records("train/negatives-1", 2, chunks[::-1], to_uri(tmp_path / "b"), seed=7)
    assert first["path"] == f"{to_uri(tmp_path / 'a')}/records/train/negatives-1/part-00002.rec"
    assert first["rows"] == second["rows"] == 300
    assert _written(first) == _written(second)
    # The checksum is of the bytes written, so equal files have equal checksums.
    assert first["blake3"] == second["blake3"] == blake3(Path(local_path(first["path"])).read_bytes()).hexdigest()


def test_write_dealt_records_holds_the_union_of_the_chunks_shuffled(tmp_path):
    entry = write_dealt_records("valid/positives", 0, _chunks(), to_uri(tmp_path), seed=7)
    written = _written(entry)
    assert sorted(written) == list(range(300))
    assert written != list(range(300))  # not the chunks one after the other
    # The first 100 records are not all from one task.
    assert len({i // 100 for i in written[:100]}) == 3
    reseeded = write_dealt_records("valid/positives", 0, _chunks(), to_uri(tmp_path / "other"), seed=8)
    assert sorted(_written(reseeded)) == list(range(300)) and _written(reseeded) != written
