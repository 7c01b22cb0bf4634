"""Every bad input is refused in one line naming file, line and reason, or set
aside and counted: one case per input kind and defect, the same through
``tfbs preprocess`` and its Spark job, and property-based checks on generated
label and peak files."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import DEMO_CONFIG, REPO, small_config
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from preprocess.inputs import check_preprocess_inputs, read_label_cells
from preprocess.label_reader import LabelPiece, ReadReport, read_label_file
from tf_models.predict import _parse_regions
from tfbs.bed import read_bed
from tfbs.config import DataConfig, load_config
from tfbs.dream import read_chrom_sizes, read_dnase_peaks
from tfbs.errors import BadInputError, ConfigError, MissingInputError
from tfbs.genome import check_fasta_index, load_chromosome, read_fai
from tfbs.labels import check_peak_files
from tfbs.lineage import read_export_metadata
from tfbs.motifs import read_meme
from tfbs.proteins import read_protein_fasta
from tfbs.storage import local_path

SIZES = {"chr1": 10_000, "chr2": 5_000}
LABEL_HEADER = "chr\tstart\tstop\tHepG2\tK562\n"
SORT = "sort -k1,1 -k2,2n"


def _peak(chrom: str, start: object, end: object, columns: int = 10) -> str:
    return "\t".join([chrom, str(start), str(end), ".", "500", ".", "9.1", "4.2", "3.3", "80"][:columns]) + "\n"


def _fasta_text(sequences: dict[str, str], width: int = 60) -> str:
    return "".join(
        f">{name}\n" + "".join(seq[i : i + width] + "\n" for i in range(0, len(seq), width))
        for name, seq in sequences.items()
    )


def _fai_text(sequences: dict[str, str], width: int = 60, lead: int = 0) -> str:
    """The samtools index of :func:`_fasta_text` after ``lead`` bytes."""
    lines, offset = [], lead
    for name, seq in sequences.items():
        offset += len(f">{name}\n")
        lines.append(f"{name}\t{len(seq)}\t{offset}\t{width}\t{width + 1}\n")
        offset += len(seq) + -(-len(seq) // width)
    return "".join(lines)


GENOME = {"chr1": "ACGT" * 40, "chr2": "GATTACA" * 20}


def _labels(tmp: Path, text: str) -> str:
    return _write(tmp / "CTCF.train.labels.tsv.gz", LABEL_HEADER + text)


def _write(path: Path, text: str) -> str:
    path.write_bytes(gzip.compress(text.encode()) if path.name.endswith(".gz") else text.encode())
    return f"file://{path}"


def _read_labels(uri: str, bad_rows: str = "fail", block_bytes: int = 1 << 16) -> list:
    return list(read_label_file(uri, ["HepG2", "K562"], list(SIZES), bad_rows, block_bytes))


def _genome(tmp: Path, fasta: str, fai: str) -> str:
    (tmp / "genome.fa.fai").write_text(fai)
    return _write(tmp / "genome.fa", fasta)


#: (id, write the input and return its URI, read it, file named in the error
#: as a suffix of the input's URI, line, reason).
Case = tuple[str, Callable[[Path], str], Callable[[str], object], str, int, str]
CASES: list[Case] = [
    # label files: the header alone, a repeated bin, rows out of order
    ("labels-header-only", lambda t: _labels(t, ""), _read_labels, "", 1, "header but no data rows"),
    ("labels-header-only-driver", lambda t: _labels(t, ""), read_label_cells, "", 1, "header but no data rows"),
    (
        "labels-duplicate",
        lambda t: _labels(t, "chr1\t0\t200\tU\tU\nchr1\t50\t250\tU\tB\nchr1\t50\t250\tU\tB\n"),
        _read_labels,
        "",
        4,
        "duplicate of line 3 (chr1 50)",
    ),
    (
        "labels-unsorted",
        lambda t: _labels(t, "chr1\t0\t200\tU\tU\nchr1\t100\t300\tU\tU\nchr1\t50\t250\tU\tU\n"),
        _read_labels,
        "",
        4,
        f"unsorted: chr1 50 after chr1 100 on line 3 (sort by chromosome, then start: {SORT})",
    ),
    (
        "labels-chromosome-resumes",
        lambda t: _labels(t, "chr1\t0\t200\tU\tU\nchr2\t0\t200\tU\tU\nchr1\t50\t250\tU\tU\n"),
        _read_labels,
        "",
        4,
        f"unsorted: chr1 rows resume after those of chr2 (each chromosome's rows must be together: {SORT})",
    ),
    # narrowPeak (ChIP-seq and DNase peaks): gzipped, a track line first, the bad line third
    *[
        (
            f"peaks-{name}",
            lambda t, bad=bad: _write(t / "p.narrowPeak.gz", "track name=p\n" + _peak("chr1", 10, 90) + bad),
            lambda uri: read_bed(uri, SIZES),
            "",
            3,
            reason,
        )
        for name, bad, reason in [
            ("two-columns", "chr1\t100\n", "expected at least 3 tab-separated columns, found 2"),
            ("column-count", _peak("chr1", 100, 200, columns=9), "expected 10 columns as on line 2, found 9"),
            ("non-integer", _peak("chr1", "1e3", 2000), "start '1e3' is not an integer"),
            ("negative", _peak("chr2", -5, 20), "start -5 is negative"),
            ("empty-interval", _peak("chr1", 500, 500), "start 500 is not before end 500"),
            ("reversed", _peak("chr1", 600, 500), "start 600 is not before end 500"),
            ("unknown-chromosome", _peak("chrUn", 1, 20), "chromosome 'chrUn' is not in the genome"),
            ("beyond-end", _peak("chr2", 4900, 5100), "end 5100 is beyond the end of chr2 (5000 bp)"),
        ]
    ],
    # DNase peaks are read with their summits, which must lie inside the peak
    (
        "dnase-summit-outside",
        lambda t: _write(t / "d.narrowPeak.gz", _peak("chr1", 10, 200) + _peak("chr1", 300, 350)),
        lambda uri: read_dnase_peaks(uri, SIZES),
        "",
        2,
        "summit offset 80 is outside the peak (50 bp)",
    ),
    # ChIP-seq peaks for `tfbs labels`: lines on chromosomes without bins are
    # ignored (hg19.autoX has no chrY), but not all of them
    (
        "chip-peaks-beyond-end",
        lambda t: _write(t / "c.narrowPeak.gz", _peak("chrY", 5, 90) + _peak("chr2", 4000, 5001)),
        lambda uri: check_peak_files({"K562": (uri, uri)}, SIZES, None),
        "",
        2,
        "end 5001 is beyond the end of chr2 (5000 bp)",
    ),
    (
        "chip-peaks-other-naming",
        lambda t: _write(t / "c.narrowPeak.gz", _peak("1", 5, 90) + _peak("2", 0, 10)),
        lambda uri: check_peak_files({"K562": (uri, uri)}, SIZES, None),
        "",
        1,
        "chromosome '1' is not in the genome, nor is any other chromosome of this file (named another way?)",
    ),
    # the blacklist: lines elsewhere or past a chromosome's end exclude nothing,
    # but its lines must still be intervals, and some on this genome
    (
        "blacklist-reversed",
        lambda t: _write(t / "bl.bed.gz", "chrY\t0\t99\nchr1\t9000\t20000\nchr1\t300\t200\n"),
        lambda uri: read_bed(uri, SIZES, unknown_chroms="skip", past_end="allow"),
        "",
        3,
        "start 300 is not before end 200",
    ),
    (
        "blacklist-other-naming",
        lambda t: _write(t / "bl.bed.gz", "1\t0\t99\n2\t0\t10\n"),
        lambda uri: read_bed(uri, SIZES, unknown_chroms="skip", past_end="allow"),
        "",
        1,
        "chromosome '1' is not in the genome, nor is any other chromosome of this file (named another way?)",
    ),
    # the genome FASTA and its index
    (
        "fasta-text-before-header",
        lambda t: _genome(t, "genome v2\n" + _fasta_text(GENOME), "".join(_fai_text(GENOME))),
        check_fasta_index,
        "",
        1,
        "text before the first '>' header",
    ),
    (
        "fai-stale-offsets",
        lambda t: _genome(t, _fasta_text({**GENOME, "chr1": "ACGT" * 41}), _fai_text(GENOME)),
        check_fasta_index,
        ".fai",
        2,
        "stale index of {uri} (re-run `samtools faidx`): chr2's offset 175 does not follow a '>chr2' line",
    ),
    (
        "fai-stale-last-record",
        lambda t: _genome(t, _fasta_text({**GENOME, "chr2": "GATTACA" * 19}), _fai_text(GENOME)),
        check_fasta_index,
        ".fai",
        2,
        "stale index of {uri} (re-run `samtools faidx`): chr2 of 140 bp would end at byte 317, "
        "but the file ends at byte 311",
    ),
    (
        "fai-malformed",
        lambda t: _genome(t, _fasta_text(GENOME), "chr1\t160\tsix\t60\t61\n"),
        check_fasta_index,
        ".fai",
        1,
        "expected name, length, offset, bases and bytes per line; found 'chr1\\t160\\tsix\\t60\\t61'",
    ),
    # TF proteins
    (
        "protein-stop-codon",
        lambda t: _write(t / "p.fa", ">CTCF zf\nMEGDAVEAIV\nEESETFIK*\n"),
        read_protein_fasta,
        "",
        3,
        "invalid residue '*' in CTCF at column 9 (allowed: the 20 amino acids and X)",
    ),
    (
        "protein-ambiguity-code",
        lambda t: _write(t / "p.fa", ">CTCF\nMEGDBVEAIV\n"),
        read_protein_fasta,
        "",
        2,
        "invalid residue 'B' in CTCF at column 5 (allowed: the 20 amino acids and X)",
    ),
    (
        "protein-text-before-header",
        lambda t: _write(t / "p.fa", "MEGDAV\n>CTCF\nMEGDAV\n"),
        read_protein_fasta,
        "",
        1,
        "sequence before the first '>' header",
    ),
    (
        "protein-empty-sequence",
        lambda t: _write(t / "p.fa", ">CTCF\n\n>EGR1\nMAAAK\n"),
        read_protein_fasta,
        "",
        1,
        "protein 'CTCF' has no sequence",
    ),
    (
        "protein-empty-last-sequence",
        lambda t: _write(t / "p.fa", ">CTCF\nMAAAK\n>EGR1\n"),
        read_protein_fasta,
        "",
        3,
        "protein 'EGR1' has no sequence",
    ),
    (
        "protein-duplicate-name",
        lambda t: _write(t / "p.fa", ">CTCF a\nMAAAK\n>CTCF b\nMAAAK\n"),
        read_protein_fasta,
        "",
        3,
        "protein 'CTCF' named twice (first on line 1)",
    ),
    (
        "protein-nameless-header",
        lambda t: _write(t / "p.fa", ">\nMAAAK\n"),
        read_protein_fasta,
        "",
        1,
        "header without a name",
    ),
    # chromosome sizes
    (
        "sizes-malformed",
        lambda t: _write(t / "g.sizes", "chr1\t1000\nchr2\n"),
        read_chrom_sizes,
        "",
        2,
        "expected 'chrom<TAB>size', found 'chr2'",
    ),
    (
        "sizes-non-integer",
        lambda t: _write(t / "g.sizes", "chr1\t1.5e6\n"),
        read_chrom_sizes,
        "",
        1,
        "size '1.5e6' of chr1 is not a positive integer",
    ),
    (
        "sizes-zero",
        lambda t: _write(t / "g.sizes", "chr1\t0\n"),
        read_chrom_sizes,
        "",
        1,
        "size '0' of chr1 is not a positive integer",
    ),
    (
        "sizes-duplicate",
        lambda t: _write(t / "g.sizes", "chr1\t1000\nchr2\t50\nchr1\t1000\n"),
        read_chrom_sizes,
        "",
        3,
        "chr1 is listed twice (first on line 1)",
    ),
    (
        "sizes-empty",
        lambda t: _write(t / "g.sizes", "\n"),
        read_chrom_sizes,
        "",
        1,
        "no chromosome sizes (the file is empty)",
    ),
    # predict's regions (lines as Spark's textFile().zipWithIndex() gives them)
    *[
        (
            f"regions-{name}",
            lambda t, bad=bad: _write(t / "regions.bed", "chr1\t0\t200\n" + bad + "\n"),
            lambda uri: list(_parse_regions(_zip_with_index(uri), uri, SIZES)),
            "",
            2,
            reason,
        )
        for name, bad, reason in [
            ("two-columns", "chr1\t200", "expected chr, start, stop; found 2 column(s)"),
            ("non-integer", "chr1\t2e2\t400", "start/stop not non-negative integers: '2e2', '400'"),
            ("negative", "chr1\t-50\t150", "start/stop not non-negative integers: '-50', '150'"),
            ("empty", "chr1\t200\t200", "start 200 is not before stop 200"),
            ("unknown-chromosome", "chrZ\t0\t200", "chromosome 'chrZ' is not in the genome FASTA"),
            ("beyond-end", "chr2\t4900\t5100", "stop 5100 is beyond the end of chr2 (5000 bp)"),
        ]
    ],
]


# --------------------------------------------------------------------------
# Motif files, the genome's bases, configured cells (issue 32)
# --------------------------------------------------------------------------

#: A MEME file's opening lines (1-6), as HOCOMOCO writes them.
MEME_HEAD = ["MEME version 4", "", "ALPHABET= ACGT", "", "strands: + -", ""]
MEME_ROWS = ["0.100000 0.200000 0.300000 0.400000", "0.25 0.25 0.25 0.25", "0.700000 0.100000 0.100000 0.100000"]


def _meme_lines(rows: list[str] = MEME_ROWS, header: str = "alength= 4 w= 3 nsites= 20 E= 0") -> list[str]:
    """MEME_HEAD, then the motif CTCF_f2: its MOTIF line is 7, its matrix header 9, its rows from 10."""
    return [*MEME_HEAD, "MOTIF CTCF_f2 CTCF", "", f"letter-probability matrix: {header}", *rows, ""]


def _write_bytes(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return f"file://{path}"


def _meme(tmp: Path, lines: list[str], name: str = "motifs.meme") -> str:
    return _write(tmp / name, "\n".join(lines) + "\n")


def _row(replacement: str, at: int = 1) -> list[str]:
    """:data:`MEME_ROWS` with row ``at`` (line ``10 + at``) replaced."""
    return [replacement if i == at else row for i, row in enumerate(MEME_ROWS)]


def _data_config(tmp: Path, labels: str, cells: list[str]) -> DataConfig:
    """A data section over a tiny genome, one TF's proteins and ``labels``; no DNase, no blacklist."""
    _genome(tmp, _fasta_text(GENOME), _fai_text(GENOME))
    _write(tmp / "p.fa", ">CTCF\nMEGDAV\n")
    (tmp / "labels").mkdir(exist_ok=True)
    _write(tmp / "labels" / "CTCF.train.labels.tsv.gz", labels)
    return DataConfig(
        root=str(tmp),
        tfs=["CTCF"],
        cells=cells,
        labels_dir=str(tmp / "labels"),
        dnase_dir=None,
        blacklist=None,
        genome_fasta=str(tmp / "genome.fa"),
        proteins_fasta=str(tmp / "p.fa"),
    )


