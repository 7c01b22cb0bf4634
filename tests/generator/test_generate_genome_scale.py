"""The genome-scale generator (``generate.mode: genome_scale``) on a scaled-down genome.

The profile ``conf/encode_dream_ctcf.yaml`` is loaded with its inputs pointed
at a few ~200 kb chromosomes and peak files written here in the real
narrowPeak layout, so the test covers the same code path as the full-size run.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from jobs import generate as generate_job
from jobs import labels as labels_job
from synthetic.genome_scale import merge_summits, read_summits
from tfbs.config import PipelineConfig, load_config
from tfbs.errors import ConfigError
from tfbs.formats.motifs import encode_dna, log_odds, read_meme, scan_positions

ROOT = Path(__file__).resolve().parents[2]

PROFILE = ROOT / "conf" / "encode_dream_ctcf.yaml"
DREAM = ROOT / "data" / "dream"
SIZES = {"chr2": 200_000, "chr10": 180_000, "chr22": 220_000}
CELLS = ["A549", "HepG2", "K562"]
SITE_STEP = 4_000  # one planted site per 4 kb, relaxed-only peaks halfway between
GC = 0.41


def _peak_line(chrom: str, summit: int, half: int, peak: bool) -> str:
    offset = half if peak else -1  # -1: no summit given, the midpoint is used
    return f"{chrom}\t{summit - half}\t{summit + half}\t.\t500\t.\t10.0\t-1\t0.1\t{offset}\n"


def _write_inputs(folder: Path) -> dict:
    """Sizes and per-cell peaks: shared sites with jittered summits, relaxed-only peaks, an off-genome peak."""
    rng = np.random.default_rng(3)
    folder.mkdir(parents=True)
    (folder / "sizes").write_text("".join(f"{c}\t{n}\n" for c, n in SIZES.items()))
    conservative = {cell: [] for cell in CELLS}
    relaxed = {cell: [] for cell in CELLS}
    sites = []
    for chrom, size in SIZES.items():
        for site in range(12_000, size - 12_000, SITE_STEP):
            sites.append((chrom, site))
            bound = rng.random(len(CELLS)) < 0.6
            bound[rng.integers(len(CELLS))] = True
            for cell, is_bound in zip(CELLS, bound):
                if is_bound:
                    # The same site called in several cells, summits up to 15 bp apart.
                    line = _peak_line(chrom, site + int(rng.integers(-15, 16)), 120, True)
                    conservative[cell].append(line)
                    relaxed[cell].append(line)
            for cell in CELLS:
                if rng.random() < 0.5:
                    relaxed[cell].append(_peak_line(chrom, site + SITE_STEP // 2, 100, False))
    conservative["K562"].append(_peak_line("chrY", 50_000, 120, True))
    for cell in CELLS:
        for kind, lines in (("conservative.train", conservative[cell]), ("relaxed", relaxed[cell])):
            with gzip.open(folder / f"ChIPseq.{cell}.CTCF.{kind}.narrowPeak.gz", "wt") as handle:
                handle.writelines(lines)
    return {"sites": sites, "relaxed": relaxed}


def _config(base: Path, inputs: Path, *extra: str) -> PipelineConfig:
    return load_config(
        PROFILE,
        [
            f"data.root={base / 'data'}",
            f"run_dir={base / 'run'}",
            f"data.peaks_dir={inputs}",
            f"data.chrom_sizes={inputs / 'sizes'}",
            f"data.cells={CELLS}",
            f"generate.cells={CELLS}",
            *extra,
        ],
    )


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict:
    base = tmp_path_factory.mktemp("genome_scale")
    truth = _write_inputs(base / "inputs")
    config = _config(base, base / "inputs")
    summary = generate_job.run(config)
    return {"base": base, "config": config, "summary": summary, **truth}


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _genome(config: PipelineConfig) -> dict[str, str]:
    from pyfaidx import Fasta

    fasta = Fasta(config.data.genome_fasta.removeprefix("file://"), as_raw=True, rebuild=False)
    return {name: str(fasta[name]) for name in fasta.keys()}  # noqa: SIM118 (iterating a Fasta yields records)


def _narrowpeak(path: str) -> list[list[str]]:
    with gzip.open(path.removeprefix("file://"), "rt") as handle:
        return [line.rstrip("\n").split("\t") for line in handle]


def _ctcf_scores() -> np.ndarray:
    pwm = read_meme(str(DREAM / "annotations" / "HOCOMOCOv9.meme"))["CTCF_f2"]
    at = (1 - GC) / 2
    return log_odds(pwm, (at, GC / 2, GC / 2, at))


# --------------------------------------------------------------------------- genome


def test_fasta_has_exactly_the_sizes_and_gc(generated) -> None:
    genome = _genome(generated["config"])
    assert {name: len(seq) for name, seq in genome.items()} == SIZES
    fai = [
        line.split("\t")
        for line in Path(generated["config"].data.genome_fasta.removeprefix("file://") + ".fai")
        .read_text()
        .splitlines()
    ]
    assert [row[0] for row in fai] == list(SIZES)  # the sizes file's order
    assert {row[3] for row in fai} == {"60"}
    for name, seq in genome.items():
        tel = min(10_000, SIZES[name] // 50)  # hg19's telomere runs, capped at 2 %
        assert set(seq) <= set("ACGTN")
        assert seq[:tel] == "N" * tel and seq[-tel:] == "N" * tel
        assert "N" not in seq[tel:-tel]
    acgt = "".join(seq.strip("N") for seq in genome.values())
    gc = (acgt.count("G") + acgt.count("C")) / len(acgt)
    assert abs(gc - GC) < 0.005  # 3 sd of a binomial share over ~0.6 Mb is 0.002
    assert generated["summary"]["counts"]["genome"]["gc"] == pytest.approx(gc, abs=1e-6)


def test_motif_at_planted_summits_not_elsewhere(generated) -> None:
    genome = _genome(generated["config"])
    scores = _ctcf_scores()
    best = float(scores.max(axis=1).sum())
    reach = scores.shape[0] + 30  # jittered summits (15) + planting offset (10)

    def window_max(chrom: str, centre: int) -> float:
        codes = encode_dna(genome[chrom][centre - reach : centre + reach])
        return float(scan_positions(codes, scores).max())

    at_sites = np.array([window_max(c, s) for c, s in generated["sites"]])
    rng = np.random.default_rng(5)
    # Random windows at least 1 kb from any site or relaxed-only peak (they sit 2 kb apart).
    random = np.array(
        [
            window_max(c, int(s) + SITE_STEP // 4)
            for c, s in zip(rng.choice(list(SIZES), 300), rng.integers(12_000, 160_000, 300) // SITE_STEP * SITE_STEP)
        ]
    )
    threshold = 0.6 * best
    assert (at_sites > threshold).mean() > 0.95
    assert (random > threshold).mean() < 0.05
    assert np.median(at_sites) > np.percentile(random, 99)


def test_summits_pooled_over_cells_and_merged(generated) -> None:
    counts = generated["summary"]["counts"]["tfs"]["CTCF"]
    assert counts["sites"] == len(generated["sites"])  # one site per cluster of jittered cell summits
    assert counts["summits"] > counts["sites"]
    assert counts["summits_on_other_chromosomes"] == 1  # the chrY peak
    chrom = np.array([0, 0, 0, 0, 1])
    summit = np.array([100, 140, 180, 400, 120])
    merged = merge_summits(chrom, summit, 50)
    assert merged[0].tolist() == [0, 0, 1] and merged[1].tolist() == [140, 400, 120]


def test_read_summits_on_real_peaks() -> None:
    path = DREAM / "peaks" / "ChIPseq.K562.CTCF.conservative.train.narrowPeak.gz"
    chrom, summit, other = read_summits(str(path), ["chr22", "chr2"])
    rows = _narrowpeak(str(path))
    expected = [(["chr22", "chr2"].index(r[0]), int(r[1]) + int(r[9])) for r in rows if r[0] in ("chr22", "chr2")]
    assert list(zip(chrom.tolist(), summit.tolist())) == expected
    assert other == len(rows) - len(expected) > 0


# --------------------------------------------------------------------------- DNase


def _overlaps(peaks: list[tuple[str, int, int]], others: list[list[str]]) -> np.ndarray:
    by_chrom: dict[str, list[tuple[int, int]]] = {}
    for row in others:
        by_chrom.setdefault(row[0], []).append((int(row[1]), int(row[2])))
    return np.array([any(s < oe and os_ < e for os_, oe in by_chrom.get(c, [])) for c, s, e in peaks])


def test_dnase_open_at_most_relaxed_peaks_plus_background(generated) -> None:
    config = generated["config"]
    fraction = config.generate.dnase_peak_fraction
    opened = {}
    for cell in CELLS:
        rows = _narrowpeak(config.data.dnase_peaks_uri(cell))
        assert all(len(row) == 10 for row in rows)
        keys = [(row[0], int(row[1])) for row in rows]
        assert keys == sorted(keys)  # sorted like `sort -k1,1 -k2,2n`
        assert all(0 <= int(r[1]) < int(r[2]) <= SIZES[r[0]] and 0 <= int(r[9]) < int(r[2]) - int(r[1]) for r in rows)
        relaxed = [(r[0], int(r[1]), int(r[2])) for r in (line.split("\t") for line in generated["relaxed"][cell])]
        covered = _overlaps(relaxed, rows)
        assert abs(covered.mean() - fraction) < 0.1, cell  # ~140 peaks per cell: sd 0.03
        counts = generated["summary"]["counts"]["dnase"][cell]
        assert counts["relaxed_peaks"] == len(relaxed)
        assert counts["peaks"] == len(rows) == counts["at_relaxed_peaks"] + counts["background"]
        away = ~_overlaps(
            [(r[0], int(r[1]), int(r[2])) for r in rows], [line.split("\t") for line in generated["relaxed"][cell]]
        )
        assert away.sum() >= 0.8 * counts["background"] > 0  # background lies mostly off the relaxed peaks
        opened[cell] = {(r[0], r[1]) for r in rows}
    assert opened["A549"] != opened["HepG2"] != opened["K562"]


# --------------------------------------------------------------------------- determinism and wiring


def test_same_seed_same_bytes(generated, tmp_path: Path) -> None:
    base, inputs = generated["base"], generated["base"] / "inputs"
    generate_job.run(_config(tmp_path / "again", inputs))
    first, again = _files(base / "data"), _files(tmp_path / "again" / "data")
    assert sorted(first) == sorted(again)
    assert [name for name in first if first[name] != again[name]] == []
    generate_job.run(_config(tmp_path / "other", inputs, "generate.seed=8"))
    other = _files(tmp_path / "other" / "data")
    assert other["genome/genome.fa"] != first["genome/genome.fa"]
    assert other["genome/genome.fa.fai"] == first["genome/genome.fa.fai"]


def test_labels_from_the_real_peak_layout_mark_planted_sites(generated) -> None:
    config = generated["config"]
    counts = labels_job.run(config)["CTCF"]
    assert set(counts["cells"]) == set(CELLS)
    assert all(tally["B"] > 0 for tally in counts["cells"].values())
    assert not (Path(config.data.root.removeprefix("file://")) / "peaks").exists()  # no ChIP peaks written


def test_mode_selects_the_inputs() -> None:
    assert load_config(ROOT / "conf" / "demo.yaml").generate.mode == "embedded"
    with pytest.raises(ConfigError, match="chromosomes: unused when mode is genome_scale"):
        load_config(PROFILE, ["generate.chromosomes={chr1: 1, chr8: 1, chr11: 1, chr21: 1}"])
    with pytest.raises(ConfigError, match="chromosomes: required when mode is embedded"):
        load_config(PROFILE, ["generate.mode=embedded"])
