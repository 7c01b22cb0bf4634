"""How a model is trained: the ``train`` section."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator, model_validator

from tfbs.config.base import Identity, Section
from tfbs.config.model import ModelConfig
from tfbs.config.placement import PlacementConfig


class TrainConfig(Section):
    """Distributed training (``tfbs train``).

    The model goes to ``<run_dir>/models/<version>/`` (:mod:`tfbs.lineage`):
    the shards and this section, less ``placement`` (where and how long it
    runs) and ``version`` (a name), name the version, so changing them
    trains a new one.
    """

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
    shuffle_labels: bool = Field(
        False,
        description="a negative control: permute the training labels within each batch, so the model can learn "
        "nothing from them; evaluation's floors must then refuse it (a model version of its own)",
    )
    early_stopping_patience: int | None = Field(
        3,
        gt=0,
        description="stop after this many checkpoints without a better validation auPRC (mean over TF/cells) and "
        "export the best one's weights (None: train the whole budget, export the last weights)",
    )
    weight_average: float | None = Field(
        None,
        gt=0,
        lt=1,
        description="keep a moving average of the weights, this momentum per step (tf_models.weight_average), and "
        "validate and export the model at it, not at the last step's weights (None: off)",
    )
    validation_examples: int = Field(20000, gt=0, description="validation rows scored at each checkpoint")
    positive_fraction: float | None = Field(
        None, gt=0, lt=1, description="share of positives per batch (None: as drawn by preprocessing)"
    )
    # Allowed without GPUs: float16 runs (slowly) on CPU, which is how it is
    # tested, and strategy local may train on the driver's own GPU. The
    # training process logs a warning when it sees no GPU.
    mixed_precision: bool = Field(False, description="keras mixed_float16 in training; logits stay float32")
    model: ModelConfig = Field(default_factory=ModelConfig)
    placement: Annotated[PlacementConfig, Identity.PLACEMENT] = Field(
        default_factory=PlacementConfig,
        description="where and how training runs, and how long it may wait: no part of a model version",
    )
    version: Annotated[str | None, Identity.NAME] = Field(
        None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
        max_length=100,
        description="name of the model version (None: from the shards' manifest and this section, tfbs.lineage)",
    )

    @model_validator(mode="after")
    def _consistent(self) -> "TrainConfig":
        if self.checkpoint_every_steps and self.checkpoint_every_steps % self.steps_per_execution:
            raise ValueError("checkpoint_every_steps must be a multiple of steps_per_execution")
        return self

    @field_validator("version")
    @classmethod
    def _not_the_pointer(cls, version: str | None) -> str | None:
        if version == "LATEST":
            raise ValueError("LATEST names the pointer to the newest evaluated version, not a version")
        return version
