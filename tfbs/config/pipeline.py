"""The whole configuration of a run, and what of it names what the pipeline makes."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import Field, model_validator

from tfbs.config.base import Section, identity_settings, nested_section
from tfbs.config.inputs import DataConfig, GenerateConfig, PreprocessConfig, SparkConfig
from tfbs.config.stages import EvaluateConfig, ExplainConfig, PredictConfig, UnseenConfig
from tfbs.config.train import TrainConfig
from tfbs.storage import to_uri


class PipelineConfig(Section):
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
            update: dict[str, Any] = {"motif_db": self.generate.motif_db, "motifs": motifs}
            if self.generate.profile == "realistic" and not self.evaluate.partner_motifs:
                update["partner_motifs"] = {p.name: p.motif for p in self.generate.realistic.partners}
            object.__setattr__(self, "evaluate", self.evaluate.model_copy(update=update))
        return self

    @model_validator(mode="after")
    def _heldout_cells_scorable(self) -> "PipelineConfig":
        # A learned input per cell type has nothing to say about a cell no label of which trained it.
        if self.data.heldout_cells and self.train.model.use_cell_type:
            raise ValueError(
                f"train.model.use_cell_type: a cell-type input cannot score the held-out cells "
                f"{self.data.heldout_cells} (data.heldout_cells); set it false"
            )
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

        Each field counts as its type's :class:`~tfbs.config.base.Identity`
        says: ``data``'s locations only by whether each is set, ``preprocess``'s
        layout and ``train``'s ``placement`` and ``version`` not at all.
        """
        tree = self.model_dump(mode="json", include=sections)
        return {name: identity_settings(self.section_type(name), value) for name, value in tree.items()}

    @classmethod
    def section_type(cls, name: str) -> type[Section]:
        """The class of the section ``name`` (``data``: :class:`DataConfig`)."""
        section = nested_section(cls.model_fields[name])
        if section is None:
            raise KeyError(f"{name} is not a section of the configuration")
        return section

    def content_digest(self, sections: set[str]) -> str:
        """A short hash of :meth:`content_settings`: equal exactly when those settings are."""
        payload = json.dumps(self.content_settings(sections), sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    @property
    def shards_uri(self) -> str:
        return self.shards_dir
