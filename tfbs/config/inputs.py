"""Where the inputs are and how Spark sessions are built: ``spark``, ``data``, ``generate``, ``preprocess``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from tfbs.config.base import Identity, Section, spark_counts
from tfbs.config.profile import RealisticConfig
from tfbs.formats.dream import DREAM_TEST_CHROMS, DREAM_VALID_CHROMS
from tfbs.storage import to_uri


class SparkConfig(Section):
    """How the Spark session is built (the master may be overridden per stage)."""

    master: str = "local[2]"
    app_name: str = "tfbs-spark"
    conf: dict[str, str] = Field(default_factory=dict)
    class_archive_dir: str | None = Field(
        None,
        description="local folder of the driver JVM's class archive (tfbs.launch.class_archive); null: none",
    )
    quick_jvm: list[Literal["driver", "executor", "yarn.am"]] = Field(
        default_factory=list,
        description="JVMs started on the quick compiler and the serial collector (tfbs.launch.QUICK_JVM_OPTIONS, "
        "before any spark.<role>.extraJavaOptions): for small data or work in Python processes",
    )
    allow_insecure: bool = Field(
        False,
        description="run on YARN even with Spark's authentication or encryption off (spark.authenticate, "
        "spark.network.crypto.enabled, spark.io.encryption.enabled); false: such a session is refused",
    )

    @field_validator("conf")
    @classmethod
    def _spark_counts(cls, conf: dict[str, str]) -> dict[str, str]:
        return spark_counts(conf)

    @field_validator("class_archive_dir")
    @classmethod
    def _absolute_archive_dir(cls, value: str | None) -> str | None:
        # The driver may start from another working directory (Airflow's task runner).
        return str(Path(value).resolve()) if value else value


class DataConfig(Section):
    """Where the inputs are, in the ENCODE-DREAM layout under ``root``.

    Each path may be given explicitly; otherwise it defaults to the DREAM
    file name under ``root``. ``dnase_dir: null`` runs every stage without
    DNase data: hard negatives are then drawn from all unbound bins, and the
    model's DNase input is switched off. Paths are URIs (``file://``, ``hdfs://``,
    ``gs://``) or local paths, which are made absolute on load because Spark
    executors do not share the driver's working directory. The paths are
    :attr:`~tfbs.config.base.Identity.LOCATION` settings: the shards are
    named by the files' bytes, not by where they are.
    """

    root: Annotated[str, Identity.LOCATION]
    tfs: list[str] = Field(min_length=1)
    cells: list[str] | None = Field(
        None, description="cells to train on, each in every TF's label file (None: each label file's own)"
    )
    labels_dir: Annotated[str, Identity.LOCATION] = ""
    dnase_dir: Annotated[str | None, Identity.LOCATION] = Field(
        "", description="DNase peaks per cell; null when there are none"
    )
    peaks_dir: Annotated[str, Identity.LOCATION] = ""
    genome_fasta: Annotated[str, Identity.LOCATION] = ""
    proteins_fasta: Annotated[str, Identity.LOCATION] = ""
    chrom_sizes: Annotated[str, Identity.LOCATION] = ""
    blacklist: Annotated[str | None, Identity.LOCATION] = ""
    oracle_dir: Annotated[str, Identity.LOCATION] = Field(
        "", description="generated data only: per-bin P(B) the simulation sampled from"
    )
    rnaseq_dir: Annotated[str | None, Identity.LOCATION] = Field(
        "", description="RSEM gene_expression.<CELL>.biorep<N>.tsv files per cell; null when there are none"
    )
    heldout_cells: list[str] = Field(
        default_factory=list,
        description="cells whose labels training never reads (their DNase is read): evaluation scores their "
        "test chromosomes apart from the training cells', as ENCODE-DREAM's final round did",
    )

    @model_validator(mode="after")
    def _heldout_apart(self) -> "DataConfig":
        both = set(self.heldout_cells) & set(self.cells or [])
        if both:
            raise ValueError(f"heldout_cells {sorted(both)} are also in cells (the cells to train on)")
        return self

    @model_validator(mode="after")
    def _fill_defaults(self) -> "DataConfig":
        root = to_uri(self.root)
        defaults = {
            "labels_dir": f"{root}/labels",
            "dnase_dir": f"{root}/dnase",
            "peaks_dir": f"{root}/peaks",
            "genome_fasta": f"{root}/genome/genome.fa",
            "proteins_fasta": f"{root}/proteins/tf_proteins.fa",
            "chrom_sizes": f"{root}/annotations/chrom.sizes",
            "blacklist": f"{root}/annotations/blacklist.bed.gz",
            "oracle_dir": f"{root}/oracle",
            "rnaseq_dir": f"{root}/rnaseq",
        }
        object.__setattr__(self, "root", root)
        for key, default in defaults.items():
            value = getattr(self, key)
            if value == "":
                value = default
            object.__setattr__(self, key, None if value is None else to_uri(value))
        return self

    def labels_uri(self, tf: str) -> str:
        """URI of the DREAM label file of ``tf`` (``.tsv.gz``)."""
        return f"{self.labels_dir}/{tf}.train.labels.tsv.gz"

    def oracle_uri(self, tf: str) -> str:
        """URI of the generator's oracle for ``tf`` (label-file layout, probabilities)."""
        return f"{self.oracle_dir}/{tf}.oracle.tsv.gz"

    def coarse_pwm_uri(self, tf: str) -> str:
        """URI of the generator's coarse-PWM reference for ``tf``: P(B) by class of PWM match, open or not."""
        return f"{self.oracle_dir}/{tf}.coarse_pwm.tsv.gz"

    def generator_table_uris(self, tf: str) -> dict[str, str]:
        """The generator's per-bin tables of ``tf`` by baseline name (``oracle``, ``coarse_pwm_reference``)."""
        return {"oracle": self.oracle_uri(tf), "coarse_pwm_reference": self.coarse_pwm_uri(tf)}

    def expression_uri(self, cell: str, biorep: int) -> str:
        """URI of a cell's RSEM expression file of one biological replicate (the challenge's naming)."""
        if self.rnaseq_dir is None:
            raise ValueError("data.rnaseq_dir is null: this run has no RNA-seq")
        return f"{self.rnaseq_dir}/gene_expression.{cell}.biorep{biorep}.tsv"

    @property
    def has_dnase(self) -> bool:
        """Whether DNase peaks are part of the inputs."""
        return self.dnase_dir is not None

    def dnase_peaks_uri(self, cell: str) -> str:
        """URI of the conservative DNase peaks of ``cell``."""
        if self.dnase_dir is None:
            raise ValueError("data.dnase_dir is null: this run has no DNase peaks")
        return f"{self.dnase_dir}/DNASE.{cell}.conservative.narrowPeak.gz"

    def chip_peaks_uri(self, cell: str, tf: str, kind: Literal["conservative", "relaxed"]) -> str:
        """URI of a ChIP-seq peak file in the DREAM naming scheme."""
        suffix = "conservative.train" if kind == "conservative" else "relaxed"
        return f"{self.peaks_dir}/ChIPseq.{cell}.{tf}.{suffix}.narrowPeak.gz"


