"""The generator's realistic profile: partners expressed in some cells, binding outside DNase peaks, a structured background."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from synthetic.background import deplete_cpg
from synthetic.generate import generate_dataset
from tfbs.config import DataConfig, GenerateConfig, TFSpec
from tfbs.config.profile import PartnerSpec, RealisticConfig
from tfbs.errors import BadInputError, ConfigError
from tfbs.formats.expression import cell_expression, read_expression

ROOT = Path(__file__).resolve().parents[2]
MEME = ROOT / "data" / "dream" / "annotations" / "HOCOMOCOv9.meme"
CELLS = ["GM12878", "HepG2", "K562"]
SIZES = {"chr1": 150_000, "chr2": 400_000, "chr8": 60_000, "chr11": 60_000, "chr21": 60_000}
PARTNERS = [
    PartnerSpec(name="HNF4A", motif="HNF4A_f1", expressed_in=["HepG2"]),
    PartnerSpec(name="GATA1", motif="GATA1_si", expressed_in=["K562"]),
]


def _configs(root: Path, seed: int = 5, **changes) -> tuple[GenerateConfig, DataConfig]:
    gen = GenerateConfig(
        seed=seed,
        motif_db=str(MEME),
        chromosomes=SIZES,
        profile="realistic",
        realistic=RealisticConfig(**{"partners": PARTNERS, **changes}),
        tfs=[
            TFSpec(name="CTCF", motif="CTCF_f2", family="zf-ctcf"),
            TFSpec(name="FOXA1", motif="FOXA1_f1", family="forkhead", partners=["HNF4A", "GATA1"]),
        ],
        cells=CELLS,
        sites_per_mb=85.0,
        open_fraction=0.6,
        motifless_bound_fraction=0.3,
        blacklist_regions=1,
    )
    return gen, DataConfig(root=str(root), tfs=["CTCF", "FOXA1"])


@pytest.fixture(scope="module")
def realistic(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("realistic")
    gen, data = _configs(root)
    return root, generate_dataset(gen, data)


def test_a_partner_binds_its_sites_only_where_it_is_expressed(realistic) -> None:
    _, summary = realistic
    foxa1 = summary["tfs"]["FOXA1"]["cells"]
    # GM12878 expresses neither partner: its FOXA1 sites that need one stay (nearly) unbound.
    partnered = {cell: foxa1[cell]["bound_through_partner"] for cell in CELLS}
    assert partnered["HepG2"] > 5 * max(partnered["GM12878"], 1)
    assert partnered["K562"] > 5 * max(partnered["GM12878"], 1)
    # CTCF names no partner: none of its sites binds through one.
    assert all(summary["tfs"]["CTCF"]["cells"][cell]["bound_through_partner"] == 0 for cell in CELLS)
    assert summary["genome"]["partners"] == {"HNF4A": ["HepG2"], "GATA1": ["K562"]}


def test_some_bound_sites_lie_outside_dnase_peaks(realistic) -> None:
    _, summary = realistic
    closed = sum(f["bound_closed"] for tf in summary["tfs"].values() for f in tf["cells"].values())
    bound = sum(f["bound_sites"] for tf in summary["tfs"].values() for f in tf["cells"].values())
    # ENCODE 2012: 94.4-98.5 % of TF ChIP-seq peaks lie in DNase I hypersensitive sites.
    assert 0.01 < closed / bound < 0.12


def test_rnaseq_files_are_rsem_tables_that_tell_the_partners_cells(realistic) -> None:
    root, _ = realistic
    first = root / "rnaseq" / "gene_expression.HepG2.biorep1.tsv"
    assert first.read_text().splitlines()[0].split("\t") == [
        "gene_id",
        "transcript_id(s)",
        "length",
        "effective_length",
        "expected_count",
        "TPM",
        "FPKM",
    ]
    levels = {
        cell: cell_expression(
            [str(root / "rnaseq" / f"gene_expression.{cell}.biorep{r}.tsv") for r in (1, 2)],
            ["HNF4A", "GATA1", "FOXA1"],
        )
        for cell in CELLS
    }
    # log2(1 + TPM): an expressed partner around 20 TPM (4.4), an absent one around 0.2 (0.26).
    assert levels["HepG2"][0] > 2.5 > levels["K562"][0] and levels["HepG2"][0] > 2.5 > levels["GM12878"][0]
    assert levels["K562"][1] > 2.5 > levels["HepG2"][1]
    assert all(levels[cell][2] > 2.5 for cell in CELLS)  # the TFs bind everywhere: expressed everywhere


def test_cpg_islands_are_gc_rich_in_a_cpg_depleted_genome(realistic) -> None:
    root, summary = realistic
    assert summary["genome"]["cpg_islands"] > 0
    text = "".join(
        line.strip() for line in (root / "genome" / "genome.fa").read_text().splitlines() if not line.startswith(">")
    )
    bases = np.frombuffer(text.encode(), np.uint8)
    acgt = bases[bases != ord("N")]
    cpg = np.count_nonzero((acgt[:-1] == ord("C")) & (acgt[1:] == ord("G")))
    c, g = np.count_nonzero(acgt == ord("C")), np.count_nonzero(acgt == ord("G"))
    observed_over_expected = cpg * acgt.shape[0] / (c * g)
    # Bulk DNA holds about a quarter of the CpG its G+C predicts; islands (~1 %) lift the genome's ratio a little.
    assert 0.2 < observed_over_expected < 0.45


def test_deplete_cpg_removes_most_cpg() -> None:
    codes = np.random.default_rng(0).integers(0, 4, 100_000).astype(np.uint8)
    before = np.count_nonzero((codes[:-1] == 1) & (codes[1:] == 2))
    deplete_cpg(codes, np.random.default_rng(1))
    after = np.count_nonzero((codes[:-1] == 1) & (codes[1:] == 2))
    assert 0.2 < after / before < 0.35


def test_the_same_seed_writes_the_same_realistic_data(realistic, tmp_path: Path) -> None:
    root, _ = realistic
    gen, data = _configs(tmp_path)
    generate_dataset(gen, data)
    for name in ("genome/genome.fa", "labels/FOXA1.train.labels.tsv.gz", "rnaseq/gene_expression.K562.biorep2.tsv"):
        assert (root / name).read_bytes() == (tmp_path / name).read_bytes(), name


def test_partners_are_checked_on_load(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"tfs\[FOXA1\].partners: \['SP1'\] not in realistic.partners"):
        GenerateConfig(
            motif_db=str(MEME),
            chromosomes=SIZES,
            profile="realistic",
            realistic=RealisticConfig(partners=PARTNERS),
            tfs=[TFSpec(name="FOXA1", motif="FOXA1_f1", family="forkhead", partners=["SP1"])],
            cells=CELLS,
        )
    with pytest.raises(ValueError, match=r"partners act only in profile: realistic"):
        GenerateConfig(
            motif_db=str(MEME),
            chromosomes=SIZES,
            tfs=[TFSpec(name="FOXA1", motif="FOXA1_f1", family="forkhead", partners=["HNF4A"])],
            cells=CELLS,
            realistic=RealisticConfig(partners=PARTNERS),
        )
    gen, data = _configs(tmp_path, partners=[PartnerSpec(name="HNF4A", motif="HNF4A_nope"), PARTNERS[1]])
    with pytest.raises(ConfigError, match=r"generate.realistic.partners\[HNF4A\].motif: 'HNF4A_nope' not in"):
        generate_dataset(gen, data)


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ("gene_id\tFPKM\nA\t1\n", 1, "header lacks ['TPM'] (an RSEM genes.results table has them)"),
        ("gene_id\tTPM\nA\tlots\n", 2, "TPM 'lots' is not a number"),
        ("gene_id\tTPM\nA\t-1\n", 2, "TPM -1 is not a finite number >= 0"),
        ("gene_id\tTPM\nA\t1\nB\n", 3, "1 fields, the header has 2"),
        ("gene_id\tTPM\nA\t1\nA\t2\n", 3, "gene A listed twice"),
    ],
)
def test_a_bad_expression_file_is_refused_at_its_line(tmp_path: Path, text: str, line: int, reason: str) -> None:
    path = tmp_path / "gene_expression.X.biorep1.tsv"
    path.write_text(text)
    with pytest.raises(BadInputError) as caught:
        read_expression(str(path))
    assert (caught.value.line, caught.value.reason) == (line, reason)


def test_a_gene_missing_from_an_expression_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "rep1.tsv"
    path.write_text("gene_id\tTPM\nA\t1\n")
    with pytest.raises(BadInputError, match=r"no line for gene\(s\) \['HNF4A'\]"):
        cell_expression([str(path)], ["A", "HNF4A"])


def test_gzip_is_not_needed_for_expression(tmp_path: Path) -> None:
    """RSEM writes plain text; a gzipped copy reads the same (the storage layer opens either)."""
    plain = tmp_path / "rep1.tsv"
    plain.write_text("gene_id\tTPM\nA\t3\n")
    packed = tmp_path / "rep1.tsv.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert read_expression(str(plain)) == read_expression(str(packed)) == {"A": 3.0}
