"""Model versions and their lineage: which shards and configuration made a model.

A run keeps every model it trains under ``<run_dir>/models/<version>/``
(checkpoints, export, history, report), each with a ``lineage.json`` written
before training starts. The version's name comes from its content, the
shard manifest's digest and the digest of the training configuration
(``<manifest[:10]>-<train[:8]>``; the ``train`` section less where it
runs, ``train.placement``; and ``-m<format>`` for a model format
after the first), unless ``train.version`` names it. So a run killed
mid-training resumes its own version when run again, a rerun on the same
shards and configuration finds its version finished, and new shards, a new
``train`` section or new model code train a new version beside the old ones.

``<run_dir>/models/LATEST`` names the version that last passed evaluation;
prediction uses it, with its whole export (:func:`export_problem`). A
version that fell below evaluation's floors holds ``floors_failed.json``
(:class:`FloorFailure`), so a scheduled run does not retrain it unchanged.

The parts, one module each: ``paths`` (where things are), ``naming``
(digests and a version's name), ``records`` (``lineage.json``), ``pointers``
(``floors_failed.json``, ``LATEST``), ``retention`` (pruning old versions).
This package is core: it imports no stage package. The manifest arrives as
JSON text, a dict, or any object with pydantic's ``model_dump``.
"""

from tfbs.lineage.naming import (
    canonical_json,
    config_digest,
    manifest_digest,
    manifest_tree,
    training_config,
    training_config_digest,
    version_name,
)
from tfbs.lineage.paths import (
    EXPORT_FILES,
    EXPORT_METADATA,
    EXPORT_VARIABLES_DATA,
    FIRST_MODEL_FORMAT,
    FLOOR_FAILURE_NAME,
    LATEST_NAME,
    LINEAGE_NAME,
    MODELS_DIR,
    RUN_REPORT_DIR,
    boosted_uri,
    export_uri,
    latest_uri,
    lineage_uri,
    model_uri,
    models_uri,
    read_export_metadata,
    report_uri,
    run_report_uri,
)
from tfbs.lineage.pointers import (
    FloorFailure,
    Latest,
    chosen_version,
    clear_floor_failure,
    floor_failure_uri,
    read_floor_failure,
    read_latest,
    write_floor_failure,
    write_latest,
)
from tfbs.lineage.records import (
    DamagedExportError,
    Lineage,
    LineageError,
    claim_version,
    export_damage,
    export_problem,
    list_versions,
    read_lineage,
    require_lineage,
    require_whole_export,
    write_lineage,
)
from tfbs.lineage.retention import (
    prunable_versions,
    prune_versions,
)

__all__ = [
    "EXPORT_FILES",
    "EXPORT_METADATA",
    "EXPORT_VARIABLES_DATA",
    "FIRST_MODEL_FORMAT",
    "FLOOR_FAILURE_NAME",
    "DamagedExportError",
    "FloorFailure",
    "LATEST_NAME",
    "LINEAGE_NAME",
    "Latest",
    "Lineage",
    "LineageError",
    "MODELS_DIR",
    "RUN_REPORT_DIR",
    "boosted_uri",
    "canonical_json",
    "chosen_version",
    "claim_version",
    "clear_floor_failure",
    "config_digest",
    "export_damage",
    "export_problem",
    "export_uri",
    "floor_failure_uri",
    "latest_uri",
    "lineage_uri",
    "list_versions",
    "manifest_digest",
    "manifest_tree",
    "model_uri",
    "models_uri",
    "prunable_versions",
    "prune_versions",
    "read_export_metadata",
    "read_floor_failure",
    "read_latest",
    "read_lineage",
    "report_uri",
    "require_lineage",
    "require_whole_export",
    "run_report_uri",
    "training_config",
    "training_config_digest",
    "version_name",
    "write_floor_failure",
    "write_latest",
    "write_lineage",
]