def _check_cells(uri: str, cells: list[str]) -> object:
    tmp = Path(local_path(uri)).parents[1]
    return check_preprocess_inputs(_data_config(tmp, LABEL_HEADER + "chr1\t0\t200\tU\tB\n", cells))


ALLOWED_BASES = "(allowed: A, C, G, T, N and the IUPAC ambiguity codes, in either case)"

CASES += [
    # MEME motif files: the matrix header is line 9, its rows lines 10-12
    *[
        (f"motif-{name}", lambda t, lines=lines: _meme(t, lines), read_meme, "", line, reason)
        for name, lines, line, reason in [
            ("bad-number", _meme_lines(_row("0.25 0.2S 0.25 0.3")), 11, "motif CTCF_f2: '0.2S' is not a number"),
            ("zero-row", _meme_lines(_row("0 0 0 0")), 11, "motif CTCF_f2: every probability of the row is 0"),
            ("nan", _meme_lines(_row("nan 0.5 0.25 0.25")), 11, "motif CTCF_f2: 'nan' is not a probability (0 to 1)"),
            ("counts", _meme_lines(_row("10 20 30 40", 0)), 10, "motif CTCF_f2: '10' is not a probability (0 to 1)"),
            ("row-sum", _meme_lines(_row("0.2 0.2 0.2 0.2", 2)), 12, "motif CTCF_f2: the row sums to 0.8, not 1"),
            ("columns", _meme_lines(_row("0.5 0.25 0.25")), 11, "motif CTCF_f2: expected 4 columns, found 3"),
            ("width", _meme_lines(header="alength= 4 w= three"), 9, "w= 'three' is not a positive integer"),
            (
                "alphabet-length",
                _meme_lines(header="alength= 20 w= 3"),
                9,
                "alength= 20: only the 4 letters ACGT are supported",
            ),
            ("truncated", _meme_lines(MEME_ROWS[:2])[:-1], 11, "motif CTCF_f2 truncated (2 of 3 rows)"),
            (
                "duplicate",
                _meme_lines() + _meme_lines()[6:],
                14,
                "motif CTCF_f2 named twice (first on line 7)",
            ),
            ("nameless", [*MEME_HEAD, "MOTIF", *_meme_lines()[7:]], 7, "MOTIF line without an id"),
            ("no-motif", MEME_HEAD, 1, "no motif (no 'letter-probability matrix' line after a MOTIF line)"),
            (
                "alphabet",
                ["MEME version 4", "ALPHABET= ACDEFGHIKLMNPQRSTVWY"],
                2,
                "only the ACGT alphabet is supported, found 'ALPHABET= ACDEFGHIKLMNPQRSTVWY'",
            ),
        ]
    ],
    (
        "motif-not-utf8",
        lambda t: _write_bytes(
            t / "motifs.meme", "\n".join(_meme_lines()[:10]).encode() + b"\n0.25 0.25 \xb5.25 0.25\n"
        ),
        read_meme,
        "",
        11,
        "not UTF-8 text (byte 0xb5 at column 11)",
    ),
    # the genome's bases, checked as a task loads a chromosome: chr2's lines are 6-8
    (
        "genome-dash",
        lambda t: _genome(
            t, _fasta_text({**GENOME, "chr2": GENOME["chr2"][:64] + "-" + GENOME["chr2"][65:]}), _fai_text(GENOME)
        ),
        lambda uri: load_chromosome(uri, read_fai(uri)["chr2"]),
        "",
        7,
        f"invalid base '-' in chr2 at column 5 {ALLOWED_BASES}",
    ),
    (
        "genome-digit",
        lambda t: _genome(t, _fasta_text({**GENOME, "chr1": "acgt" * 30 + "acg5" + "ACGT" * 9}), _fai_text(GENOME)),
        lambda uri: load_chromosome(uri, read_fai(uri)["chr1"]),
        "",
        4,
        f"invalid base '5' in chr1 at column 4 {ALLOWED_BASES}",
    ),
    (
        "genome-short-line",
        lambda t: _genome(
            t, _fasta_text(GENOME).replace(GENOME["chr2"][:60], GENOME["chr2"][:59] + "\n", 1), _fai_text(GENOME)
        ),
        lambda uri: load_chromosome(uri, read_fai(uri)["chr2"]),
        "",
        6,
        "chr2's line is shorter than the 60 bases of the index (re-run `samtools faidx`)",
    ),
    (
        "genome-long-line",
        lambda t: _genome(
            t, _fasta_text(GENOME).replace(GENOME["chr2"][:60], GENOME["chr2"][:60] + "A", 1), _fai_text(GENOME)
        ),
        lambda uri: load_chromosome(uri, read_fai(uri)["chr2"]),
        "",
        6,
        "chr2's line is longer than the 60 bases of the index (re-run `samtools faidx`)",
    ),
    # a cell of data.cells that a label file lacks
    (
        "labels-configured-cell-missing",
        lambda t: f"file://{t}/labels/CTCF.train.labels.tsv.gz",
        lambda uri: _check_cells(uri, ["HepG2", "GM12878", "K562", "A549"]),
        "",
        1,
        "data.cells ['GM12878', 'A549'] not in the header (its cells: HepG2, K562)",
    ),
]


