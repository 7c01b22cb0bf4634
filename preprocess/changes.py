"""What is new since the model that last passed evaluation.

A scheduled run asks this first: with nothing new it ends early, and no
shards are rebuilt and no model trained. "New" is any difference that
would make another model than the ``LATEST`` version, compared with its
lineage: the content of an input preprocessing reads, the ``data`` and
``preprocess`` settings that change the shards' rows (both in the input
fingerprint, :mod:`preprocess.fingerprint`), what the model learns from in
the ``train`` section, or the model code's format. Where files are and how
shards are laid out are no part of it.

Two more answers keep the schedule from sticking or churning:

- ``LATEST`` counts only with its whole export (what prediction loads); a
  missing one is work to do, whatever else is the same.
- A version made from exactly these inputs and settings that fell below
  evaluation's floors (under the same floors) is not trained again: its
  failure is the answer until something changes, and an alarm
  (``tfbs changes`` exits with its own code, the DAG's check fails), not a
  quiet skip: a schedule that would otherwise skip every week hides it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from preprocess.fingerprint import changed_inputs, input_fingerprint
from tfbs.config import PipelineConfig
from tfbs.lineage import (
    FloorFailure,
    Lineage,
    export_problem,
    export_uri,
    list_versions,
    read_floor_failure,
    read_latest,
    read_lineage,
    training_config_digest,
)


@dataclass(frozen=True)
class Changes:
    """The answer: what differs, the version it was compared with, and a failed version of these inputs."""

    changed: list[str]
    latest_version: str | None
    failed: FloorFailure | None = None

    @property
    def anything_new(self) -> bool:
        """Whether the pipeline has work to do."""
        return bool(self.changed) and self.failed is None

    def describe(self) -> str:
        """One line for the log and the scheduler."""
        if self.failed is not None:
            latest = f"LATEST is {self.latest_version}" if self.latest_version else "no version has passed yet"
            return (
                f"nothing to retry: model version {self.failed.version} failed its floors on these inputs and "
                f"settings ({'; '.join(self.failed.failures)}); not retried, and every scheduled run fails, until "
                f"an input, setting, floor or the model's code changes ({latest})"
            )
        if self.latest_version is None:
            return "no model version has passed evaluation yet: run the pipeline"
        if not self.changed:
            return f"nothing new since model version {self.latest_version}: inputs and configuration unchanged"
        return f"new since model version {self.latest_version}: {', '.join(self.changed)}"


def differences(
    lineage: Lineage, fingerprint: dict[str, Any], train_digest: str, model_format: int, model_code: str | None = None
) -> list[str]:
    """What makes a model trained now another than ``lineage``'s, in words; empty if nothing.

    Parameters
    ----------
    lineage
        A version's lineage.
    fingerprint
        :func:`preprocess.fingerprint.input_fingerprint` of the inputs now.
    train_digest
        :func:`tfbs.lineage.training_config_digest` of the configuration now.
    model_format
        The model code's format now (``tf_models.MODEL_FORMAT``).
    model_code
        The recorded fingerprint of the model's code now
        (``tf_models.model_format.recorded_model_code()``).
    """
    changed = changed_inputs(lineage.input_fingerprint or {}, fingerprint)
    if lineage.training_config_digest != train_digest:
        changed.append("configuration (train)")
    if lineage.model_format != model_format:
        changed.append(f"model format {lineage.model_format} -> {model_format}")
    if lineage.model_code != model_code:
        was = lineage.model_code[:12] if lineage.model_code else "(before code fingerprints)"
        changed.append(f"model code {was} -> {model_code[:12] if model_code else None}")
    return changed


def floor_failures(config: PipelineConfig) -> list[tuple[Lineage, FloorFailure]]:
    """Every version that fell below the floors now configured, with its record, newest first."""
    floors = (config.evaluate.min_mean_auroc, config.evaluate.min_mean_auprc)
    found = []
    for lineage in reversed(list_versions(config.run_dir)):
        failure = read_floor_failure(config.run_dir, lineage.version)
        if failure is not None and failure.held_to(*floors):
            found.append((lineage, failure))
    return found


def failed_alike(
    failures: list[tuple[Lineage, FloorFailure]],
    fingerprint: dict[str, Any],
    train_digest: str,
    model_format: int,
    model_code: str | None = None,
) -> FloorFailure | None:
    """The first of ``failures`` made from exactly these inputs, settings and model code, if any."""
    for lineage, failure in failures:
        if not differences(lineage, fingerprint, train_digest, model_format, model_code):
            return failure
    return None


def changes_since_latest(config: PipelineConfig, model_format: int, model_code: str | None = None) -> Changes:
    """Compare this configuration and its inputs with the ``LATEST`` version's lineage and export.

    Parameters
    ----------
    config
        The pipeline configuration; its inputs are hashed (content digests,
        :func:`preprocess.fingerprint.input_fingerprint`).
    model_format
        The format of the model code that would train now (``tf_models.MODEL_FORMAT``).
    model_code
        The recorded fingerprint of that code (``tf_models.model_format.recorded_model_code()``).

    Returns
    -------
    Changes
        Nothing new only when the ``LATEST`` version, with its whole export,
        was trained from shards of exactly this content and these settings,
        the same training settings, model format and model code; or when a version of
        exactly these failed the same floors.
    """
    latest = read_latest(config.run_dir)
    lineage = read_lineage(config.run_dir, latest.version) if latest is not None else None
    train_digest = training_config_digest(config)
    if latest is None or lineage is None:
        # Nothing to compare with but failed versions: the inputs are hashed only if there are some.
        failures = floor_failures(config)
        failed = (
            failed_alike(failures, input_fingerprint(config), train_digest, model_format, model_code)
            if failures
            else None
        )
        return Changes(["no evaluated model"], None, failed)
    fingerprint = input_fingerprint(config)
    # Predict loads LATEST's export: without it the run must train, however alike the inputs are.
    problem = export_problem(export_uri(config.run_dir, latest.version), lineage)
    changed = differences(lineage, fingerprint, train_digest, model_format, model_code)
    if problem is not None:
        return Changes([f"export of model version {latest.version} unusable ({problem})", *changed], latest.version)
    if not changed:
        return Changes([], latest.version)
    return Changes(
        changed,
        latest.version,
        failed_alike(floor_failures(config), fingerprint, train_digest, model_format, model_code),
    )
