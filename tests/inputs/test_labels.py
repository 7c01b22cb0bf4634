"""DREAM labels from peaks with the official rule (real bedtools binary)."""

from __future__ import annotations

import gzip
import os
import subprocess
from pathlib import Path

import pytest

from tfbs.formats.bedtools import BedtoolsError, run_bedtools
from tfbs.formats.labels import build_labels

ROOT = Path(__file__).resolve().parents[2]

DREAM = ROOT / "data" / "dream"


def _write(path: Path, rows: list[tuple], gz: bool = False) -> str:
    text = "".join("\t".join(str(x) for x in row) + "\n" for row in rows)
    if gz:
        with gzip.open(path, "wt") as handle:
            handle.write(text)
    else:
        path.write_text(text)
    return str(path)


def _narrowpeak(chrom: str, start: int, end: int) -> tuple:
    return (chrom, start, end, ".", 500, ".", 10.0, 5.0, 3.0, (end - start) // 2)


def _read(path: str) -> list[list[str]]:
    with gzip.open(path, "rt") as handle:
        return [line.rstrip("\n").split("\t") for line in handle]


def _rule_by_hand(
    size: int, conservative: list[tuple[int, int]], relaxed: list[tuple[int, int]]
) -> list[tuple[int, str]]:
    """An independent, loop-per-bin statement of the DREAM rule (peaks already disjoint)."""
    out = []
    for start in range(0, size - 200 + 1, 50):
        stop = start + 200
        overlaps = [(max(0, min(stop, e) - max(start, s)), e - s) for s, e in conservative]
        optimal = sum(1 for ov, length in overlaps if ov > 0 and (ov >= 100 or ov >= 0.5 * length))
        loose = sum(1 for s, e in relaxed if s < stop and start < e)
        out.append((start, "A" if optimal != loose else ("B" if optimal > 0 else "U")))
    return out


def test_official_rule_on_a_hand_made_case(tmp_path: Path) -> None:
    sizes = _write(tmp_path / "g.sizes", [("chrA", 1200), ("chrB", 1230), ("chrC", 600)])
    # chrA: a 300 bp peak in both sets, and a relaxed-only one.
    # chrB: an 80 bp peak inside one bin: under half of the bin, but all of the
    #       peak, so -e makes it B.
    # chrC: one conservative peak, two relaxed peaks in the same bin: counts differ -> A.
    conservative = [_narrowpeak("chrA", 400, 700), _narrowpeak("chrB", 1010, 1090), _narrowpeak("chrC", 200, 400)]
    relaxed = [*conservative, _narrowpeak("chrA", 900, 950), _narrowpeak("chrC", 150, 180)]
    peaks = {"cellX": (_write(tmp_path / "c.gz", conservative, gz=True), _write(tmp_path / "r.gz", relaxed, gz=True))}
    out = tmp_path / "TF.train.labels.tsv.gz"
    counts = build_labels(sizes, peaks, str(out))
    rows = _read(str(out))
    assert rows[0] == ["chr", "start", "stop", "cellX"]
    got = {(r[0], int(r[1])): r[3] for r in rows[1:]}
    # The geometry spelled out.
    assert got[("chrA", 300)] == "B"  # 100 bp = exactly half the bin
    assert got[("chrA", 600)] == "B"
    assert got[("chrA", 250)] == "A"  # 50 bp: relaxed hit, optimal miss
    assert got[("chrA", 650)] == "A"
    assert got[("chrA", 200)] == "U"  # touches at 400: half-open, no overlap
    assert got[("chrA", 750)] == "A" and got[("chrA", 900)] == "A"  # relaxed-only peak
    assert got[("chrA", 950)] == "U" and got[("chrA", 1000)] == "U"
    assert got[("chrB", 1000)] == "B"  # 40 % of the bin, 100 % of the peak
    assert got[("chrB", 900)] == "B"  # 80 bp inside [900, 1100) too
    assert ("chrB", 1050) not in got  # truncated window dropped
    assert got[("chrC", 200)] == "B" and got[("chrC", 0)] == "A"  # relaxed 150-180 only
    assert got[("chrC", 100)] == "A"  # optimal 1, relaxed 2: counts differ
    # And every bin agrees with the independent statement of the rule.
    expected = []
    for chrom, size, cons, rel in (
        ("chrA", 1200, [(400, 700)], [(400, 700), (900, 950)]),
        ("chrB", 1230, [(1010, 1090)], [(1010, 1090)]),
        ("chrC", 600, [(200, 400)], [(150, 180), (200, 400)]),
    ):
        expected += [[chrom, str(s), str(s + 200), label] for s, label in _rule_by_hand(size, cons, rel)]
    assert rows[1:] == expected
    assert counts["bins"] == len(expected)
    assert counts["cells"]["cellX"] == {k: sum(1 for r in expected if r[3] == k) for k in "UBA"}


def test_without_either_flag_the_short_peak_would_be_ambiguous(tmp_path: Path) -> None:
    """Guards the -e flag: plain -f 0.5 -F 0.5 would require both fractions."""
    bins = _write(tmp_path / "bins.bed", [("chrB", 1000, 1200)])
    peak = _write(tmp_path / "p.bed", [("chrB", 1010, 1090)])
    with_e = run_bedtools(["intersect", "-a", bins, "-b", peak, "-c", "-f", "0.5", "-F", "0.5", "-e"])
    without = run_bedtools(["intersect", "-a", bins, "-b", peak, "-c", "-f", "0.5", "-F", "0.5"])
    assert with_e.split()[-1] == "1" and without.split()[-1] == "0"


def test_blacklist_sorting_cells_and_restriction(tmp_path: Path) -> None:
    sizes = _write(tmp_path / "g.sizes", [("chr2", 2000), ("chr10", 1000), ("chr1", 1500), ("chrZ", 900)])
    blacklist = _write(tmp_path / "bl.bed.gz", [("chr1", 500, 501), ("chr10", 0, 10)], gz=True)
    empty_c = _write(tmp_path / "c.gz", [_narrowpeak("chr2", 1000, 1240)], gz=True)
    empty_r = _write(tmp_path / "r.gz", [_narrowpeak("chr2", 1000, 1240)], gz=True)
    peaks = {"b-cell": (empty_c, empty_r), "a-cell": (empty_c, empty_r)}
    out = tmp_path / "o.tsv.gz"
    build_labels(sizes, peaks, str(out), blacklist_path=blacklist, chroms=["chr2", "chr10", "chr1"], jobs=2)
    rows = _read(str(out))
    assert rows[0] == ["chr", "start", "stop", "a-cell", "b-cell"]  # cells alphabetical
    chroms = [r[0] for r in rows[1:]]
    assert sorted(set(chroms)) == ["chr1", "chr10", "chr2"]  # chrZ excluded
    keys = [(r[0], int(r[1])) for r in rows[1:]]
    assert keys == sorted(keys)  # byte order of names, then start: chr1, chr10, chr2
    starts = {c: [int(r[1]) for r in rows[1:] if r[0] == c] for c in ("chr1", "chr10")}
    assert all(not (s < 501 and s + 200 > 500) for s in starts["chr1"])  # 1 bp of blacklist removes 4 bins
    assert len(starts["chr1"]) == len(range(0, 1301, 50)) - 4
    assert starts["chr10"][0] == 50
    assert all(int(r[2]) - int(r[1]) == 200 for r in rows[1:])
    with pytest.raises(ValueError, match="chr3"):
        build_labels(sizes, peaks, str(out), chroms=["chr3"])


def test_output_is_reproducible_bytes(tmp_path: Path) -> None:
    sizes = _write(tmp_path / "g.sizes", [("chrA", 5000)])
    cons = _write(tmp_path / "c.gz", [_narrowpeak("chrA", 1000, 1300)], gz=True)
    rel = _write(tmp_path / "r.gz", [_narrowpeak("chrA", 1000, 1300), _narrowpeak("chrA", 3000, 3100)], gz=True)
    build_labels(sizes, {"c": (cons, rel)}, str(tmp_path / "a.tsv.gz"))
    build_labels(sizes, {"c": (cons, rel)}, str(tmp_path / "b.tsv.gz"), workdir=str(tmp_path / "work"))
    assert (tmp_path / "a.tsv.gz").read_bytes() == (tmp_path / "b.tsv.gz").read_bytes()
    assert (tmp_path / "work" / "bins.bed").is_file()  # workdir keeps intermediates


def test_bedtools_errors_are_actionable(tmp_path: Path) -> None:
    with pytest.raises(BedtoolsError, match="not found.*Install bedtools"):
        run_bedtools(["--version"], binary="bedtools-that-does-not-exist")
    with pytest.raises(BedtoolsError) as info:
        run_bedtools(["merge", "-i", str(tmp_path / "missing.bed")])
    message = str(info.value)
    assert "merge -i" in message and "missing.bed" in message and "exit" in message
    with pytest.raises(FileNotFoundError, match="conservative"):
        build_labels(
            _write(tmp_path / "g", [("c", 1000)]),
            {"x": (str(tmp_path / "no.gz"), str(tmp_path / "no.gz"))},
            str(tmp_path / "o.gz"),
        )


def test_real_chr22_matches_a_plain_bedtools_pipeline(tmp_path: Path) -> None:
    """K562 CTCF on chr22 with the challenge blacklist, against the shell rule."""
    sizes = tmp_path / "chr22.sizes"
    hg19 = (DREAM / "annotations/hg19.autoX.chrom.sizes").read_text().splitlines(True)
    sizes.write_text("".join(line for line in hg19 if line.split("\t")[0] == "chr22"))
    cons = DREAM / "peaks/ChIPseq.K562.CTCF.conservative.train.narrowPeak.gz"
    rel = DREAM / "peaks/ChIPseq.K562.CTCF.relaxed.narrowPeak.gz"
    blacklist = DREAM / "annotations/blacklist.bed.gz"
    out = tmp_path / "CTCF.train.labels.tsv.gz"
    # The whole genome's sizes: the peaks lie on every training chromosome.
    counts = build_labels(
        str(DREAM / "annotations/hg19.autoX.chrom.sizes"),
        {"K562": (str(cons), str(rel))},
        str(out),
        blacklist_path=str(blacklist),
        chroms=["chr22"],
    )

    reference = tmp_path / "reference.tsv"
    script = f"""
set -euo pipefail
cd {tmp_path}
bedtools makewindows -g {sizes} -w 200 -s 50 | awk '$3 - $2 == 200' \\
  | bedtools intersect -v -a stdin -b {blacklist} > ref_bins.bed
zcat {cons} | sort -k1,1 -k2,2n | bedtools merge -i stdin > ref_cons.bed
zcat {rel} | sort -k1,1 -k2,2n | bedtools merge -i stdin > ref_rel.bed
bedtools intersect -a ref_bins.bed -b ref_cons.bed -c -f 0.5 -F 0.5 -e > ref_opt.txt
bedtools intersect -a ref_bins.bed -b ref_rel.bed -c > ref_any.txt
{{ printf 'chr\\tstart\\tstop\\tK562\\n'
   paste ref_opt.txt ref_any.txt \\
     | awk 'BEGIN {{ OFS = "\\t" }} {{ print $1, $2, $3, ($4 != $8) ? "A" : (($4 > 0) ? "B" : "U") }}'
}} > {reference}
"""
    subprocess.run(["bash", "-c", script], check=True, env={**os.environ, "LC_ALL": "C"})
    with gzip.open(out, "rt") as ours, open(reference) as theirs:
        n = 0
        for n, (a, b) in enumerate(zip(ours, theirs, strict=True), start=1):
            assert a == b, f"line {n}: {a!r} != {b!r}"
    assert n == counts["bins"] + 1 > 600_000
    tally = counts["cells"]["K562"]
    assert tally["B"] > 1000 and tally["A"] > tally["B"] / 2
