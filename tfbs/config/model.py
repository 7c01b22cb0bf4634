"""What the model is: ``train.model`` and its architectures' sections."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from tfbs.config.base import Identity, Section
from tfbs.storage import to_uri


class FactorNetConfig(Section):
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


class MotifCNNConfig(Section):
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
    scales_bp: list[int] | None = Field(
        None,
        min_length=1,
        description="each filter's best match in each of these widths centred on the bin (bp, e.g. [100, 200, "
        "400, 1000]), side by side into the dense layer, as the gradient-boosted baseline reads motifs; the widest "
        "is scanned (None: one best match, in dna_center_bp or weighted by positional_bp)",
    )
    match_activation: Literal["relu", "linear"] = Field(
        "relu",
        description="the filters' maps: relu (a match below the filter's threshold counts 0) or linear (each "
        "filter's best score is kept graded, negative for a poor match, as the baseline's log-odds maxima are)",
    )
    summit_ring_bp: int | None = Field(
        None,
        gt=0,
        description="also keep each filter's best match within N bp of the DNase summit's distance from the bin's "
        "centre, either side (tf_models.summit_ring: the open region's place along the window, from the DNase "
        "input; needs use_dnase); None: off",
    )
    expression_products: bool = Field(
        False,
        description="also feed each filter's widest best match times each gene's expression in the row's cell "
        "(tf_models.expression_products): a partner's motif can count for binding where the partner is expressed "
        "and against it where it is not, which the hidden layer did not learn from matches and expression side by "
        "side (needs use_expression)",
    )
    match_dropout: float = Field(
        0.25, ge=0, lt=1, description="dropout on the filters' best matches, before the protein gate"
    )
    seed_motifs: bool = Field(
        False,
        description="start one filter per TF of the run as its known motif (evaluate.motifs in evaluate.motif_db; "
        "on generated data the very motifs the generator plants), or as the motifs of seed_motif_db; training "
        "moves them like the others, and the motifs are part of the model's version (false, the default, or no "
        "motif configured: every filter starts random, and the training log says why). Off by default: over three "
        "generated data sets it bought nothing overall, a little on one, a loss on another (docs/model-quality.md)",
    )
    # Its bytes are part of the recipe (tfbs.lineage.naming): where it is is not.
    seed_motif_db: Annotated[str | None, Identity.DIGESTED] = Field(
        None,
        description="a MEME file whose motifs, in file order, start the first filters instead of the run's TFs' "
        "own (e.g. other TFs' motifs, a control of what seeding buys); None: evaluate.motifs of the run's TFs",
    )

    @field_validator("seed_motif_db")
    @classmethod
    def _seed_motif_db_uri(cls, value: str | None) -> str | None:
        return None if value is None else to_uri(value)

    @model_validator(mode="after")
    def _one_way_to_place_matches(self) -> MotifCNNConfig:
        if self.scales_bp is not None:
            if self.positional_bp is not None:
                raise ValueError("scales_bp and positional_bp both place the matches: set positional_bp to null")
            if sorted(set(self.scales_bp)) != self.scales_bp:
                raise ValueError(f"scales_bp must increase: {self.scales_bp}")
            if self.scales_bp[0] < self.kernel:
                raise ValueError(f"scales_bp {self.scales_bp[0]} is narrower than a filter (kernel {self.kernel})")
        return self


class EasyFlowConfig(Section):
    """The DNA branch of the ``easyflow`` architecture, EasyFlow's sizes by default."""

    dna_filters: list[int] = Field(default_factory=lambda: [32, 32, 32], min_length=1)
    dna_kernel: int = Field(3, gt=0)
    dna_pool_size: int = Field(2, gt=0, description="max-pool before the last DNA convolution")
    pool: Literal["flatten", "global_max"] = Field(
        "flatten", description="how the DNA and protein maps become vectors (EasyFlow: flatten)"
    )


class ModelConfig(Section):
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
    use_cell_type: bool = Field(
        False,
        description="a learned input per training cell type (a one-hot or an embedding); it cannot score a cell "
        "no label trained (data.heldout_cells, tfbs predict on a new cell), so it is off by default",
    )
    use_expression: bool = Field(
        False,
        description="feed log2(1 + TPM) of the run's TFs' and partners' genes (evaluate.motifs, "
        "evaluate.partner_motifs) in the row's cell, from data.rnaseq_dir: what tells a held-out cell's partners, "
        "as the gradient-boosted baseline reads it (motif_cnn only; every cell of the shards needs its RNA-seq)",
    )
    summit_classes_bp: list[int] | None = Field(
        None,
        min_length=1,
        description="also feed the DNase input as one-hot classes of the summit's distance from the bin's centre, "
        "split at these edges (bp, e.g. [25, 50, 100, 150, 200, 300]) after a class of its own for no peak "
        "(tf_models.summit_classes; motif_cnn, needs use_dnase); None: the proximity number alone",
    )
    motif_cnn: MotifCNNConfig = Field(default_factory=MotifCNNConfig)
    easyflow: EasyFlowConfig = Field(default_factory=EasyFlowConfig)
    factornet: FactorNetConfig = Field(default_factory=FactorNetConfig)

    @model_validator(mode="after")
    def _summit_ring_reads_dnase(self) -> ModelConfig:
        if self.motif_cnn.summit_ring_bp is not None and not self.use_dnase:
            raise ValueError("motif_cnn.summit_ring_bp reads the DNase input: set use_dnase true, or it null")
        return self

    @model_validator(mode="after")
    def _summit_classes_read_by_motif_cnn(self) -> ModelConfig:
        edges = self.summit_classes_bp
        if edges is None:
            return self
        if self.architecture != "motif_cnn" or not self.use_dnase:
            raise ValueError("summit_classes_bp: read by the motif_cnn architecture from the DNase input (use_dnase)")
        if sorted(set(edges)) != edges or edges[0] <= 0:
            raise ValueError(f"summit_classes_bp must be positive and increase: {edges}")
        return self

    @model_validator(mode="after")
    def _expression_read_by_motif_cnn(self) -> ModelConfig:
        if self.use_expression and self.architecture != "motif_cnn":
            raise ValueError(
                f"use_expression: the {self.architecture} architecture reads no expression (motif_cnn does)"
            )
        if self.motif_cnn.expression_products and not self.use_expression:
            raise ValueError(
                "motif_cnn.expression_products multiplies the matches by the expression: needs use_expression"
            )
        return self