def _zip_with_index(uri: str) -> list[tuple[str, int]]:
    return [(line, index) for index, line in enumerate(Path(local_path(uri)).read_text().splitlines())]


@pytest.mark.parametrize("name, write, read, suffix, line, reason", CASES, ids=[case[0] for case in CASES])
def test_bad_input_names_file_line_and_reason(tmp_path, name, write, read, suffix, line, reason):
    uri = write(tmp_path)
    with pytest.raises(BadInputError) as err:
        read(uri)
    reason = reason.format(uri=uri)
    assert (err.value.uri, err.value.line, err.value.reason) == (uri + suffix, line, reason)
    assert str(err.value) == f"{uri}{suffix}:{line}: {reason}" and "\n" not in str(err.value)


def test_good_inputs_of_every_kind_pass(tmp_path):
    """The readers accept what the bad cases break: the checks have no false alarms."""
    labels = _labels(tmp_path, "chr2\t0\t200\tU\tB\nchr1\t0\t200\tU\tU\nchr1\t100\t300\tA\tU\n")
    assert _read_labels(labels)[-1].n_rows == 3
    peaks = _write(tmp_path / "p.gz", "# comment\n\n" + _peak("chr1", 0, 10_000) + _peak("chr2", 5, 6) + "\r\n")
    assert {chrom: (s.tolist(), e.tolist()) for chrom, (s, e) in read_bed(peaks, SIZES).items()} == {
        "chr1": ([0], [10_000]),
        "chr2": ([5], [6]),
    }
    chip = _write(tmp_path / "c.narrowPeak.gz", _peak("chrY", 5, 90) + _peak("chr2", 10, 20))
    assert list(read_bed(chip, SIZES, unknown_chroms="skip")) == ["chr2"]
    blacklist = _write(tmp_path / "bl.bed", "chrUn_gl000220\t0\t99\nchr2\t10\t9000\n")
    assert list(read_bed(blacklist, SIZES, unknown_chroms="skip", past_end="allow")) == ["chr2"]
    genome = _genome(tmp_path, "\n" + _fasta_text(GENOME) + "\n", _fai_text(GENOME, lead=1))
    assert {name: entry.length for name, entry in check_fasta_index(genome).items()} == {"chr1": 160, "chr2": 140}
    proteins = _write(tmp_path / "p.fa", ">CTCF zf\nmegdavX\n\n>EGR1\nMAAAK\n")
    assert read_protein_fasta(proteins) == {"CTCF": "MEGDAVX", "EGR1": "MAAAK"}
    assert read_chrom_sizes(_write(tmp_path / "g.sizes", "chr1 1000 extra\nchr2\t50\n")) == {"chr1": 1000, "chr2": 50}


def test_invalid_yaml_value_names_file_and_key(tmp_path):
    tree = yaml.safe_load(DEMO_CONFIG.read_text())
    tree["preprocess"]["bad_rows"] = "skip"
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(tree))
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(err.value) == f"{path}: preprocess.bad_rows: Input should be 'fail' or 'set_aside'"


