"""The pipeline's one configuration object.

A YAML file (``conf/*.yaml``) is read, dotted ``key=value`` overrides from
the command line are applied, and the result is validated into a single
frozen :class:`PipelineConfig` that every stage receives. Every default lives
here, so a stage never invents its own.

Errors name the file and the offending key, for example::

    conf/demo.yaml: train.num_workers: Input should be greater than 0
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any, ClassVar, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from tfbs.dream import DREAM_TEST_CHROMS, DREAM_VALID_CHROMS
from tfbs.errors import ConfigError
from tfbs.storage import to_uri

#: The GPU discovery script shipped in the repository (``scripts/``). Spark
#: runs it on each executor, so this absolute path suits clusters where the
#: repository sits at the same place on every node; on YARN ship the script
#: with ``--files`` and use ``./get_gpus_resources.sh`` (conf/yarn_gpu.yaml).
DEFAULT_GPU_DISCOVERY_SCRIPT = str(Path(__file__).resolve().parents[1] / "scripts" / "get_gpus_resources.sh")


def cpu_set(cpus: str) -> set[int]:
    """The CPUs of a Linux CPU list (``taskset -c``'s form).

    Examples
    --------
    >>> sorted(cpu_set("0-2,5"))
    [0, 1, 2, 5]
    """
    found: set[int] = set()
    for part in cpus.split(","):
        low, dash, high = part.strip().partition("-")
        if not low.isdigit() or (dash and not high.isdigit()) or int(high or low) < int(low):
            raise ValueError(f"{cpus!r} is not a CPU list such as '0' or '0-2,5'")
        found.update(range(int(low), int(high or low) + 1))
    return found


class _Section(BaseModel):
    """Base for every section: unknown keys are errors, objects are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class SparkConfig(_Section):
    """How the Spark session is built (the master may be overridden per stage)."""

    master: str = "local[2]"
    app_name: str = "tfbs-spark"
    conf: dict[str, str] = Field(default_factory=dict)
    class_archive_dir: str | None = Field(
        None,
        description="local folder of the driver JVM's class archive (tfbs.class_archive); null: none",
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

    @field_validator("class_archive_dir")
    @classmethod
    def _absolute_archive_dir(cls, value: str | None) -> str | None:
        # The driver may start from another working directory (Airflow's task runner).
        return str(Path(value).resolve()) if value else value


class DataConfig(_Section):
    """Where the inputs are, in the ENCODE-DREAM layout under ``root``.

    Each path may be given explicitly; otherwise it defaults to the DREAM
    file name under ``root``. ``dnase_dir: null`` runs every stage without
    DNase data: hard negatives are then drawn from all unbound bins, and the
    model's DNase input is switched off. Paths are URIs (``file://``, ``hdfs://``,
    ``gs://``) or local paths, which are made absolute on load because Spark
    executors do not share the driver's working directory.
    """

    root: str
    tfs: list[str] = Field(min_length=1)
    cells: list[str] | None = Field(
        None, description="cells to train on, each in every TF's label file (None: each label file's own)"
    )
    labels_dir: str = ""
    dnase_dir: str | None = Field("", description="DNase peaks per cell; null when there are none")
    peaks_dir: str = ""
    genome_fasta: str = ""
    proteins_fasta: str = ""
    chrom_sizes: str = ""
    blacklist: str | None = ""
    oracle_dir: str = Field("", description="generated data only: per-bin P(B) the simulation sampled from")

    #: Keys that say where files are, not what is in them: the input
    #: fingerprint holds the files' content digests, so moving identical
    #: files (or naming them from another working directory) changes
    #: nothing. Whether one is set still counts: null turns DNase or the
    #: blacklist off.
    LOCATION_KEYS: ClassVar[frozenset[str]] = frozenset(
        {
            "root",
            "labels_dir",
            "dnase_dir",
            "peaks_dir",
            "genome_fasta",
            "proteins_fasta",
            "chrom_sizes",
            "blacklist",
            "oracle_dir",
        }
    )

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


class TFSpec(_Section):
    """One simulated transcription factor."""

    name: str
    motif: str = Field(description="motif id in the HOCOMOCO MEME file, e.g. CTCF_f2")
    family: str = Field(description="TFs of one family share a DNA-binding-domain segment")


class GenerateConfig(_Section):
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
        return self


class PreprocessConfig(_Section):
    """Segregation, balancing and sharding (``tfbs preprocess``)."""

    seed: int = 13
    window: int = Field(1000, gt=0, description="sequence window centred on the 200 bp bin")
    negatives_per_positive: float = Field(2.0, gt=0, description="U:B ratio in train/valid")
    hard_negative_fraction: float = Field(
        0.5, ge=0, le=1, description="share of drawn U bins taken from DNase-open bins (accessible negatives)"
    )
    test_chroms: list[str] = Field(default_factory=lambda: list(DREAM_TEST_CHROMS))
    valid_chroms: list[str] = Field(default_factory=lambda: list(DREAM_VALID_CHROMS))
    negative_draws: int = Field(1, gt=0, description="independent U draws written (a trainer redraws per epoch)")
    pad_windows: bool = Field(False, description="pad windows that leave the chromosome with N instead of dropping")
    max_n_fraction: float = Field(0.1, ge=0, le=1, description="drop windows with a larger share of N")
    rows_per_record_file: int = Field(4096, gt=0, description="rows per training record file")
    rows_per_row_group: int = Field(
        1024, gt=0, description="Parquet row group size of train/valid shards; small, so workers get many"
    )
    test_rows_per_row_group: int = Field(
        1 << 17, gt=0, description="Parquet row group size of test shards, read whole by evaluation"
    )
    read_block_mb: int = Field(16, gt=0, description="decompressed MiB of a label file parsed at a time")
    bad_rows: Literal["fail", "set_aside"] = "fail"

    #: Keys that say how shards are laid out in files or how inputs are
    #: read, not which rows the shards hold: no part of the input
    #: fingerprint, so changing one rebuilds nothing and retrains nothing
    #: (it applies the next time the shards are built). ``bad_rows`` is one:
    #: shards exist only when every line was good (``fail``) or the bad ones
    #: were set aside, which gives the same rows from the same good lines.
    LAYOUT_KEYS: ClassVar[frozenset[str]] = frozenset(
        {"rows_per_record_file", "rows_per_row_group", "test_rows_per_row_group", "read_block_mb", "bad_rows"}
    )

    @model_validator(mode="after")
    def _splits_disjoint(self) -> "PreprocessConfig":
        both = set(self.test_chroms) & set(self.valid_chroms)
        if both:
            raise ValueError(f"test_chroms and valid_chroms share {sorted(both)}")
        return self


class FactorNetConfig(_Section):
    """The DNA branch of the ``factornet`` architecture (Quang & Xie's FactorNet).

    One convolution of wide (motif-sized) filters, max-pooled, then a
    sequence layer over the pooled positions; the same weights read both
    strands. The protein branch, cell, DNase, dense and dropout keys are
    shared with the EasyFlow model (:class:`ModelConfig`).
    """

    filters: int = Field(64, gt=0, description="motif detectors in the first convolution")
    kernel: int = Field(26, gt=0, description="first-layer filter width, bp (FactorNet: 26)")
    pool_size: int = Field(13, gt=0, description="max-pool width and stride after the convolution (FactorNet: 13)")
    sequence_layer: Literal["bilstm", "attention"] = Field(
        "bilstm", description="over the pooled positions: a bidirectional LSTM or one self-attention block"
    )
    units: int = Field(32, gt=0, description="LSTM units per direction, or attention key size per head")
    attention_heads: int = Field(4, gt=0)
    cell_embedding_dim: int = Field(8, gt=0, description="size of the learned cell-type embedding")


class MotifCNNConfig(_Section):
    """The DNA branch of the ``motif_cnn`` architecture (the default)."""

    filters: int = Field(64, gt=0, description="motif detectors")
    kernel: int = Field(15, gt=0, description="filter width, bp (most TF motifs are 8-20 bp)")
    protein_gate: bool = Field(True, description="the TF's protein selects the filters (a sigmoid gate per filter)")
    positional_bp: int | None = Field(
        10,
        gt=0,
        description="learn a weight per N bp of the whole window for the motif matches, starting at 1 inside "
        "dna_center_bp and near 0 outside (None: count matches only inside dna_center_bp, unweighted)",
    )
    match_dropout: float = Field(
        0.25, ge=0, lt=1, description="dropout on the filters' best matches, before the protein gate"
    )
    seed_motifs: bool = Field(
        True,
        description="start one filter per TF of the run as its known motif (evaluate.motifs in evaluate.motif_db; "
        "on generated data the very motifs the generator plants), or as the motifs of seed_motif_db; training "
        "moves them like the others, and the motifs are part of the model's version (false, or no motif "
        "configured: every filter starts random, and the training log says why)",
    )
    seed_motif_db: str | None = Field(
        None,
        description="a MEME file whose motifs, in file order, start the first filters instead of the run's TFs' "
        "own (e.g. other TFs' motifs, a control of what seeding buys); None: evaluate.motifs of the run's TFs",
    )

    @field_validator("seed_motif_db")
    @classmethod
    def _seed_motif_db_uri(cls, value: str | None) -> str | None:
        return None if value is None else to_uri(value)


class EasyFlowConfig(_Section):
    """The DNA branch of the ``easyflow`` architecture, EasyFlow's sizes by default."""

    dna_filters: list[int] = Field(default_factory=lambda: [32, 32, 32], min_length=1)
    dna_kernel: int = Field(3, gt=0)
    dna_pool_size: int = Field(2, gt=0, description="max-pool before the last DNA convolution")
    pool: Literal["flatten", "global_max"] = Field(
        "flatten", description="how the DNA and protein maps become vectors (EasyFlow: flatten)"
    )


class ModelConfig(_Section):
    """The TFBS model with the amino-acid branch, picked by ``architecture``.

    ``motif_cnn`` (the default, :class:`tf_models.motif_cnn.MotifCNN`) scans
    the bin with strand-shared motif filters gated by the TF's protein;
    ``easyflow`` is EasyFlow's TFBS CNN with its bugs fixed
    (:class:`tf_models.model.EasyFlowNet`); ``factornet`` is a strand-shared
    wide-filter CNN with a pooled BiLSTM or attention layer
    (:class:`tf_models.factornet.FactorNet`). Each has its own section for
    its DNA branch; the protein branch, the cell, DNase, dense and dropout
    keys are shared.
    """

    architecture: Literal["motif_cnn", "easyflow", "factornet"] = "motif_cnn"
    aa_filters: list[int] = Field(default_factory=lambda: [16, 32, 32], min_length=1)
    aa_kernel: int = Field(9, gt=0)
    aa_pool_size: int = Field(2, gt=0)
    aa_max_length: int = Field(800, gt=0)
    dna_center_bp: int | None = Field(
        300, gt=0, description="use only DNA features of the central N bp: the bin and a margin (None: whole window)"
    )
    dense_units: int = Field(64, gt=0)
    dropout: float = Field(0.25, ge=0, lt=1)
    use_dnase: bool = Field(
        True,
        description="feed the DNase input, each bin's proximity to its open region's summit (off when the data has none)",
    )
    use_cell_type: bool = True
    motif_cnn: MotifCNNConfig = Field(default_factory=MotifCNNConfig)
    easyflow: EasyFlowConfig = Field(default_factory=EasyFlowConfig)
    factornet: FactorNetConfig = Field(default_factory=FactorNetConfig)


class TrainConfig(_Section):
    """Distributed training (``tfbs train``).

    The model goes to ``<run_dir>/models/<version>/`` (:mod:`tfbs.lineage`):
    the shards and this section, less the keys that only say where and how
    long it runs, name the version, so changing them trains a new one.
    """

    master: str = "local-cluster[4,1,1024]"
    strategy: Literal["parameter_server", "multi_worker_mirrored", "local"] = "parameter_server"
    num_ps: int = Field(1, ge=0)
    num_workers: int = Field(2, gt=0)
    seed: int = 17
    batch_size: int = Field(
        128,
        gt=1,
        description="examples per training step, whatever the strategy (all-reduce splits it across replicas)",
    )
    epochs: int = Field(10, gt=0, description="passes over the training positives (negatives are redrawn per epoch)")
    steps: int | None = Field(None, gt=0, description="train exactly this many steps instead of `epochs`")
    steps_per_execution: int = Field(20, gt=0, description="steps per scheduled closure")
    learning_rate: float = Field(1e-3, gt=0)
    decay_rate: float = Field(0.96, gt=0, le=1)
    decay_steps: int = Field(2000, gt=0)
    checkpoint_every_steps: int | None = Field(
        None, gt=0, description="checkpoint and validate this often (None: once per epoch)"
    )
    shuffle_buffer: int = Field(8192, gt=0)
    early_stopping_patience: int | None = Field(
        3, gt=0, description="stop after this many checkpoints without a better validation auPRC (None: off)"
    )
    validation_examples: int = Field(20000, gt=0, description="validation rows scored at each checkpoint")
    positive_fraction: float | None = Field(
        None, gt=0, lt=1, description="share of positives per batch (None: as drawn by preprocessing)"
    )
    record_cache_dir: str | None = Field(
        None,
        min_length=1,
        description="local folder, the same on every node, for copies of remote (hdfs://) training records "
        "(default /tmp/tfbs-{user}/records; {user} is the user's name); made mode 700, refused if anyone else "
        "owns or can open it",
    )
    worker_wait_timeout_s: int = Field(3600, gt=0, description="how long ps/workers wait for the chief")
    executors_timeout_s: int = Field(
        120, gt=0, description="how long training waits for its executors (one per TF node) before it stops"
    )
    tf_network: Literal["private", "open"] = Field(
        "private",
        description="private: each TF node's TensorFlow in a network namespace of its own (loopback only), its "
        "peers reached through tunnels sealed with the run's secret; open: TF's gRPC servers on every interface "
        "of their hosts, answering anyone who reaches them (for hosts that refuse network namespaces)",
    )
    timeout_s: int = Field(7200, gt=0, description="the whole distributed run, start-up included")
    gpus_per_worker: int = Field(
        0, ge=0, description="GPUs Spark gives each training executor; the chief and workers use them, ps none"
    )
    gpu_discovery_script: str = Field(
        DEFAULT_GPU_DISCOVERY_SCRIPT, min_length=1, description="run by each executor to list its GPUs (Spark)"
    )
    node_cpus: dict[str, str] = Field(
        default_factory=dict,
        description="pin TensorFlow nodes to CPUs: {'worker:0': '0', 'worker:1': '1', 'chief': '0-1'} (a job, or "
        "job:index, to a Linux CPU list); for scaling measurements on few cores, or to keep nodes apart on one host",
    )
    # Allowed without GPUs: float16 runs (slowly) on CPU, which is how it is
    # tested, and strategy local may train on the driver's own GPU. The
    # training process logs a warning when it sees no GPU.
    mixed_precision: bool = Field(False, description="keras mixed_float16 in training; logits stay float32")
    spark_conf: dict[str, str] = Field(
        default_factory=dict, description="Spark settings for the training session only, on top of spark.conf"
    )
    model: ModelConfig = Field(default_factory=ModelConfig)
    version: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
        max_length=100,
        description="name of the model version (None: from the shards' manifest and this section, tfbs.lineage)",
    )

    #: Keys that say where and how training is spread or how long to wait
    #: for it, not what it learns: no part of a model version
    #: (:mod:`tfbs.lineage`). Every strategy takes ``batch_size`` examples a
    #: step, for the same schedule, so a model trained under ps, all-reduce
    #: or in one process is the same recipe (and a killed ps run may resume
    #: in one process).
    OPERATIONAL_KEYS: ClassVar[frozenset[str]] = frozenset(
        {
            "version",
            "strategy",
            "num_ps",
            "num_workers",
            "master",
            "spark_conf",
            "record_cache_dir",
            "worker_wait_timeout_s",
            "executors_timeout_s",
            "tf_network",
            "timeout_s",
            "gpus_per_worker",
            "gpu_discovery_script",
            "node_cpus",
        }
    )

    @model_validator(mode="after")
    def _consistent(self) -> "TrainConfig":
        if self.strategy == "parameter_server" and self.num_ps < 1:
            raise ValueError("strategy parameter_server needs num_ps >= 1")
        gpu_keys = sorted(k for k in self.spark_conf if ".resource.gpu." in k)
        if gpu_keys:
            # One source of truth: tf_models.gpus derives these from gpus_per_worker.
            raise ValueError(f"spark_conf: set gpus_per_worker / gpu_discovery_script instead of {gpu_keys}")
        if self.checkpoint_every_steps and self.checkpoint_every_steps % self.steps_per_execution:
            raise ValueError("checkpoint_every_steps must be a multiple of steps_per_execution")
        return self

    @field_validator("node_cpus")
    @classmethod
    def _cpu_lists(cls, node_cpus: dict[str, str]) -> dict[str, str]:
        for node, cpus in node_cpus.items():
            if not re.fullmatch(r"(chief|ps|worker)(:\d+)?", node):
                raise ValueError(f"node_cpus: {node!r} is not chief, ps or worker, with an optional :index")
            cpu_set(cpus)
        return node_cpus

    @field_validator("version")
    @classmethod
    def _not_the_pointer(cls, version: str | None) -> str | None:
        if version == "LATEST":
            raise ValueError("LATEST names the pointer to the newest evaluated version, not a version")
        return version


class EvaluateConfig(_Section):
    """Scoring on the test chromosomes (``tfbs evaluate``)."""

    batch_size: int = Field(512, gt=0)
    min_mean_auroc: float | None = Field(
        None, ge=0, le=1, description="fail the stage below this; models/LATEST then stays where it was"
    )
    min_mean_auprc: float | None = Field(
        None, ge=0, le=1, description="fail the stage below this; models/LATEST then stays where it was"
    )
    keep_versions: int | None = Field(
        5,
        gt=0,
        description="model versions kept once LATEST moves, LATEST included; older ones are deleted "
        "(never one made after LATEST). None: keep all",
    )
    motif_db: str | None = Field(
        None, description="MEME file of the motif-scan baseline (default: generate.motif_db when generated)"
    )
    motifs: dict[str, str] = Field(
        default_factory=dict, description="TF -> motif id in motif_db (default: generate.tfs' motifs)"
    )

    @field_validator("motif_db")
    @classmethod
    def _motif_db_uri(cls, value: str | None) -> str | None:
        return None if value is None else to_uri(value)

    @model_validator(mode="after")
    def _motifs_named(self) -> "EvaluateConfig":
        # A file without motifs named in it scans nothing and seeds no
        # filter, and nothing would say so: refused rather than ignored.
        if self.motif_db is not None and not self.motifs:
            raise ValueError(
                f"motif_db {self.motif_db} is set but motifs is empty: name each TF's motif in it "
                "(evaluate.motifs: {TF: motif id}), or leave motif_db out (a database only to match "
                "learned motifs against is explain.motif_db)"
            )
        return self


class PredictConfig(_Section):
    """Genome-wide scoring into DREAM submissions (``tfbs predict``)."""

    rows_per_part: int = Field(
        200_000,
        gt=0,
        description="consecutive regions one Spark task scores and writes as one part (fewer when a run has "
        "fewer parts than cores); a rerun keeps finished parts",
    )
    batch_size: int = Field(1024, gt=0, description="windows per call of the model")


class UnseenConfig(_Section):
    """Leave-one-TF-out training and its controls (``tfbs unseen``)."""

    tfs: list[str] | None = Field(None, description="TFs to hold out, one training each (None: every TF of the shards)")
    epochs: int | None = Field(None, gt=0, description="passes per held-out training (None: train.epochs)")
    steps: int | None = Field(
        None, gt=0, description="train exactly this many steps instead (None: epochs, or train.steps)"
    )
    seed: int = Field(29, description="seeds the shuffled-protein controls: seed, seed + 1, ...")
    shuffles: int = Field(
        5, gt=0, description="shuffled-protein controls per held-out TF; the table gives their mean and range"
    )
    family_control: bool = Field(
        True,
        description="also measure the TFs with a family member on the run's generated data set regenerated with "
        "their sites planted apart (generate.family_share 0), so transfer through the protein is told from "
        "transfer through shared sites (generated data only)",
    )
    protein_inputs: list[Literal["full", "dbd"]] = Field(
        ["full"],
        min_length=1,
        description="what the model is given of each protein, one table block each: the whole sequence, "
        "or its DNA-binding domain (dbd=START-END in the protein FASTA's headers)",
    )


class ExplainConfig(_Section):
    """What the model learned (``tfbs explain``): ISM of the top test predictions, seqlets, TOMTOM."""

    top_n: int = Field(64, gt=0, description="top test predictions per TF/cell explained")
    scan_bp: int = Field(300, gt=0, description="central bp of each window mutated (the model's scanned region)")
    batch_size: int = Field(4096, gt=0, description="mutated windows scored per model call")
    seqlet_core_bp: int = Field(10, gt=0, description="width of the attribution sum that places a seqlet")
    pattern_bp: int = Field(24, gt=0, description="width of a pattern before trimming its uninformative ends")
    shift_bp: int = Field(6, ge=0, description="how far a seqlet may move when aligned to the others")
    seqlets_per_window: int = Field(1, gt=0, description="seqlets taken from each explained window")
    min_bits: float = Field(0.3, ge=0, le=2, description="columns below this information at a pattern's ends go")
    q_threshold: float = Field(0.05, gt=0, le=1, description="a planted motif is recovered at a q-value below this")
    motif_db: str | None = Field(None, description="MEME file to match against (default: evaluate.motif_db)")

    @field_validator("motif_db")
    @classmethod
    def _motif_db_uri(cls, value: str | None) -> str | None:
        return None if value is None else to_uri(value)

    @model_validator(mode="after")
    def _widths_nest(self) -> "ExplainConfig":
        if not self.seqlet_core_bp <= self.pattern_bp <= self.scan_bp:
            raise ValueError(
                f"need seqlet_core_bp ({self.seqlet_core_bp}) <= pattern_bp ({self.pattern_bp}) "
                f"<= scan_bp ({self.scan_bp})"
            )
        return self


class PipelineConfig(_Section):
    """Everything one run needs; built by :func:`load_config`."""

    run_dir: str
    shards_dir: str = Field("", description="shards to read/write; default <run_dir>/shards, shareable across runs")
    source: str = Field("", description="the YAML file this came from")
    spark: SparkConfig = Field(default_factory=SparkConfig)
    data: DataConfig
    generate: GenerateConfig | None = None
    preprocess: PreprocessConfig = Field(default_factory=PreprocessConfig)
    train: TrainConfig = Field(default_factory=TrainConfig)
    evaluate: EvaluateConfig = Field(default_factory=EvaluateConfig)
    predict: PredictConfig = Field(default_factory=PredictConfig)
    unseen: UnseenConfig = Field(default_factory=UnseenConfig)
    explain: ExplainConfig = Field(default_factory=ExplainConfig)

    @model_validator(mode="after")
    def _absolute_dirs(self) -> "PipelineConfig":
        run_dir = to_uri(self.run_dir)
        object.__setattr__(self, "run_dir", run_dir)
        object.__setattr__(self, "shards_dir", to_uri(self.shards_dir) if self.shards_dir else f"{run_dir}/shards")
        return self

    @model_validator(mode="after")
    def _baseline_motifs(self) -> "PipelineConfig":
        # Generated data: the motif scan reads the motifs the generator planted.
        if self.generate is not None and self.evaluate.motif_db is None:
            motifs = {spec.name: spec.motif for spec in self.generate.tfs}
            evaluate = self.evaluate.model_copy(update={"motif_db": self.generate.motif_db, "motifs": motifs})
            object.__setattr__(self, "evaluate", evaluate)
        return self

    def digest(self, sections: set[str] | None = None) -> str:
        """A short hash of the configuration (or of some sections), recorded in outputs."""
        tree = self.model_dump(exclude={"source"})
        if sections is not None:
            tree = {key: value for key, value in tree.items() if key in sections}
        payload = json.dumps(tree, sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    def content_settings(self, sections: set[str]) -> dict[str, Any]:
        """The settings of ``sections`` that change what the pipeline makes, as JSON values.

        Left out: ``data``'s locations (only whether each is set is kept;
        :attr:`DataConfig.LOCATION_KEYS`), ``preprocess``'s layout
        (:attr:`PreprocessConfig.LAYOUT_KEYS`) and ``train``'s operational
        keys (:attr:`TrainConfig.OPERATIONAL_KEYS`).
        """
        tree = self.model_dump(mode="json", include=sections)
        if "data" in tree:
            tree["data"] = {
                key: (value is not None if key in DataConfig.LOCATION_KEYS else value)
                for key, value in tree["data"].items()
            }
        for name, left_out in (("preprocess", PreprocessConfig.LAYOUT_KEYS), ("train", TrainConfig.OPERATIONAL_KEYS)):
            if name in tree:
                tree[name] = {key: value for key, value in tree[name].items() if key not in left_out}
        return tree

    def content_digest(self, sections: set[str]) -> str:
        """A short hash of :meth:`content_settings`: equal exactly when those settings are."""
        payload = json.dumps(self.content_settings(sections), sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    @property
    def shards_uri(self) -> str:
        return self.shards_dir


def _apply_override(tree: dict[str, Any], assignment: str) -> None:
    """Set ``a.b.c=value`` in a nested dict; the value is parsed as YAML."""
    if "=" not in assignment:
        raise ConfigError(f"override {assignment!r}: expected key=value")
    dotted, raw = assignment.split("=", 1)
    keys = dotted.strip().split(".")
    node = tree
    for key in keys[:-1]:
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            raise ConfigError(f"override {assignment!r}: {key} is not a section")
        node = child
    node[keys[-1]] = yaml.safe_load(raw)


def _format_errors(source: str, error: ValidationError) -> str:
    lines = []
    for item in error.errors():
        key = ".".join(str(part) for part in item["loc"]) or "(top level)"
        # pydantic prefixes the message of a validator's ValueError; the key says where already.
        message = "unknown key" if item["type"] == "extra_forbidden" else item["msg"].removeprefix("Value error, ")
        lines.append(f"{source}: {key}: {message}")
    return "\n".join(lines)


def load_config(path: str | os.PathLike[str], overrides: list[str] | None = None) -> PipelineConfig:
    """Read, override and validate a pipeline configuration.

    Parameters
    ----------
    path
        A YAML file, such as ``conf/demo.yaml``.
    overrides
        ``dotted.key=value`` strings applied on top of the file, values
        parsed as YAML (``train.steps=200``, ``data.tfs=[CTCF]``).

    Returns
    -------
    PipelineConfig
        The validated, frozen configuration.

    Raises
    ------
    ConfigError
        If the file is missing or unreadable, or a key is unknown or invalid;
        the message names the file and the key.
    """
    source = str(path)
    if not Path(source).is_file():
        raise ConfigError(f"{source}: configuration file not found")
    try:
        tree = yaml.safe_load(Path(source).read_text()) or {}
    except yaml.YAMLError as err:
        raise ConfigError(f"{source}: not valid YAML: {err}") from err
    if not isinstance(tree, dict):
        raise ConfigError(f"{source}: top level must be a mapping")
    for assignment in overrides or []:
        _apply_override(tree, assignment)
    tree["source"] = source
    try:
        return PipelineConfig.model_validate(tree)
    except ValidationError as err:
        raise ConfigError(_format_errors(source, err)) from None


__all__ = [
    "ConfigError",
    "DataConfig",
    "EvaluateConfig",
    "ExplainConfig",
    "FactorNetConfig",
    "GenerateConfig",
    "ModelConfig",
    "PipelineConfig",
    "PreprocessConfig",
    "SparkConfig",
    "TFSpec",
    "TrainConfig",
    "UnseenConfig",
    "load_config",
]