class TFSpec(Section):
    """One simulated transcription factor."""

    name: str
    motif: str = Field(description="motif id in the HOCOMOCO MEME file, e.g. CTCF_f2")
    family: str = Field(description="TFs of one family share a DNA-binding-domain segment")
    partners: list[str] = Field(
        default_factory=list,
        description="realistic profile: names in generate.realistic.partners through which some of its sites bind",
    )


class GenerateConfig(Section):
    """The generated ENCODE-DREAM-format data set (``tfbs generate``).

    ``mode: embedded`` simulates everything (genome, sites, ChIP and DNase
    peaks, labels) on ``chromosomes``. ``mode: genome_scale`` writes only
    what no real file here provides: a genome of exactly the sizes in
    ``data.chrom_sizes`` with each TF's motif planted at the summits of the
    real conservative peaks in ``data.peaks_dir``, DNase peaks and proteins;
    labels then come from ``tfbs labels`` on those real peaks. The site and
    peak simulation keys (``sites_per_mb`` ... ``slot_bp``) are embedded-only.
    """

    mode: Literal["embedded", "genome_scale"] = "embedded"
    profile: Literal["basic", "realistic"] = Field(
        "basic",
        description="embedded: basic (cells differ only by DNase, every bound site open, motifs at the centre) or "
        "realistic (generate.realistic: partners expressed in some cells, binding outside DNase peaks, spread "
        "motifs, CpG-island promoters and repeats, RNA-seq files)",
    )
    realistic: RealisticConfig = Field(default_factory=RealisticConfig)
    seed: int = 7
    motif_db: str = Field(description="MEME motif file (HOCOMOCO v9 ships in data/dream/annotations)")
    chromosomes: dict[str, int] = Field(default_factory=dict, description="embedded: simulated chromosome sizes")
    tfs: list[TFSpec] = Field(min_length=1)
    cells: list[str] = Field(min_length=1)
    sites_per_mb: float = Field(60.0, gt=0, description="planted motif instances per TF per Mb")
    open_fraction: float = Field(0.5, gt=0, lt=1, description="share of sites in open chromatin per cell")
    motifless_bound_fraction: float = Field(0.15, ge=0, lt=1, description="bound sites with no motif")
    weak_motif_fraction: float = Field(0.15, ge=0, lt=1, description="bound sites with a degraded motif")
    relaxed_only_fraction: float = Field(0.3, ge=0, description="extra relaxed-only peaks, per bound site")
    dnase_background_per_mb: float = Field(150.0, ge=0, description="open regions with no TF site")
    blacklist_regions: int = Field(4, ge=0, description="blacklisted regions per chromosome")
    gc_content: float = Field(0.41, gt=0, lt=1, description="background G+C content (hg19: 41%)")
    family_share: float = Field(0.8, ge=0, le=1, description="share of a TF's sites taken from its family's lead")
    slot_bp: int = Field(600, gt=0, description="genome slot per feature; one site or open region per slot")
    motif_sharpen: float = Field(3.0, gt=0, description="PWM exponent for planted instances")
    summit_merge_bp: int = Field(
        50, ge=0, description="genome_scale: conservative summits this close (any cell) are one planted site"
    )
    dnase_peak_fraction: float = Field(
        0.85, gt=0, le=1, description="genome_scale: share of a cell's relaxed ChIP peaks given a DNase peak"
    )

    @field_validator("chromosomes")
    @classmethod
    def _needs_standard_splits(cls, chroms: dict[str, int]) -> dict[str, int]:
        # Empty is left to _mode_inputs: genome_scale takes its sizes from data.chrom_sizes.
        missing = [c for c in (*DREAM_TEST_CHROMS, *DREAM_VALID_CHROMS) if c not in chroms]
        if chroms and missing:
            raise ValueError(f"must include {missing} so the standard splits apply")
        return chroms

    @model_validator(mode="after")
    def _mode_inputs(self) -> "GenerateConfig":
        if self.mode == "embedded" and not self.chromosomes:
            raise ValueError("chromosomes: required when mode is embedded")
        if self.mode == "genome_scale" and self.chromosomes:
            raise ValueError("chromosomes: unused when mode is genome_scale (sizes come from data.chrom_sizes)")
        if self.profile == "realistic" and self.mode != "embedded":
            raise ValueError("profile: realistic is a simulation of the embedded mode")
        known = {p.name for p in self.realistic.partners}
        for spec in self.tfs:
            unknown = [name for name in spec.partners if name not in known]
            if unknown:
                raise ValueError(f"tfs[{spec.name}].partners: {unknown} not in realistic.partners {sorted(known)}")
            if spec.partners and self.profile != "realistic":
                raise ValueError(f"tfs[{spec.name}].partners: partners act only in profile: realistic")
        for partner in self.realistic.partners:
            strangers = [c for c in partner.expressed_in or [] if c not in self.cells]
            if strangers:
                raise ValueError(f"realistic.partners[{partner.name}].expressed_in: {strangers} not in cells")
        return self