def test_motif_db_without_motifs_is_refused_on_load(tmp_path):
    """A motif file with no motif named in it would scan nothing and seed no filter, silently."""
    meme = REPO / "data" / "dream" / "annotations" / "HOCOMOCOv9.meme"
    with pytest.raises(ConfigError) as err:
        load_config(DEMO_CONFIG, [f"evaluate.motif_db={meme}"])
    assert str(err.value) == (
        f"{DEMO_CONFIG}: evaluate: motif_db {meme.as_uri()} is set but motifs is empty: name each TF's motif in it "
        "(evaluate.motifs: {TF: motif id}), or leave motif_db out (a database only to match learned motifs "
        "against is explain.motif_db)"
    )
    named = load_config(DEMO_CONFIG, [f"evaluate.motif_db={meme}", "evaluate.motifs={CTCF: CTCF_f1}"])
    assert named.evaluate.motifs == {"CTCF": "CTCF_f1"}


def test_good_motif_files_pass(tmp_path):
    """What the motif cases break reads: gzipped, without w= (MEME makes it optional), rows that round."""
    plain = read_meme(_meme(tmp_path, _meme_lines()))
    assert list(plain) == ["CTCF_f2"] and plain["CTCF_f2"].shape == (3, 4)
    without_width = _meme_lines(header="alength= 4 nsites= 20") + _meme_lines()[6:]
    without_width[-7] = "MOTIF EGR1_f2"
    both = read_meme(_meme(tmp_path, without_width, "motifs.meme.gz"))
    assert list(both) == ["CTCF_f2", "EGR1_f2"]
    assert all(matrix.shape == (3, 4) for matrix in both.values())
    rounded = read_meme(_meme(tmp_path, _meme_lines(_row("0.333 0.333 0.333 0.0"))))
    assert rounded["CTCF_f2"][1].sum() == pytest.approx(1.0)


def test_motif_db_on_gcs_reads_through_storage(gcs_base):
    """A remote motif file reads like a local one (it was a local path only)."""
    from tfbs import storage

    local = REPO / "data" / "dream" / "annotations" / "HOCOMOCOv9.meme"
    storage.write_text(f"{gcs_base}/HOCOMOCOv9.meme", local.read_text())
    remote = read_meme(f"{gcs_base}/HOCOMOCOv9.meme")
    assert list(remote) == list(read_meme(str(local))) and len(remote) == 428


def test_iupac_codes_in_the_genome_pass(tmp_path):
    """IUPAC ambiguity codes are unknown bases, as N (GRCh38 holds a few); the check has no false alarm."""
    genome = {"chr1": "ACGTNacgtnRYKMSWBDHVrykmswbdhv" * 4, "chr2": "GATTACA" * 20}
    uri = _genome(tmp_path, _fasta_text(genome), _fai_text(genome))
    assert load_chromosome(uri, read_fai(uri)["chr1"]).tobytes() == genome["chr1"].upper().encode()


def test_configured_cells_in_every_header_pass(tmp_path):
    data = _data_config(tmp_path, LABEL_HEADER + "chr1\t0\t200\tU\tB\n", ["K562"])
    assert check_preprocess_inputs(data) == {"CTCF": ["K562"]}


# An export's metadata, damaged: the library and `tfbs predict` name file, line and reason

_METADATA = '{\n  "tfs": ["CTCF"],\n  "cells": ["K562"]\n  "window": 1000\n}\n'


def _damaged_export(run_dir: Path, text: str = _METADATA) -> tuple[str, str]:
    """A version ``v1`` whose export's metadata is ``text``; returns the export's and the metadata's URIs."""
    export = run_dir / "models" / "v1" / "export"
    export.mkdir(parents=True)
    (export / "tfbs_metadata.json").write_text(text)
    return f"file://{export}", f"file://{export}/tfbs_metadata.json"


@pytest.mark.parametrize(
    "text, line, reason",
    [
        (_METADATA, 4, "not valid JSON: Expecting ',' delimiter at column 3"),
        ("", 1, "not valid JSON: Expecting value at column 1"),
        ('["CTCF"]\n', 1, "expected a JSON object, found list"),
        ('{"tfs": ["CTCF"], "cells": ["K562"], "window": "1000"}', 1, "no 'window' int in the metadata"),
    ],
    ids=["missing-comma", "empty", "not-an-object", "window-not-int"],
)
def test_damaged_export_metadata_names_file_line_and_reason(tmp_path, text, line, reason):
    export, uri = _damaged_export(tmp_path, text)
    with pytest.raises(BadInputError) as err:
        read_export_metadata(export)
    redo = f"delete {export} and run `tfbs train` to export the model again"
    assert str(err.value) == f"{uri}:{line}: {reason} ({redo})"


def test_cli_predict_refuses_damaged_export_metadata_in_one_line(tmp_path):
    export, uri = _damaged_export(tmp_path / "run")
    run = subprocess.run(
        [sys.executable, "-m", "jobs.cli", "predict", "--config", str(DEMO_CONFIG), f"--set=run_dir={tmp_path / 'run'}"]
        + ["--tf", "CTCF", "--cell", "K562", "--model-version", "v1"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 2, run.stderr
    redo = f"delete {export} and run `tfbs train` to export the model again"
    assert run.stderr.strip().splitlines()[-1] == (
        f"error: {uri}:4: not valid JSON: Expecting ',' delimiter at column 3 ({redo})"
    )
    assert "Traceback" not in run.stderr and "SparkContext" not in run.stderr


# An export damaged after the fact (a truncated variables file): evaluate and predict end in one line


def _export_files(export: Path, version: str, manifest_digest: str) -> Path:
    """A stand-in export of ``version`` with its digests record, as export_model writes one; returns its data file."""
    from tfbs import content_keys

    data = export / "variables" / "variables.data-00000-of-00001"
    data.parent.mkdir(parents=True)
    for path, content in ((export / "saved_model.pb", b"graph"), (export / "variables" / "variables.index", b"index")):
        path.write_bytes(content)
    data.write_bytes(bytes(range(256)) * 64)
    content_keys.record_digests(export)
    metadata = {"version": version, "manifest_digest": manifest_digest, "tfs": ["CTCF"], "cells": ["K562"]}
    (export / "tfbs_metadata.json").write_text(json.dumps({**metadata, "window": 1000}))
    return data


def _no_spark(*args, **kwargs):
    raise AssertionError("a damaged export reached Spark")


def test_cli_predict_refuses_a_truncated_export_in_one_line(tmp_path, monkeypatch, capsys):
    import jobs.predict

    monkeypatch.setattr("tfbs.session.spark_session", _no_spark)
    export = tmp_path / "run" / "models" / "v1" / "export"
    data = _export_files(export, "v1", "0" * 64)
    data.write_bytes(data.read_bytes()[:1000])
    argv = ["--config", str(DEMO_CONFIG), f"--set=run_dir={tmp_path / 'run'}", "--model-version", "v1"]
    code = jobs.predict.main([*argv, "--tf", "CTCF", "--cell", "K562"])
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"error: file://{data}: not the bytes tfbs_digests.json records: damaged, truncated or rewritten since "
        "export (run `tfbs train`: it trains and exports this version again)"
    )


def _exported_version(config, monkeypatch) -> Path:
    """A model version of a stand-in manifest, its lineage and export written, Spark refused; the export's data file."""
    from tf_models import MODEL_FORMAT
    from tf_models.model_format import recorded_model_code
    from tfbs import lineage

    manifest = {"fingerprint": {"inputs": {}}, "created_at": "2026-01-05T00:00:00Z"}
    monkeypatch.setattr("tfbs.manifest.read_manifest", lambda uri: manifest)
    monkeypatch.setattr("tfbs.session.spark_session", _no_spark)
    version = lineage.Lineage.of(config, manifest, MODEL_FORMAT, recorded_model_code())
    lineage.write_lineage(config.run_dir, version)
    export = Path(local_path(lineage.export_uri(config.run_dir, version.version)))
    return _export_files(export, version.version, version.manifest_digest)


def test_cli_evaluate_refuses_a_truncated_export_in_one_line(tmp_path, monkeypatch, capsys):
    import jobs.evaluate

    overrides = [f"run_dir={tmp_path / 'run'}", f"shards_dir={tmp_path / 'shards'}"]
    data = _exported_version(load_config(DEMO_CONFIG, overrides), monkeypatch)
    data.write_bytes(data.read_bytes()[:1000])
    code = jobs.evaluate.main(["--config", str(DEMO_CONFIG), *(f"--set={o}" for o in overrides)])
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"error: file://{data}: not the bytes tfbs_digests.json records: damaged, truncated or rewritten since "
        "export (run `tfbs train`: it trains and exports this version again)"
    )


