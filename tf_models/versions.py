"""Which model version a training makes, claimed on the driver before any cluster starts.

The model goes to its version's folder, ``<run_dir>/models/<version>/``
(:mod:`tfbs.lineage`): a version of other shards or another training
configuration is refused, a finished one is left as it is, and a new one
gets its ``lineage.json`` first. Training resumes only within its version.
"""

from __future__ import annotations

import logging

from tf_models import MODEL_FORMAT
from tf_models.driver_progress import read_history
from tf_models.model_format import recorded_model_code
from tfbs import lineage
from tfbs.config import PipelineConfig
from tfbs.formats.manifest import Manifest
from tfbs.lineage import Lineage

log = logging.getLogger("tfbs.train")


def prepare_version(config: PipelineConfig, manifest: Manifest) -> tuple[Lineage, bool]:
    """Claim the model version of these shards and this configuration, on the driver.

    Returns
    -------
    tuple
        The version's lineage, and whether it already holds a finished
        export of that lineage (then there is nothing to train).

    Raises
    ------
    tfbs.lineage.LineageError
        If the version folder holds a model of other shards or another
        training configuration (possible when ``train.version`` names it).
    """
    version_lineage = lineage.claim_version(
        config.run_dir, Lineage.of(config, manifest, MODEL_FORMAT, recorded_model_code())
    )
    return version_lineage, finished_export(
        lineage.export_uri(config.run_dir, version_lineage.version), version_lineage
    )


def finished_export(export_uri: str, version_lineage: Lineage) -> bool:
    """Whether ``export_uri`` holds a whole export of the model of ``version_lineage`` (:func:`tfbs.lineage.export_problem`).

    The export's metadata is written last (:func:`tf_models.export.export_version`); a SavedModel
    file deleted since makes the export unfinished too, so it is trained again.
    """
    return lineage.export_problem(export_uri, version_lineage) is None


def up_to_date_summary(config: PipelineConfig, version_lineage: Lineage) -> dict:
    """What :func:`train_on_spark` returns for a version already trained and exported."""
    model_uri = lineage.model_uri(config.run_dir, version_lineage.version)
    log.info(
        "model %s is up to date (shards manifest %s, train config %s): not retrained; %s",
        version_lineage.version,
        version_lineage.manifest_digest[:12],
        version_lineage.training_config_digest[:12],
        f"{model_uri}/export",
    )
    return {
        "strategy": config.train.placement.strategy,
        "seconds": 0.0,
        "history": read_history(model_uri),
        "version": version_lineage.version,
        "model_uri": model_uri,
        "up_to_date": True,
    }