class PreprocessConfig(Section):
    """Segregation, balancing and sharding (``tfbs preprocess``).

    The :attr:`~tfbs.config.base.Identity.LAYOUT` settings say how shards
    are laid out in files or how inputs are read, not which rows the shards
    hold: changing one rebuilds nothing and retrains nothing (it applies the
    next time the shards are built).
    """

    seed: int = 13
    window: int = Field(1000, gt=0, description="sequence window centred on the 200 bp bin")
    negatives_per_positive: float = Field(2.0, gt=0, description="U:B ratio in train/valid")
    hard_negative_fraction: float = Field(
        0.5, ge=0, le=1, description="share of drawn U bins taken from DNase-open bins (accessible negatives)"
    )
    test_chroms: list[str] = Field(default_factory=lambda: list(DREAM_TEST_CHROMS))
    valid_chroms: list[str] = Field(default_factory=lambda: list(DREAM_VALID_CHROMS))
    negative_draws: int = Field(1, gt=0, description="independent U draws written (a trainer redraws per epoch)")
    cross_cell_negatives: bool = Field(
        False,
        description="also keep, in every draw, each U bin that is B in another training cell of the same TF: the "
        "negatives that differ from a positive by the cell alone (a partner one cell expresses and the other does "
        "not), which a uniform draw seldom picks and the test scores every one of",
    )
    pad_windows: bool = Field(False, description="pad windows that leave the chromosome with N instead of dropping")
    max_n_fraction: float = Field(0.1, ge=0, le=1, description="drop windows with a larger share of N")
    rows_per_record_file: Annotated[int, Identity.LAYOUT] = Field(
        4096, gt=0, description="rows per training record file"
    )
    rows_per_row_group: Annotated[int, Identity.LAYOUT] = Field(
        1024, gt=0, description="Parquet row group size of train/valid shards; small, so workers get many"
    )
    test_rows_per_row_group: Annotated[int, Identity.LAYOUT] = Field(
        1 << 17, gt=0, description="Parquet row group size of test shards, read whole by evaluation"
    )
    read_block_mb: Annotated[int, Identity.LAYOUT] = Field(
        16, gt=0, description="decompressed MiB of a label file parsed at a time"
    )
    # Shards exist only when every line was good (``fail``) or the bad ones
    # were set aside, which gives the same rows from the same good lines.
    bad_rows: Annotated[Literal["fail", "set_aside"], Identity.LAYOUT] = "fail"

    @model_validator(mode="after")
    def _splits_disjoint(self) -> "PreprocessConfig":
        both = set(self.test_chroms) & set(self.valid_chroms)
        if both:
            raise ValueError(f"test_chroms and valid_chroms share {sorted(both)}")
        return self