# Every user mistake of the configuration in one line, exit 2, through the stage that met it


def _last_error(stage_main: Callable[[list[str]], int], argv: list[str], capsys) -> tuple[int, str]:
    """Run a stage in this process; its exit code and last line on stderr (no traceback before it)."""
    code = stage_main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return code, err.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (
            ["train.steps=[1"],
            "train.steps: --set value '[1' is not valid YAML: expected ',' or ']', but got '<stream end>' at column 3",
        ),
        (
            ['spark.conf={spark.executor.cores: "2.5"}'],
            f"{DEMO_CONFIG}: spark.conf: spark.executor.cores: '2.5' is not a positive whole number",
        ),
        (
            ['train.placement.spark_conf={spark.task.cpus: "0"}'],
            f"{DEMO_CONFIG}: train.placement.spark_conf: spark.task.cpus: '0' is not a positive whole number",
        ),
        (
            ["train.model.motif_cnn.seed_motifs=true", "train.model.motif_cnn.seed_motif_db={tmp}/gone.meme"],
            "file://{tmp}/gone.meme: not found (the MEME motif file train.model.motif_cnn.seed_motif_db names)",
        ),
        (
            [
                "train.model.motif_cnn.seed_motifs=true",
                "evaluate.motif_db={tmp}/gone.meme",
                "evaluate.motifs={CTCF: CTCF_f1}",
            ],
            "file://{tmp}/gone.meme: not found (the MEME motif file evaluate.motif_db names)",
        ),
        (
            # Once a KeyError on every TF node, after the cluster had started.
            ["train.placement.record_cache_dir=/scratch/{USER}"],
            f"{DEMO_CONFIG}: train.placement.record_cache_dir: '/scratch/{{USER}}': {{USER}} is not filled in, "
            "only {user} (the user's name)",
        ),
    ],
    ids=[
        "override-not-yaml",
        "executor-cores-2.5",
        "task-cpus-0",
        "seed-motif-db-missing",
        "motif-db-missing",
        "cache-dir-USER",
    ],
)
def test_cli_changes_refuses_a_configuration_mistake_in_one_line(tmp_path, capsys, overrides, expected):
    import jobs.changes

    sets = [f"--set={o.replace('{tmp}', str(tmp_path))}" for o in [f"run_dir={tmp_path / 'run'}", *overrides]]
    code, line = _last_error(jobs.changes.main, ["--config", str(DEMO_CONFIG), *sets], capsys)
    assert (code, line) == (2, f"error: {expected.replace('{tmp}', str(tmp_path))}")


def test_a_configuration_file_not_in_utf8_is_named_with_its_line(tmp_path, capsys):
    import jobs.changes

    path = tmp_path / "latin1.yaml"
    path.write_bytes(DEMO_CONFIG.read_bytes() + "# r\u00e9sum\u00e9 of the run\n".encode("latin-1"))
    line_number = DEMO_CONFIG.read_bytes().count(b"\n") + 1
    code, line = _last_error(jobs.changes.main, ["--config", str(path)], capsys)
    assert (code, line) == (2, f"error: {path}:{line_number}: not UTF-8 text (byte 0xe9 at column 4); save it as UTF-8")
    # A YAML error names its line too, in one line (PyYAML's own message spans three).
    path.write_text("run_dir: [1\n")
    code, line = _last_error(jobs.changes.main, ["--config", str(path)], capsys)
    assert (code, line) == (
        2,
        f"error: {path}:2: not valid YAML: expected ',' or ']', but got '<stream end>' at column 1",
    )


def test_cli_evaluate_refuses_a_missing_motif_file_before_spark(tmp_path, monkeypatch, capsys):
    import jobs.evaluate

    overrides = [
        f"run_dir={tmp_path / 'run'}",
        f"shards_dir={tmp_path / 'shards'}",
        f"evaluate.motif_db={tmp_path}/gone.meme",
        "evaluate.motifs={CTCF: CTCF_f1}",
    ]
    _exported_version(load_config(DEMO_CONFIG, overrides), monkeypatch)
    code, line = _last_error(
        jobs.evaluate.main, ["--config", str(DEMO_CONFIG), *(f"--set={o}" for o in overrides)], capsys
    )
    assert (code, line) == (2, f"error: file://{tmp_path}/gone.meme: MEME motif file (evaluate.motif_db) not found")
    # Read anywhere else (the baselines, explain, unseen), a missing motif file is the same one-line user error.
    with pytest.raises(MissingInputError, match=r"gone.meme: not found \(a MEME motif file the configuration names\)$"):
        read_meme(f"file://{tmp_path}/gone.meme")


def test_a_reservation_that_runs_out_of_time_is_a_setup_error(tmp_path, monkeypatch, capsys):
    """TFoS's bare Exception on a reservation timeout becomes one line naming the setting, exit 2 (nothing trained)."""
    import contextlib
    import types

    from jobs.common import run_stage
    from tf_models.tfos import driver

    def timed_out(*args, **kwargs):
        raise Exception("timed out waiting for reservations to complete")

    cluster = types.SimpleNamespace(run=timed_out, tf_status={}, InputMode=types.SimpleNamespace(TENSORFLOW=1))
    # Stand-ins for TensorFlowOnSpark (loading it loads TensorFlow) and the reservation server it would start.
    monkeypatch.setitem(sys.modules, "tensorflowonspark", types.SimpleNamespace(TFCluster=cluster))
    patches = types.SimpleNamespace(driver_reservations=lambda host, **_: contextlib.nullcontext())
    monkeypatch.setitem(sys.modules, "tf_models.tfos.tfos_patches", patches)
    cancelled = []

    class _Context(_ExecutorlessContext):
        def getConf(self) -> dict[str, str]:  # noqa: N802 (Spark's name)
            return {"spark.driver.host": "127.0.0.1"}

        def cancelAllJobs(self) -> None:  # noqa: N802 (Spark's name)
            cancelled.append(True)

    def training(config, args):
        driver._reserve_nodes(_Context(), print, {}, 4, 1, None, config.train.placement.reservation_timeout_s)

    argv = [
        "--config",
        str(DEMO_CONFIG),
        f"--set=run_dir={tmp_path / 'run'}",
        "--set=train.placement.reservation_timeout_s=5",
    ]
    code = run_stage("train", training, argv)
    assert code == 2 and cancelled == [True]
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "error: train.placement.reservation_timeout_s: the TF nodes did not all register within 5 s (each node "
        "imports TensorFlow first, which on a busy host can take minutes); nothing was trained: raise it and run again"
    )


