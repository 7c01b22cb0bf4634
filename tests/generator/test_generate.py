"""The embedded ENCODE-DREAM-format generator and the motif tools it uses."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from synthetic.generate import generate_dataset
from tfbs.config import DataConfig, GenerateConfig, TFSpec
from tfbs.formats.metrics import score_predictions
from tfbs.formats.motifs import (
    encode_dna,
    log_odds,
    read_meme,
    sample_instances,
    scan_max_score,
)

ROOT = Path(__file__).resolve().parents[2]

MEME = ROOT / "data" / "dream" / "annotations" / "HOCOMOCOv9.meme"
CELLS = ["K562", "GM12878", "HepG2"]  # deliberately not alphabetical
TFS = ["CTCF", "FOXA1", "FOXA2"]
SIZES = {"chr1": 80_000, "chr2": 50_000, "chr8": 60_000, "chr11": 50_000, "chr21": 60_000}


def _configs(root: Path, seed: int = 11, **changes) -> tuple[GenerateConfig, DataConfig]:
    gen = GenerateConfig(
        seed=seed,
        motif_db=str(MEME),
        chromosomes=SIZES,
        tfs=[
            TFSpec(name="CTCF", motif="CTCF_f2", family="CTCF"),
            TFSpec(name="FOXA1", motif="FOXA1_f1", family="FOX"),
            TFSpec(name="FOXA2", motif="FOXA2_f1", family="FOX"),
        ],
        cells=CELLS,
        sites_per_mb=85.0,
        open_fraction=0.6,
        blacklist_regions=2,
        **changes,
    )
    return gen, DataConfig(root=str(root), tfs=TFS)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("dream")
    gen, data = _configs(root)
    return root, generate_dataset(gen, data)


def _lines(path: Path | str) -> list[list[str]]:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as handle:
        return [line.rstrip("\n").split("\t") for line in handle]


def _labels(root: Path, tf: str) -> tuple[list[str], list[list[str]]]:
    rows = _lines(root / "labels" / f"{tf}.train.labels.tsv.gz")
    return rows[0], rows[1:]


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# --------------------------------------------------------------------------- determinism


def test_same_seed_same_bytes_other_seed_other_data(dataset, tmp_path: Path) -> None:
    root, _ = dataset
    gen, data = _configs(tmp_path / "again")
    generate_dataset(gen, data)
    first, second = _files(root), _files(tmp_path / "again")
    assert sorted(first) == sorted(second)
    different = [name for name in first if first[name] != second[name]]
    assert different == []
    gen, data = _configs(tmp_path / "other", seed=12)
    generate_dataset(gen, data)
    third = _files(tmp_path / "other")
    assert third["genome/genome.fa"] != first["genome/genome.fa"]
    assert third["labels/CTCF.train.labels.tsv.gz"] != first["labels/CTCF.train.labels.tsv.gz"]


# --------------------------------------------------------------------------- layout and formats


def test_dream_layout(dataset) -> None:
    root, summary = dataset
    expected = [
        "genome/genome.fa",
        "genome/genome.fa.fai",
        "annotations/chrom.sizes",
        "annotations/blacklist.bed.gz",
        "proteins/tf_proteins.fa",
    ]
    expected += [f"labels/{tf}.train.labels.tsv.gz" for tf in TFS]
    expected += [f"oracle/{tf}.oracle.tsv.gz" for tf in TFS]
    expected += [f"oracle/{tf}.coarse_pwm.tsv.gz" for tf in TFS]
    expected += [f"dnase/DNASE.{cell}.conservative.narrowPeak.gz" for cell in CELLS]
    for tf in TFS:
        for cell in CELLS:
            expected += [
                f"peaks/ChIPseq.{cell}.{tf}.conservative.train.narrowPeak.gz",
                f"peaks/ChIPseq.{cell}.{tf}.relaxed.narrowPeak.gz",
            ]
    missing = [name for name in expected if not (root / name).is_file()]
    assert missing == []
    assert summary["paths"]["labels"]["CTCF"] == str(root / "labels/CTCF.train.labels.tsv.gz")


def test_genome_fasta_index_and_sizes(dataset) -> None:
    from pyfaidx import Fasta

    root, _ = dataset
    fasta = Fasta(str(root / "genome/genome.fa"), as_raw=True, rebuild=False)  # our own .fai must be right
    assert [line.split("\t") for line in (root / "annotations/chrom.sizes").read_text().splitlines()] == [
        [c, str(SIZES[c])] for c in sorted(SIZES)
    ]
    bases = []
    for chrom, size in SIZES.items():
        seq = str(fasta[chrom])
        assert len(seq) == size
        assert set(seq) <= set("ACGTN")
        assert seq[: min(10_000, size // 50)] == "N" * min(10_000, size // 50)  # telomere run
        assert seq[-100:] == "N" * 100
        assert fasta[chrom][size - 70 : size - 60] == seq[size - 70 : size - 60]  # random access via the index
        bases.append(seq)
    text = "".join(bases).replace("N", "")
    gc = (text.count("G") + text.count("C")) / len(text)
    assert 0.38 < gc < 0.45
    assert "".join(bases).count("N") > 5 * min(10_000, 50_000 // 50)  # telomeres + inner gaps


def test_narrowpeak_files_have_ten_plausible_columns(dataset) -> None:
    root, _ = dataset
    files = sorted((root / "peaks").glob("*.narrowPeak.gz")) + sorted((root / "dnase").glob("*.narrowPeak.gz"))
    assert len(files) == 2 * len(TFS) * len(CELLS) + len(CELLS)
    for path in files:
        rows = _lines(path)
        assert rows, path
        for row in rows:
            assert len(row) == 10, (path, row)
            chrom, start, end, name, score, strand, signal, p, q, peak = row
            start, end, peak = int(start), int(end), int(peak)
            assert chrom in SIZES and 0 <= start < end <= SIZES[chrom]
            assert name == "." and strand == "." and 0 <= int(score) <= 1000
            assert float(signal) > 0 and float(p) > 0 and 0 <= float(q) <= float(p)
            assert 0 <= peak < end - start
    extra = 0
    for tf in TFS:
        for cell in CELLS:
            cons = {tuple(r) for r in _lines(root / f"peaks/ChIPseq.{cell}.{tf}.conservative.train.narrowPeak.gz")}
            rel = {tuple(r) for r in _lines(root / f"peaks/ChIPseq.{cell}.{tf}.relaxed.narrowPeak.gz")}
            assert cons <= rel  # relaxed is a superset
            extra += len(rel - cons)
            widths = [int(r[2]) - int(r[1]) for r in cons]
            assert 150 <= np.median(widths) <= 400
    assert extra > len(TFS) * len(CELLS)  # with weaker relaxed-only peaks


def test_label_files_are_exact_dream_format(dataset) -> None:
    root, _ = dataset
    blacklist = [r for r in _lines(root / "annotations/blacklist.bed.gz")]
    for tf in TFS:
        header, rows = _labels(root, tf)
        assert header == ["chr", "start", "stop", "GM12878", "HepG2", "K562"]
        assert {len(r) for r in rows} == {6}
        assert {v for r in rows for v in r[3:]} <= {"U", "B", "A"}
        keys = [(r[0], int(r[1])) for r in rows]
        assert keys == sorted(keys)  # chrom by name, then start
        assert all(int(r[2]) - int(r[1]) == 200 and int(r[1]) % 50 == 0 for r in rows)
        # Every full window of every chromosome, test chromosomes included, minus the blacklist.
        for chrom, size in SIZES.items():
            regions = [(int(s), int(e)) for c, s, e in blacklist if c == chrom]
            want = [s for s in range(0, size - 199, 50) if not any(a < s + 200 and s < b for a, b in regions)]
            assert [k[1] for k in keys if k[0] == chrom] == want, chrom


def test_blacklisted_bins_absent_although_artefact_peaks_lie_there(dataset) -> None:
    root, _ = dataset
    regions = [(c, int(s), int(e)) for c, s, e in _lines(root / "annotations/blacklist.bed.gz")]
    assert len(regions) == 2 * len(SIZES)
    _, rows = _labels(root, "CTCF")
    for chrom, start, stop, *_ in rows:
        s, e = int(start), int(stop)
        assert not any(c == chrom and a < e and s < b for c, a, b in regions)
    peaks = _lines(root / "peaks/ChIPseq.K562.CTCF.conservative.train.narrowPeak.gz")
    inside = [p for p in peaks if any(c == p[0] and a <= int(p[1]) and int(p[2]) <= b for c, a, b in regions)]
    assert len(inside) == len(regions)  # so the blacklist, not chance, removes them


# --------------------------------------------------------------------------- biology


def test_bound_fraction_and_site_kinds(dataset) -> None:
    root, summary = dataset
    kinds = {"strong": 0, "weak": 0, "motifless": 0}
    for tf in TFS:
        _, rows = _labels(root, tf)
        for column, cell in enumerate(["GM12878", "HepG2", "K562"], start=3):
            values = [r[column] for r in rows]
            fraction = values.count("B") / len(values)
            assert 0.003 < fraction < 0.03, (tf, cell, fraction)
            assert values.count("A") > 0
            figures = summary["tfs"][tf]["cells"][cell]
            assert figures["B"] == values.count("B") and figures["bins"] == len(rows)
            kinds = {k: n + figures["bound_by_kind"][k] for k, n in kinds.items()}
    # Most bound sites carry a good motif, some a weak one or none.
    assert kinds["strong"] > kinds["weak"] > 0 and kinds["strong"] > kinds["motifless"] > 0, kinds
    planted = {k: sum(summary["tfs"][tf]["sites"][k] for tf in TFS) for k in kinds}
    assert planted["strong"] > planted["weak"] > 0 and planted["strong"] > planted["motifless"] > 0, planted
    # Binding differs between cells: chromatin is cell specific.
    for tf in TFS:
        _, rows = _labels(root, tf)
        assert sum(1 for r in rows if "B" in r[3:] and "U" in r[3:]) > 10, tf


def test_chip_peaks_sit_in_open_chromatin_of_their_cell(dataset) -> None:
    """Binding needs open chromatin: each ChIP peak overlaps a DNase peak of its own cell."""
    root, _ = dataset

    def intervals(path: Path) -> dict[str, np.ndarray]:
        rows = _lines(path)
        return {c: np.array([(int(r[1]), int(r[2])) for r in rows if r[0] == c]) for c in {r[0] for r in rows}}

    dnase = {cell: intervals(root / f"dnase/DNASE.{cell}.conservative.narrowPeak.gz") for cell in CELLS}
    misses = {cell: 0 for cell in CELLS}
    for tf in TFS:
        for cell in CELLS:
            for other in CELLS:
                peaks = intervals(root / f"peaks/ChIPseq.{cell}.{tf}.conservative.train.narrowPeak.gz")
                for chrom, spans in peaks.items():
                    open_spans = dnase[other].get(chrom, np.zeros((0, 2), int))
                    hit = (spans[:, None, 0] < open_spans[None, :, 1]) & (open_spans[None, :, 0] < spans[:, None, 1])
                    if other == cell:
                        assert hit.any(axis=1).all(), (tf, cell, chrom)
                    else:
                        misses[other] += int((~hit.any(axis=1)).sum())
    assert sum(misses.values()) > 0  # ...while other cells' chromatin is closed at some of them


def _bound_bins(root: Path, tf: str) -> set[tuple[str, str, str]]:
    header, rows = _labels(root, tf)
    return {(header[c], r[0], r[1]) for r in rows for c in range(3, len(header)) if r[c] == "B"}


def test_family_members_share_sites(dataset) -> None:
    root, summary = dataset
    assert summary["tfs"]["FOXA2"]["sites"]["shared_with_family"] > 0
    assert summary["tfs"]["CTCF"]["sites"]["shared_with_family"] == 0
    ctcf, foxa1, foxa2 = (_bound_bins(root, tf) for tf in TFS)
    jaccard = lambda a, b: len(a & b) / len(a | b)  # noqa: E731
    assert jaccard(foxa1, foxa2) > 0.1  # ~0.3 at demo size; peaks and strengths differ per TF
    assert jaccard(ctcf, foxa1) < 0.02  # unrelated TFs never share a site


def test_family_sites_planted_apart_for_the_family_control(dataset, tmp_path: Path) -> None:
    """generate.family_share 0 (tfbs unseen's family control): paralogues keep their proteins and share no site."""
    shared_root, shared = dataset
    gen, data = _configs(tmp_path, family_share=0.0)
    summary = generate_dataset(gen, data)
    assert all(figures["sites"]["shared_with_family"] == 0 for figures in summary["tfs"].values())
    foxa1, foxa2 = _bound_bins(tmp_path, "FOXA1"), _bound_bins(tmp_path, "FOXA2")
    assert foxa2 and len(foxa1 & foxa2) / len(foxa1 | foxa2) < 0.02
    # The same proteins and about as many sites of each kind: only where the sites are differs.
    proteins = "proteins/tf_proteins.fa"
    assert (tmp_path / proteins).read_bytes() == (shared_root / proteins).read_bytes()
    for kind in ("strong", "weak", "motifless"):
        apart, with_family = summary["tfs"]["FOXA2"]["sites"][kind], shared["tfs"]["FOXA2"]["sites"][kind]
        assert abs(apart - with_family) <= 0.3 * with_family + 3, kind


def _best_window_identity(a: str, b: str, window: int) -> float:
    """Best identity of an ungapped ``window``-residue alignment of ``a`` and ``b``."""
    x = np.frombuffer(a.encode(), np.uint8)
    y = np.frombuffer(b.encode(), np.uint8)
    best = 0
    for shift in range(-len(x) + window, len(y) - window + 1):
        xs, ys = (x[-shift:], y) if shift < 0 else (x, y[shift:])
        n = min(len(xs), len(ys))
        same = np.concatenate([[0], np.cumsum(xs[:n] == ys[:n])])
        best = max(best, int((same[window:] - same[:-window]).max()))
    return best / window


def test_family_proteins_share_a_dna_binding_domain(dataset) -> None:
    root, _ = dataset
    records = {}
    for block in (root / "proteins/tf_proteins.fa").read_text().split(">")[1:]:
        header, *lines = block.splitlines()
        records[header.split()[0]] = "".join(lines)
    assert list(records) == TFS
    for sequence in records.values():
        assert 300 <= len(sequence) <= 700
        assert set(sequence) <= set("ACDEFGHIKLMNPQRSTVWY") and sequence[0] == "M"
    assert _best_window_identity(records["FOXA1"], records["FOXA2"], 80) >= 0.85
    assert _best_window_identity(records["FOXA1"], records["FOXA2"], 200) < 0.6  # only the DBD is shared
    assert _best_window_identity(records["CTCF"], records["FOXA1"], 80) < 0.35


def test_oracle_covers_the_test_bins_and_ranks_their_labels(dataset) -> None:
    root, _ = dataset
    for tf in TFS:
        header, rows = _labels(root, tf)
        oracle = _lines(root / "oracle" / f"{tf}.oracle.tsv.gz")
        assert oracle[0] == header
        test_rows = [row for row in rows if row[0] in ("chr1", "chr8", "chr21")]
        assert [row[:3] for row in oracle[1:]] == [row[:3] for row in test_rows]
        probabilities = np.array([[float(v) for v in row[3:]] for row in oracle[1:]])
        assert probabilities.min() >= 0 and probabilities.max() <= 1
        for column, cell in enumerate(header[3:]):
            labels = np.array([row[3 + column] for row in test_rows])
            figures = score_predictions(labels, probabilities[:, column])
            # It knows the odds of every site (not the coin's outcome), so it is near 1.
            assert figures["n_pos"] > 5 and figures["auprc"] > 0.8, (tf, cell, figures)
            assert probabilities[labels == "U", column].mean() < 0.05


def test_configuration_errors_name_the_key(tmp_path: Path) -> None:
    gen, data = _configs(tmp_path)
    with pytest.raises(ValueError, match="generate.cells"):
        generate_dataset(gen.model_copy(update={"cells": ["K562", "HepG2"]}), data)
    bad = gen.model_copy(update={"tfs": [TFSpec(name="CTCF", motif="CTCF_nope", family="CTCF")]})
    with pytest.raises(ValueError, match=r"generate.tfs\[CTCF\].motif.*CTCF_f2"):
        generate_dataset(bad, DataConfig(root=str(tmp_path), tfs=["CTCF"]))
    with pytest.raises(ValueError, match="data.tfs"):
        generate_dataset(gen, DataConfig(root=str(tmp_path), tfs=["GATA1"]))
    with pytest.raises(ValueError, match="local files only"):
        generate_dataset(gen, DataConfig(root="hdfs://nn/x", tfs=TFS))


# --------------------------------------------------------------------------- motifs


def test_meme_parsing_and_two_strand_scan() -> None:
    motifs = read_meme(str(MEME))
    assert len(motifs) == 428
    assert motifs["CTCF_f2"].shape == (19, 4) and motifs["FOXA2_f1"].shape == (12, 4)
    assert np.allclose(motifs["EGR1_f2"].sum(axis=1), 1.0)
    assert motifs["CTCF_f2"][3].argmax() == 1  # row 4 of the file: C 0.85
    pwm = motifs["CTCF_f2"]
    consensus = "".join("ACGT"[i] for i in pwm.argmax(axis=1))
    revcomp = consensus[::-1].translate(str.maketrans("ACGT", "TGCA"))
    best = log_odds(pwm).max(axis=1).sum()
    flank = "ACGTTGCAAC" * 3
    scores = scan_max_score([flank + consensus + flank, flank + revcomp + flank, flank * 2], pwm)
    assert scores[0] == pytest.approx(best, abs=1e-4) and scores[1] == pytest.approx(best, abs=1e-4)
    assert scores[2] < best - 10
    # One-hot input (N as an all-zero row) gives the same answer as text.
    seqs = [flank + consensus + flank, "N" * 20 + flank + "N" * 20]
    onehot = np.zeros((2, len(seqs[0]), 4), dtype=np.float32)
    for i, s in enumerate(seqs):
        codes = encode_dna(s)
        known = np.flatnonzero(codes < 4)
        onehot[i, known, codes[known]] = 1
    assert np.allclose(scan_max_score(onehot, pwm), scan_max_score(seqs, pwm))
    assert scan_max_score("N" * 40, pwm)[0] < scores[2]  # N never looks like a motif


def test_sampled_instances_follow_the_pwm() -> None:
    pwm = read_meme(str(MEME))["FOXA1_f1"]
    draws = sample_instances(pwm, 20_000, np.random.default_rng(0))
    frequencies = np.stack([(draws == b).mean(axis=0) for b in range(4)], axis=1)
    assert np.abs(frequencies - pwm).max() < 0.02
    assert np.array_equal(draws, sample_instances(pwm, 20_000, np.random.default_rng(0)))
