"""The sections of the stages after training: ``evaluate``, ``predict``, ``unseen``, ``explain``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from tfbs.config.base import Section
from tfbs.storage import to_uri

#: A baseline the margin floor can be over.
MarginBaseline = Literal["dnase", "dnase_motif", "motif_scan", "boosted"]
#: Each input alone: what a model must beat to have learnt anything.
SINGLE_INPUTS: tuple[MarginBaseline, ...] = ("dnase", "motif_scan")


class EvaluateConfig(Section):
    """Scoring on the test chromosomes (``tfbs evaluate``)."""

    batch_size: int = Field(512, gt=0)
    min_mean_auroc: float | None = Field(
        None, ge=0, le=1, description="fail the stage below this; models/LATEST then stays where it was"
    )
    min_mean_auprc: float | None = Field(
        None, ge=0, le=1, description="fail the stage below this; models/LATEST then stays where it was"
    )
    min_auprc_margin: float | None = Field(
        None,
        description="fail the stage unless the model's mean auPRC exceeds each of margin_baselines' by this much "
        "(over every TF/cell scored): a floor a model that learnt nothing fails, whatever its auROC (with filters "
        "seeded as the motifs, one of shuffled labels scores about as the motif scan); models/LATEST then stays",
    )
    margin_baselines: list[MarginBaseline] = Field(
        default_factory=lambda: list(SINGLE_INPUTS),
        min_length=1,
        description="the baselines of min_auprc_margin: each input alone (DNase, the motif scan) by default",
    )
    bootstrap_resamples: int = Field(
        1000, ge=10, description="resamples of the test sites behind every interval of the report"
    )
    bootstrap_seed: int = Field(0, description="seed of the site bootstrap")
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
    partner_motifs: dict[str, str] = Field(
        default_factory=dict,
        description="partner (cofactor) -> motif id in motif_db, read by the gradient-boosted baseline beside the "
        "TFs' motifs (default: generate.realistic.partners on realistic generated data)",
    )
    gene_ids: dict[str, str] = Field(
        default_factory=dict,
        description="TF or partner name -> gene_id in the RNA-seq files (default: the name itself; the challenge's "
        "files hold Ensembl ids)",
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


class PredictConfig(Section):
    """Genome-wide scoring into DREAM submissions (``tfbs predict``)."""

    rows_per_part: int = Field(
        200_000,
        gt=0,
        description="consecutive regions one Spark task scores and writes as one part (fewer when a run has "
        "fewer parts than cores); a rerun keeps finished parts",
    )
    batch_size: int = Field(1024, gt=0, description="windows per call of the model")
    joined: bool = Field(
        True,
        description="write the model joined to the gradient-boosted baseline its evaluation fitted and kept "
        "(the probability of their mean log-odds, tf_models.kept_baseline; the calls at 10% FDR by the joined "
        "scorer's threshold); false, or a version not evaluated, or a TF the baseline never classified: the "
        "network's own probability",
    )


class UnseenConfig(Section):
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
    protein_inputs: list[Literal["full", "dbd", "family"]] = Field(
        ["full"],
        min_length=1,
        description="what the model is given of each protein, one table block each: the whole sequence, "
        "its DNA-binding domain (dbd=START-END in the protein FASTA's headers), or a family label only (one "
        "stand-in sequence per family of proteins at least 20% identical: the control the protein must beat)",
    )


class ExplainConfig(Section):
    """What the model learned (``tfbs explain``): ISM of the top test predictions, seqlets, TOMTOM."""

    # 32: on the demo the same motifs recovered, at the same ranks, as from 64, in a fifth of the time.
    top_n: int = Field(32, gt=0, description="top test predictions per TF/cell explained")
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