def test_a_remote_export_unlike_its_record_is_refused_in_one_line(gcs_base, tmp_path, monkeypatch, capsys):
    """Before Spark (the driver's check) and on a node copying it (the export cache), one line naming the file."""
    from jobs.common import run_stage
    from tf_models.model_dir import local_export
    from tfbs import lineage, storage

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    local = _export_files(tmp_path / "export", "v1", "0" * 64).parents[1]
    export = f"{gcs_base}/run/models/v1/export"
    for path in sorted(p for p in local.rglob("*") if p.is_file()):
        storage.write_bytes(f"{export}/{path.relative_to(local).as_posix()}", path.read_bytes())
    storage.write_bytes(f"{export}/variables/variables.index", b"indeX")  # same size, other bytes
    expected = f"error: {export}/variables/variables.index: not the bytes tfbs_digests.json records: damaged, truncated or rewritten since export"
    argv = ["--config", str(DEMO_CONFIG), f"--set=run_dir={tmp_path / 'run'}"]
    for check in (lambda config, args: lineage.require_whole_export(export), lambda config, args: local_export(export)):
        assert run_stage("predict", check, argv) == 2
        assert capsys.readouterr().err.strip().splitlines()[-1].startswith(expected + " (")


# A TF cluster the application cannot host: the one-line user error, exit 2


class _ExecutorlessContext:
    """What :func:`tf_models.tfos.driver._check_executors` asks of a SparkContext."""

    master = "spark://vm:7077"

    def getConf(self) -> dict[str, str]:  # noqa: N802 (Spark's name)
        return {}


def test_too_few_executors_end_the_stage_in_one_line(tmp_path, monkeypatch, capsys):
    from jobs.common import run_stage
    from tf_models.tfos import driver

    monkeypatch.setattr(driver, "await_executors", lambda sc, count, timeout: 2)

    def training(config, args):
        driver._check_executors(_ExecutorlessContext(), num_ps=1, num_workers=2, timeout=5)

    code = run_stage("train", training, ["--config", str(DEMO_CONFIG), f"--set=run_dir={tmp_path / 'run'}"])
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "error: training needs 4 Spark executors, one per TF node (1 chief + 1 ps + 2 workers); spark://vm:7077 "
        "gave 2 within 5 s (train.placement.executors_timeout_s): give the cluster room for 2 more, or train with fewer "
        "workers (train.placement.num_workers)"
    )


def test_reservation_address_missing_is_a_user_error():
    from tf_models.tfos.driver import reservation_host
    from tfbs.errors import TfbsError

    with pytest.raises(TfbsError, match=r"^spark\.driver\.host is not set: "):
        reservation_host(_ExecutorlessContext())


# --------------------------------------------------------------------------
# The preprocessing stage's inputs: one broken copy of the small data set each
# --------------------------------------------------------------------------


def _broken_copy(dataset, tmp_path: Path, defect: str) -> tuple[list[str], str, int, str]:
    """Break one input of ``dataset`` in a copy; return the overrides, and the error's file, line and reason."""
    data = dataset.data
    if defect == "labels-header-only":
        (tmp_path / "labels").mkdir()
        uri = _labels(tmp_path / "labels", "")
        return [f"data.labels_dir={tmp_path / 'labels'}"], uri, 1, "header but no data rows"
    if defect == "fai-missing":
        shutil.copy(local_path(data.genome_fasta), tmp_path / "genome.fa")
        return [f"data.genome_fasta={tmp_path / 'genome.fa'}"], "", 0, ""
    if defect == "fai-stale":
        # The FASTA's headers rewritten after indexing, as a renaming script would.
        fasta = Path(local_path(data.genome_fasta)).read_text().replace(">chr2\n", ">chr2 GRCh37\n")
        shutil.copy(local_path(data.genome_fasta) + ".fai", tmp_path / "genome.fa.fai")
        uri = _write(tmp_path / "genome.fa", fasta)
        offset = check_fasta_index(data.genome_fasta)["chr2"].offset
        reason = (
            f"stale index of {uri} (re-run `samtools faidx`): chr2's offset {offset} does not follow a '>chr2' line"
        )
        return [f"data.genome_fasta={tmp_path / 'genome.fa'}"], uri + ".fai", 2, reason
    if defect == "protein-residue":
        lines = Path(local_path(data.proteins_fasta)).read_text().splitlines(True)
        lines[2] = lines[2][:4] + "J" + lines[2][5:]
        uri = _write(tmp_path / "proteins.fa", "".join(lines))
        reason = "invalid residue 'J' in CTCF at column 5 (allowed: the 20 amino acids and X)"
        return [f"data.proteins_fasta={tmp_path / 'proteins.fa'}"], uri, 3, reason
    if defect == "dnase-beyond-end":
        shutil.copytree(local_path(data.dnase_dir), tmp_path / "dnase")
        path = tmp_path / "dnase" / "DNASE.K562.conservative.narrowPeak.gz"
        lines = gzip.decompress(path.read_bytes()).decode().splitlines(True)
        lines.insert(5, _peak("chr21", 59_990, 60_010))
        uri = _write(path, "".join(lines))
        return [f"data.dnase_dir={tmp_path / 'dnase'}"], uri, 6, "end 60010 is beyond the end of chr21 (60000 bp)"
    if defect == "blacklist-non-integer":
        uri = _write(tmp_path / "blacklist.bed.gz", "chr2\t100\t200\nchr3\t1,000\t2,000\n")
        return [f"data.blacklist={tmp_path / 'blacklist.bed.gz'}"], uri, 2, "start '1,000' is not an integer"
    raise AssertionError(defect)


@pytest.mark.parametrize(
    "defect",
    ["labels-header-only", "fai-missing", "fai-stale", "protein-residue", "dnase-beyond-end", "blacklist-non-integer"],
)
def test_preprocess_inputs_refuse_a_broken_copy(small_dataset, tmp_path, defect):
    overrides, uri, line, reason = _broken_copy(small_dataset, tmp_path, defect)
    config = small_config(tmp_path, f"data.root={local_path(small_dataset.data.root)}", "data.tfs=[CTCF]", *overrides)
    if defect == "fai-missing":
        with pytest.raises(MissingInputError, match=r"genome\.fa\.fai: genome FASTA index"):
            check_preprocess_inputs(config.data)
        return
    with pytest.raises(BadInputError) as err:
        check_preprocess_inputs(config.data)
    assert str(err.value) == f"{uri}:{line}: {reason}"


