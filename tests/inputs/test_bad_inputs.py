"""Every bad input file is refused in one line naming file, line and reason: one case per input kind and
defect (labels, peaks, chromosome sizes, the genome, motifs, proteins, the configuration)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from bad_input_files import LABEL_HEADER, MEME_HEAD, label_file, peak_line, write_file
from conftest import DEMO_CONFIG, REPO

from preprocess.inputs import check_preprocess_inputs, read_label_cells
from preprocess.label_reader import read_label_file
from tf_models.predict import _parse_regions
from tfbs.config import DataConfig, load_config
from tfbs.errors import BadInputError, ConfigError
from tfbs.formats.bed import read_bed
from tfbs.formats.dream import read_chrom_sizes, read_dnase_peaks
from tfbs.formats.genome import check_fasta_index, load_chromosome, read_fai
from tfbs.formats.labels import check_peak_files
from tfbs.formats.motifs import read_meme
from tfbs.formats.proteins import read_protein_fasta
from tfbs.storage import local_path

SIZES = {"chr1": 10_000, "chr2": 5_000}
SORT = "sort -k1,1 -k2,2n"


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


def _read_labels(uri: str, bad_rows: str = "fail", block_bytes: int = 1 << 16) -> list:
    return list(read_label_file(uri, ["HepG2", "K562"], list(SIZES), bad_rows, block_bytes))


def _genome(tmp: Path, fasta: str, fai: str) -> str:
    (tmp / "genome.fa.fai").write_text(fai)
    return write_file(tmp / "genome.fa", fasta)


#: (id, write the input and return its URI, read it, file named in the error
#: as a suffix of the input's URI, line, reason).
Case = tuple[str, Callable[[Path], str], Callable[[str], object], str, int, str]
CASES: list[Case] = [
    # label files: the header alone, a repeated bin, rows out of order
    ("labels-header-only", lambda t: label_file(t, ""), _read_labels, "", 1, "header but no data rows"),
    ("labels-header-only-driver", lambda t: label_file(t, ""), read_label_cells, "", 1, "header but no data rows"),
    (
        "labels-duplicate",
        lambda t: label_file(t, "chr1\t0\t200\tU\tU\nchr1\t50\t250\tU\tB\nchr1\t50\t250\tU\tB\n"),
        _read_labels,
        "",
        4,
        "duplicate of line 3 (chr1 50)",
    ),
    (
        "labels-unsorted",
        lambda t: label_file(t, "chr1\t0\t200\tU\tU\nchr1\t100\t300\tU\tU\nchr1\t50\t250\tU\tU\n"),
        _read_labels,
        "",
        4,
        f"unsorted: chr1 50 after chr1 100 on line 3 (sort by chromosome, then start: {SORT})",
    ),
    (
        "labels-chromosome-resumes",
        lambda t: label_file(t, "chr1\t0\t200\tU\tU\nchr2\t0\t200\tU\tU\nchr1\t50\t250\tU\tU\n"),
        _read_labels,
        "",
        4,
        f"unsorted: chr1 rows resume after those of chr2 (each chromosome's rows must be together: {SORT})",
    ),
    # narrowPeak (ChIP-seq and DNase peaks): gzipped, a track line first, the bad line third
    *[
        (
            f"peaks-{name}",
            lambda t, bad=bad: write_file(t / "p.narrowPeak.gz", "track name=p\n" + peak_line("chr1", 10, 90) + bad),
            lambda uri: read_bed(uri, SIZES),
            "",
            3,
            reason,
        )
        for name, bad, reason in [
            ("two-columns", "chr1\t100\n", "expected at least 3 tab-separated columns, found 2"),
            ("column-count", peak_line("chr1", 100, 200, columns=9), "expected 10 columns as on line 2, found 9"),
            ("non-integer", peak_line("chr1", "1e3", 2000), "start '1e3' is not an integer"),
            ("negative", peak_line("chr2", -5, 20), "start -5 is negative"),
            ("empty-interval", peak_line("chr1", 500, 500), "start 500 is not before end 500"),
            ("reversed", peak_line("chr1", 600, 500), "start 600 is not before end 500"),
            ("unknown-chromosome", peak_line("chrUn", 1, 20), "chromosome 'chrUn' is not in the genome"),
            ("beyond-end", peak_line("chr2", 4900, 5100), "end 5100 is beyond the end of chr2 (5000 bp)"),
        ]
    ],
    # DNase peaks are read with their summits, which must lie inside the peak
    (
        "dnase-summit-outside",
        lambda t: write_file(t / "d.narrowPeak.gz", peak_line("chr1", 10, 200) + peak_line("chr1", 300, 350)),
        lambda uri: read_dnase_peaks(uri, SIZES),
        "",
        2,
        "summit offset 80 is outside the peak (50 bp)",
    ),
    # ChIP-seq peaks for `tfbs labels`: lines on chromosomes without bins are
    # ignored (hg19.autoX has no chrY), but not all of them
    (
        "chip-peaks-beyond-end",
        lambda t: write_file(t / "c.narrowPeak.gz", peak_line("chrY", 5, 90) + peak_line("chr2", 4000, 5001)),
        lambda uri: check_peak_files({"K562": (uri, uri)}, SIZES, None),
        "",
        2,
        "end 5001 is beyond the end of chr2 (5000 bp)",
    ),
    (
        "chip-peaks-other-naming",
        lambda t: write_file(t / "c.narrowPeak.gz", peak_line("1", 5, 90) + peak_line("2", 0, 10)),
        lambda uri: check_peak_files({"K562": (uri, uri)}, SIZES, None),
        "",
        1,
        "chromosome '1' is not in the genome, nor is any other chromosome of this file (named another way?)",
    ),
    # the blacklist: lines elsewhere or past a chromosome's end exclude nothing,
    # but its lines must still be intervals, and some on this genome
    (
        "blacklist-reversed",
        lambda t: write_file(t / "bl.bed.gz", "chrY\t0\t99\nchr1\t9000\t20000\nchr1\t300\t200\n"),
        lambda uri: read_bed(uri, SIZES, unknown_chroms="skip", past_end="allow"),
        "",
        3,
        "start 300 is not before end 200",
    ),
    (
        "blacklist-other-naming",
        lambda t: write_file(t / "bl.bed.gz", "1\t0\t99\n2\t0\t10\n"),
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
        lambda t: write_file(t / "p.fa", ">CTCF zf\nMEGDAVEAIV\nEESETFIK*\n"),
        read_protein_fasta,
        "",
        3,
        "invalid residue '*' in CTCF at column 9 (allowed: the 20 amino acids and X)",
    ),
    (
        "protein-ambiguity-code",
        lambda t: write_file(t / "p.fa", ">CTCF\nMEGDBVEAIV\n"),
        read_protein_fasta,
        "",
        2,
        "invalid residue 'B' in CTCF at column 5 (allowed: the 20 amino acids and X)",
    ),
    (
        "protein-text-before-header",
        lambda t: write_file(t / "p.fa", "MEGDAV\n>CTCF\nMEGDAV\n"),
        read_protein_fasta,
        "",
        1,
        "sequence before the first '>' header",
    ),
    (
        "protein-empty-sequence",
        lambda t: write_file(t / "p.fa", ">CTCF\n\n>EGR1\nMAAAK\n"),
        read_protein_fasta,
        "",
        1,
        "protein 'CTCF' has no sequence",
    ),
    (
        "protein-empty-last-sequence",
        lambda t: write_file(t / "p.fa", ">CTCF\nMAAAK\n>EGR1\n"),
        read_protein_fasta,
        "",
        3,
        "protein 'EGR1' has no sequence",
    ),
    (
        "protein-duplicate-name",
        lambda t: write_file(t / "p.fa", ">CTCF a\nMAAAK\n>CTCF b\nMAAAK\n"),
        read_protein_fasta,
        "",
        3,
        "protein 'CTCF' named twice (first on line 1)",
    ),
    (
        "protein-nameless-header",
        lambda t: write_file(t / "p.fa", ">\nMAAAK\n"),
        read_protein_fasta,
        "",
        1,
        "header without a name",
    ),
    # chromosome sizes
    (
        "sizes-malformed",
        lambda t: write_file(t / "g.sizes", "chr1\t1000\nchr2\n"),
        read_chrom_sizes,
        "",
        2,
        "expected 'chrom<TAB>size', found 'chr2'",
    ),
    (
        "sizes-non-integer",
        lambda t: write_file(t / "g.sizes", "chr1\t1.5e6\n"),
        read_chrom_sizes,
        "",
        1,
        "size '1.5e6' of chr1 is not a positive integer",
    ),
    (
        "sizes-zero",
        lambda t: write_file(t / "g.sizes", "chr1\t0\n"),
        read_chrom_sizes,
        "",
        1,
        "size '0' of chr1 is not a positive integer",
    ),
    (
        "sizes-duplicate",
        lambda t: write_file(t / "g.sizes", "chr1\t1000\nchr2\t50\nchr1\t1000\n"),
        read_chrom_sizes,
        "",
        3,
        "chr1 is listed twice (first on line 1)",
    ),
    (
        "sizes-empty",
        lambda t: write_file(t / "g.sizes", "\n"),
        read_chrom_sizes,
        "",
        1,
        "no chromosome sizes (the file is empty)",
    ),
    # predict's regions (lines as Spark's textFile().zipWithIndex() gives them)
    *[
        (
            f"regions-{name}",
            lambda t, bad=bad: write_file(t / "regions.bed", "chr1\t0\t200\n" + bad + "\n"),
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
MEME_ROWS = ["0.100000 0.200000 0.300000 0.400000", "0.25 0.25 0.25 0.25", "0.700000 0.100000 0.100000 0.100000"]


def _meme_lines(rows: list[str] = MEME_ROWS, header: str = "alength= 4 w= 3 nsites= 20 E= 0") -> list[str]:
    """MEME_HEAD, then the motif CTCF_f2: its MOTIF line is 7, its matrix header 9, its rows from 10."""
    return [*MEME_HEAD, "MOTIF CTCF_f2 CTCF", "", f"letter-probability matrix: {header}", *rows, ""]


def _write_bytes(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return f"file://{path}"


def _meme(tmp: Path, lines: list[str], name: str = "motifs.meme") -> str:
    return write_file(tmp / name, "\n".join(lines) + "\n")


def _row(replacement: str, at: int = 1) -> list[str]:
    """:data:`MEME_ROWS` with row ``at`` (line ``10 + at``) replaced."""
    return [replacement if i == at else row for i, row in enumerate(MEME_ROWS)]


def _data_config(tmp: Path, labels: str, cells: list[str]) -> DataConfig:
    """A data section over a tiny genome, one TF's proteins and ``labels``; no DNase, no blacklist."""
    _genome(tmp, _fasta_text(GENOME), _fai_text(GENOME))
    write_file(tmp / "p.fa", ">CTCF\nMEGDAV\n")
    (tmp / "labels").mkdir(exist_ok=True)
    write_file(tmp / "labels" / "CTCF.train.labels.tsv.gz", labels)
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
    labels = label_file(tmp_path, "chr2\t0\t200\tU\tB\nchr1\t0\t200\tU\tU\nchr1\t100\t300\tA\tU\n")
    assert _read_labels(labels)[-1].n_rows == 3
    peaks = write_file(
        tmp_path / "p.gz", "# comment\n\n" + peak_line("chr1", 0, 10_000) + peak_line("chr2", 5, 6) + "\r\n"
    )
    assert {chrom: (s.tolist(), e.tolist()) for chrom, (s, e) in read_bed(peaks, SIZES).items()} == {
        "chr1": ([0], [10_000]),
        "chr2": ([5], [6]),
    }
    chip = write_file(tmp_path / "c.narrowPeak.gz", peak_line("chrY", 5, 90) + peak_line("chr2", 10, 20))
    assert list(read_bed(chip, SIZES, unknown_chroms="skip")) == ["chr2"]
    blacklist = write_file(tmp_path / "bl.bed", "chrUn_gl000220\t0\t99\nchr2\t10\t9000\n")
    assert list(read_bed(blacklist, SIZES, unknown_chroms="skip", past_end="allow")) == ["chr2"]
    genome = _genome(tmp_path, "\n" + _fasta_text(GENOME) + "\n", _fai_text(GENOME, lead=1))
    assert {name: entry.length for name, entry in check_fasta_index(genome).items()} == {"chr1": 160, "chr2": 140}
    proteins = write_file(tmp_path / "p.fa", ">CTCF zf\nmegdavX\n\n>EGR1\nMAAAK\n")
    assert read_protein_fasta(proteins) == {"CTCF": "MEGDAVX", "EGR1": "MAAAK"}
    assert read_chrom_sizes(write_file(tmp_path / "g.sizes", "chr1 1000 extra\nchr2\t50\n")) == {
        "chr1": 1000,
        "chr2": 50,
    }


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
