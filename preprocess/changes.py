"""What is new since the model that last passed evaluation.

A scheduled run asks this first: with nothing new it ends early, and no
shards are rebuilt and no model trained. "New" is any difference from the
lineage of the ``LATEST`` version: the content of an input preprocessing
reads, the ``data``/``preprocess`` sections (both in the input fingerprint),
or what the model learns from in the ``train`` section.
"""

from __future__ import annotations

from dataclasses import dataclass

from preprocess.fingerprint import changed_inputs, input_fingerprint
from tfbs.config import PipelineConfig
from tfbs.lineage import read_latest, read_lineage, training_config_digest


@dataclass(frozen=True)
class Changes:
    """The answer: what differs, and the version it was compared with."""

    changed: list[str]
    latest_version: str | None

    @property
    def anything_new(self) -> bool:
        return bool(self.changed)

    def describe(self) -> str:
        """One line for the log and the scheduler."""
        if self.latest_version is None:
            return "no model version has passed evaluation yet: run the pipeline"
        if not self.changed:
            return f"nothing new since model version {self.latest_version}: inputs and configuration unchanged"
        return f"new since model version {self.latest_version}: {', '.join(self.changed)}"


def changes_since_latest(config: PipelineConfig) -> Changes:
    """Compare this configuration and its inputs with the ``LATEST`` version's lineage.

    Parameters
    ----------
    config
        The pipeline configuration; its inputs are hashed (content digests,
        :func:`preprocess.fingerprint.input_fingerprint`).

    Returns
    -------
    Changes
        Empty ``changed`` only when the ``LATEST`` version was trained from
        shards of exactly these inputs and settings and the same training
        section.
    """
    latest = read_latest(config.run_dir)
    lineage = read_lineage(config.run_dir, latest.version) if latest is not None else None
    if latest is None or lineage is None:
        return Changes(["no evaluated model"], None)
    changed = changed_inputs(lineage.input_fingerprint, input_fingerprint(config))
    if lineage.training_config_digest != training_config_digest(config):
        changed.append("configuration (train)")
    return Changes(changed, latest.version)