def _tfbs_preprocess(root: str, tmp_path: Path, *overrides: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "jobs.cli", "preprocess", "--config", str(DEMO_CONFIG)]
        + [f"--set={o}" for o in (f"data.root={root}", f"run_dir={tmp_path / 'run'}", "data.tfs=[CTCF]", *overrides)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.parametrize("defect", ["labels-header-only", "fai-stale"])
def test_cli_refuses_before_spark_in_one_line(small_dataset, tmp_path, defect):
    overrides, uri, line, reason = _broken_copy(small_dataset, tmp_path, defect)
    run = _tfbs_preprocess(local_path(small_dataset.data.root), tmp_path, *overrides)
    assert run.returncode == 2
    assert run.stderr.strip().splitlines()[-1] == f"error: {uri}:{line}: {reason}"
    assert "SparkContext" not in run.stderr and "Traceback" not in run.stderr


def _with_duplicate(dataset, tmp_path: Path) -> tuple[str, int, str, int]:
    """CTCF's labels with one chr2 row repeated; returns the labels dir, the repeat's line and reason, and the rows."""
    source = gzip.decompress(Path(local_path(dataset.data.labels_uri("CTCF"))).read_bytes()).decode()
    lines = source.splitlines(True)
    first_chr2 = next(i for i, line in enumerate(lines) if line.startswith("chr2\t"))
    position = first_chr2 + 7
    lines.insert(position + 1, lines[position])
    chrom, start = lines[position].split("\t")[:2]
    (tmp_path / "labels").mkdir()
    _write(tmp_path / "labels" / "CTCF.train.labels.tsv.gz", "".join(lines))
    return str(tmp_path / "labels"), position + 2, f"duplicate of line {position + 1} ({chrom} {start})", len(lines) - 1


@pytest.mark.spark  # in a subprocess: the marker is not inferred from fixtures
def test_cli_duplicate_row_fails_in_spark_with_one_line(small_dataset, tmp_path):
    labels_dir, line, reason, _ = _with_duplicate(small_dataset, tmp_path)
    run = _tfbs_preprocess(local_path(small_dataset.data.root), tmp_path, f"data.labels_dir={labels_dir}")
    assert run.returncode == 2
    uri = f"file://{labels_dir}/CTCF.train.labels.tsv.gz"
    assert run.stderr.strip().splitlines()[-1] == f"error: {uri}:{line}: {reason}"
    # The task's traceback stays in Spark's log, above the one line.
    assert "Traceback (most recent call last)" in run.stderr and "label_reader.py" in run.stderr
    assert not list(tmp_path.glob("run/shards*"))


def test_duplicate_row_set_aside_is_counted_in_the_manifest(spark, small_dataset, tmp_path):
    from preprocess.build_shards import build_shards

    labels_dir, line, reason, n_rows = _with_duplicate(small_dataset, tmp_path)
    config = small_config(
        tmp_path,
        f"data.root={local_path(small_dataset.data.root)}",
        f"data.labels_dir={labels_dir}",
        "data.tfs=[CTCF]",
        "preprocess.bad_rows=set_aside",
    )
    manifest = build_shards(spark, config)
    assert manifest.inputs["CTCF"].input_rows == n_rows
    assert [entry.model_dump() for entry in manifest.inputs["CTCF"].rejected] == [{"line": line, "reason": reason}]
    for outcomes in manifest.counts["CTCF"].values():
        assert outcomes.rejected_bad_line == 1 and outcomes.total() == n_rows


# --------------------------------------------------------------------------
# Properties: generated label and peak files, valid or with one defect
# --------------------------------------------------------------------------

LABEL_CHROMS = ["chr1", "chr2", "chr3"]
#: Few examples, no example database (nothing written into the checkout).
PROPERTY = settings(max_examples=40, deadline=None, database=None)


@st.composite
def label_rows(draw) -> list[str]:
    """A valid label file's data lines: chromosomes in any order, rising starts, gaps allowed."""
    chroms = draw(st.permutations(LABEL_CHROMS).map(lambda c: c[: draw(st.integers(1, 3))]))
    rows = []
    for chrom in chroms:
        bins = draw(st.lists(st.integers(0, 60), min_size=1, max_size=25, unique=True))
        for b in sorted(bins):
            labels = draw(st.lists(st.sampled_from("UBA"), min_size=2, max_size=2))
            rows.append(f"{chrom}\t{b * 50}\t{b * 50 + 200}\t{labels[0]}\t{labels[1]}\n")
    return rows


def _read_label_text(text: str, bad_rows: str, block_bytes: int) -> tuple[list[LabelPiece], ReadReport]:
    with tempfile.TemporaryDirectory() as tmp:
        uri = _write(Path(tmp) / "CTCF.train.labels.tsv.gz", text)
        items = list(read_label_file(uri, ["HepG2", "K562"], LABEL_CHROMS, bad_rows, block_bytes))
    assert isinstance(items[-1], ReadReport)
    return [item for item in items if isinstance(item, LabelPiece)], items[-1]


@PROPERTY
@given(rows=label_rows(), block_bytes=st.integers(40, 400))
def test_valid_label_file_accounts_for_every_row(rows, block_bytes):
    pieces, report = _read_label_text(LABEL_HEADER + "".join(rows), "fail", block_bytes)
    assert report.n_rows == len(rows) and report.rejected == []
    got = sorted((piece.chrom, int(start)) for piece in pieces for start in piece.starts)
    assert got == sorted((row.split("\t")[0], int(row.split("\t")[1])) for row in rows)


def _off_grid(row: str) -> tuple[str, str]:
    chrom, start, stop, rest = row.split("\t", 3)
    return f"{chrom}\t{int(start) + 10}\t{int(stop) + 10}\t{rest}", f"start {int(start) + 10} is not on the 50 bp grid"


#: Defects a row can get: the bad row and the reason it is refused or set aside with.
ROW_DEFECTS: dict[str, Callable[[str], tuple[str, str]]] = {
    "label": lambda row: (row[:-2] + "Q\n", "unknown label 'Q' (expected U, B or A)"),
    "columns": lambda row: (row.rsplit("\t", 1)[0] + "\n", "expected 5 columns, found 4"),
    "chromosome": lambda row: ("chrUn" + row[row.index("\t") :], "chromosome 'chrUn' is not in the genome FASTA"),
    "off-grid": _off_grid,
}


@PROPERTY
@given(
    rows=label_rows(),
    where=st.floats(0, 1, exclude_max=True),
    defect=st.sampled_from([*ROW_DEFECTS, "duplicate"]),
    bad_rows=st.sampled_from(["fail", "set_aside"]),
    block_bytes=st.integers(40, 400),
)
def test_one_bad_row_is_named_or_set_aside(rows, where, defect, bad_rows, block_bytes):
    position = int(where * len(rows))
    if defect == "duplicate":
        row = rows[position]
        rows.insert(position + 1, row)
        chrom, start = row.split("\t")[:2]
        line, reason = position + 3, f"duplicate of line {position + 2} ({chrom} {start})"
    else:
        rows[position], reason = ROW_DEFECTS[defect](rows[position])
        line = position + 2
    text = LABEL_HEADER + "".join(rows)
    if bad_rows == "fail":
        with pytest.raises(BadInputError) as err:
            _read_label_text(text, bad_rows, block_bytes)
        assert (err.value.line, err.value.reason) == (line, reason)
        return
    pieces, report = _read_label_text(text, bad_rows, block_bytes)
    assert report.n_rows == len(rows) and report.rejected == [(line, reason)]
    assert sum(len(piece.starts) for piece in pieces) == len(rows) - 1


@PROPERTY
@given(rows=label_rows(), where=st.floats(0, 1, exclude_max=True), bad_rows=st.sampled_from(["fail", "set_aside"]))
def test_a_start_stepping_back_is_refused_there(rows, where, bad_rows):
    neighbours = [i for i in range(len(rows) - 1) if rows[i].split("\t")[0] == rows[i + 1].split("\t")[0]]
    assume(neighbours)
    position = neighbours[int(where * len(neighbours))]
    rows[position], rows[position + 1] = rows[position + 1], rows[position]
    with pytest.raises(BadInputError, match=r":\d+: unsorted: ") as err:
        _read_label_text(LABEL_HEADER + "".join(rows), bad_rows, 64)
    assert err.value.line == position + 3


@PROPERTY
@given(
    rows=label_rows(),
    which=st.floats(0, 1, exclude_max=True),
    where=st.floats(0, 1, exclude_max=True),
    bad_rows=st.sampled_from(["fail", "set_aside"]),
    block_bytes=st.integers(40, 400),
)
def test_a_chromosome_resuming_is_refused_there(rows, which, where, bad_rows, block_bytes):
    first_chrom = rows[0].split("\t")[0]
    n_first = sum(row.split("\t")[0] == first_chrom for row in rows)
    assume(2 <= n_first < len(rows))
    # One of the first chromosome's rows moves past a row of the next one.
    moved = rows.pop(int(which * n_first))
    position = n_first + int(where * (len(rows) - n_first + 1))
    rows.insert(position, moved)
    with pytest.raises(BadInputError, match=rf":\d+: unsorted: {first_chrom} rows resume after") as err:
        _read_label_text(LABEL_HEADER + "".join(rows), bad_rows, block_bytes)
    assert err.value.line == position + 2


PEAK_SIZES = {"chr1": 5_000, "chr2": 3_000, "chrX": 4_000}


@st.composite
def peak_lines(draw) -> list[str]:
    lines = []
    for _ in range(draw(st.integers(1, 30))):
        chrom = draw(st.sampled_from(sorted(PEAK_SIZES)))
        start = draw(st.integers(0, PEAK_SIZES[chrom] - 1))
        end = draw(st.integers(start + 1, PEAK_SIZES[chrom]))
        lines.append(_peak(chrom, start, end))
    return lines


#: Defects a peak line can get: ``(chrom, start, end) -> bad line``, and the reason's template.
PEAK_DEFECTS: dict[str, tuple[Callable[[str, int, int], str], str]] = {
    "columns": (lambda c, s, e: _peak(c, s, e, columns=8), "expected 10 columns as on line {first}, found 8"),
    "short": (lambda c, s, e: f"{c}\t{s}\n", "expected at least 3 tab-separated columns, found 2"),
    "non-integer": (lambda c, s, e: _peak(c, f"{s}.5", e), "start '{s}.5' is not an integer"),
    "negative": (lambda c, s, e: _peak(c, -s - 1, e), "start {negative} is negative"),
    "reversed": (lambda c, s, e: _peak(c, e, s), "start {e} is not before end {s}"),
    "chromosome": (lambda c, s, e: _peak("chrM", s, e), "chromosome 'chrM' is not in the genome"),
    "beyond-end": (lambda c, s, e: _peak(c, s, PEAK_SIZES[c] + 1), "end {beyond} is beyond the end of {c} ({size} bp)"),
}


@PROPERTY
@given(lines=peak_lines(), gz=st.booleans(), header=st.booleans())
def test_valid_peak_file_gives_every_interval(lines, gz, header):
    with tempfile.TemporaryDirectory() as tmp:
        uri = _write(Path(tmp) / ("p.narrowPeak.gz" if gz else "p.narrowPeak"), "track x\n" * header + "".join(lines))
        intervals = read_bed(uri, PEAK_SIZES)
    got = sorted((chrom, int(s), int(e)) for chrom, (starts, ends) in intervals.items() for s, e in zip(starts, ends))
    assert got == sorted((f[0], int(f[1]), int(f[2])) for f in (line.split("\t") for line in lines))


@PROPERTY
@given(
    lines=peak_lines(),
    where=st.floats(0, 1, exclude_max=True),
    defect=st.sampled_from(sorted(PEAK_DEFECTS)),
    gz=st.booleans(),
    header=st.booleans(),
)
def test_one_bad_peak_line_is_named(lines, where, defect, gz, header):
    if defect == "columns":
        lines.insert(0, _peak("chr1", 0, 10))  # the first interval line sets the column count
    position = max(int(where * len(lines)), 1 if defect == "columns" else 0)
    chrom, s, e = lines[position].split("\t")[:3]
    start, end = int(s), int(e)
    make_bad, template = PEAK_DEFECTS[defect]
    lines[position] = make_bad(chrom, start, end)
    size = PEAK_SIZES[chrom]
    reason = template.format(first=1 + header, s=start, e=end, negative=-start - 1, beyond=size + 1, c=chrom, size=size)
    with tempfile.TemporaryDirectory() as tmp:
        uri = _write(Path(tmp) / ("p.narrowPeak.gz" if gz else "p.narrowPeak"), "track x\n" * header + "".join(lines))
        with pytest.raises(BadInputError) as err:
            read_bed(uri, PEAK_SIZES)
    assert (err.value.uri, err.value.line, err.value.reason) == (uri, position + 1 + header, reason)


# --------------------------------------------------------------------------
# Properties: generated MEME motif files, valid or with one mangled line
# --------------------------------------------------------------------------


@st.composite
def meme_files(draw) -> tuple[list[str], dict[str, np.ndarray], list[int]]:
    """A MEME file's lines, its matrices as written (6 decimals, rows summing to 1) and its row lines (1-based)."""
    lines = list(MEME_HEAD)
    matrices: dict[str, np.ndarray] = {}
    row_lines: list[int] = []
    for number in range(draw(st.integers(1, 4))):
        width = draw(st.integers(1, 8))
        weights = draw(st.lists(st.lists(st.integers(0, 1000), min_size=4, max_size=4), min_size=width, max_size=width))
        rows = np.array([[w + (i == 0 and not sum(row)) for i, w in enumerate(row)] for row in weights], dtype=float)
        rows = np.round(rows / rows.sum(axis=1, keepdims=True), 6)
        name = f"M{number}_f1"
        lines += [f"MOTIF {name} M{number}", "", f"letter-probability matrix: alength= 4 w= {width} nsites= 20 E= 0"]
        for row in rows:
            row_lines.append(len(lines) + 1)
            lines.append(" ".join(f"{value:.6f}" for value in row))
        lines += ["", f"URL http://example.org/{name}", ""]
        matrices[name] = rows
    return lines, matrices, row_lines


def _read_meme_lines(lines: list[str] | bytes) -> dict[str, np.ndarray]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "motifs.meme"
        path.write_bytes(lines if isinstance(lines, bytes) else ("\n".join(lines) + "\n").encode())
        return read_meme(str(path))


@PROPERTY
@given(meme=meme_files())
def test_valid_motif_file_gives_every_matrix(meme):
    lines, matrices, _ = meme
    got = _read_meme_lines(lines)
    assert list(got) == list(matrices)
    for name, matrix in matrices.items():
        np.testing.assert_allclose(got[name], matrix / matrix.sum(axis=1, keepdims=True), atol=1e-12)


#: Defects a matrix row can get: ``fields -> (bad line, reason)``.
MOTIF_ROW_DEFECTS: dict[str, Callable[[list[str]], tuple[str, str]]] = {
    "not-a-number": lambda f: (" ".join([f[0], f[1] + "x", *f[2:]]), f"{f[1] + 'x'!r} is not a number"),
    "columns": lambda f: (" ".join(f[:3]), "expected 4 columns, found 3"),
    "extra-column": lambda f: (" ".join([*f, "0.0"]), "expected 4 columns, found 5"),
    "zeros": lambda f: ("0 0 0 0", "every probability of the row is 0"),
    "negative": lambda f: (" ".join(["-0.5", *f[1:]]), "'-0.5' is not a probability (0 to 1)"),
    "above-one": lambda f: (" ".join(["1.5", *f[1:]]), "'1.5' is not a probability (0 to 1)"),
    "inf": lambda f: (" ".join(["inf", *f[1:]]), "'inf' is not a probability (0 to 1)"),
    "half": lambda f: ("0.125 0.125 0.125 0.125", "the row sums to 0.5, not 1"),
    "blank": lambda f: ("", "expected 4 columns, found 0"),
}


@PROPERTY
@given(meme=meme_files(), where=st.floats(0, 1, exclude_max=True), defect=st.sampled_from(sorted(MOTIF_ROW_DEFECTS)))
def test_one_mangled_matrix_row_is_named(meme, where, defect):
    lines, matrices, row_lines = meme
    line = row_lines[int(where * len(row_lines))]
    lines[line - 1], reason = MOTIF_ROW_DEFECTS[defect](lines[line - 1].split())
    motif = next(text.split()[1] for text in reversed(lines[:line]) if text.startswith("MOTIF"))
    with pytest.raises(BadInputError) as err:
        _read_meme_lines(lines)
    assert (err.value.line, err.value.reason) == (line, f"motif {motif}: {reason}")


@PROPERTY
@given(meme=meme_files(), where=st.floats(0, 1, exclude_max=True), junk=st.binary(max_size=40))
def test_any_mangled_line_is_read_or_refused_at_a_line(meme, where, junk):
    """Whatever replaces a line, the reader returns motifs or names a line of the file: never another exception."""
    lines, _, _ = meme
    position = int(where * len(lines))
    encoded = [line.encode() for line in lines]
    encoded[position] = junk.replace(b"\n", b" ").replace(b"\r", b" ")
    try:
        _read_meme_lines(b"\n".join(encoded) + b"\n")
    except BadInputError as err:
        assert 0 < err.line <= len(lines) and "\n" not in str(err)
