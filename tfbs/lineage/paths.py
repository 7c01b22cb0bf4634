"""Where a run's model versions, their records and exports are: names and URIs."""

from __future__ import annotations

import json
from typing import Any

from tfbs import storage
from tfbs.errors import BadInputError, MissingInputError

#: Under ``<run_dir>``: one folder per model version, and the ``LATEST`` pointer.
MODELS_DIR = "models"
#: Under ``<run_dir>/models``: the version that last passed evaluation.
LATEST_NAME = "LATEST"
#: Under a version's folder: how it was made.
LINEAGE_NAME = "lineage.json"
#: Under a version's ``export/``, written last: what the model knows (TFs,
#: cells, window, DNase) and which version it is; it marks a whole export.
EXPORT_METADATA = "tfbs_metadata.json"
#: Under ``<run_dir>``: a copy of the ``LATEST`` version's report.
RUN_REPORT_DIR = "report"
#: Under a version's folder: the gradient-boosted baseline its evaluation fitted, which submissions join.
BOOSTED_DIR = "boosted"

#: Under a version's ``export/``: the files prediction loads besides the
#: metadata (TensorFlow's SavedModel: the graph, and the variables' index;
#: their data shards are checked by prefix, :data:`EXPORT_VARIABLES_DATA`).
EXPORT_FILES = ("saved_model.pb", "variables/variables.index")
EXPORT_VARIABLES_DATA = "variables/variables.data-"
#: Under a version's folder: written by ``tfbs evaluate`` when the version
#: fell below the floors, so a scheduled run does not retrain it unchanged.
FLOOR_FAILURE_NAME = "floors_failed.json"
#: The model format of versions whose lineage predates the field: the model
#: code as it was when formats began to be counted. Their names carry no
#: format; later formats add ``-m<format>`` (:func:`version_name`).
FIRST_MODEL_FORMAT = 1


def models_uri(run_dir: str) -> str:
    """``<run_dir>/models``: every model version of a run, and ``LATEST``."""
    return f"{run_dir.rstrip('/')}/{MODELS_DIR}"


def model_uri(run_dir: str, version: str) -> str:
    """``<run_dir>/models/<version>``: checkpoints, export, history, report, lineage."""
    return f"{models_uri(run_dir)}/{version}"


def export_uri(run_dir: str, version: str) -> str:
    """``<run_dir>/models/<version>/export``: the version's SavedModel."""
    return f"{model_uri(run_dir, version)}/export"


#: What the readers of an export's metadata take from it, and the JSON type of each.
_EXPORT_METADATA_TYPES: dict[str, type] = {"tfs": list, "cells": list, "window": int}


def read_export_metadata(export: str) -> dict[str, Any]:
    """The metadata of the export at ``export`` (:data:`EXPORT_METADATA`), checked.

    The file is written last and atomically, so a damaged one was damaged
    after the fact; it is refused in one line rather than failing deep in
    a stage that reads it.

    Raises
    ------
    MissingInputError
        If the export has no metadata (no whole export).
    BadInputError
        Naming the file, the line and why: not UTF-8, not JSON, not a JSON
        object, or without ``tfs``, ``cells`` or ``window`` of their type.
    """
    uri = f"{export}/{EXPORT_METADATA}"
    if not storage.exists(uri):
        raise MissingInputError(f"{uri}: not found: no whole export (run `tfbs train`)")
    redo = f"delete {export} and run `tfbs train` to export the model again"
    with storage.open_input(uri, compression=None) as stream:
        raw = stream.read()
    try:
        tree = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise BadInputError(uri, raw[: err.start].count(b"\n") + 1, f"not UTF-8 text ({redo})") from None
    except json.JSONDecodeError as err:
        raise BadInputError(uri, err.lineno, f"not valid JSON: {err.msg} at column {err.colno} ({redo})") from None
    if not isinstance(tree, dict):
        raise BadInputError(uri, 1, f"expected a JSON object, found {type(tree).__name__} ({redo})")
    for key, kind in _EXPORT_METADATA_TYPES.items():
        # bool is an int to Python, not a window.
        if not isinstance(tree.get(key), kind) or isinstance(tree.get(key), bool):
            raise BadInputError(uri, 1, f"no {key!r} {kind.__name__} in the metadata ({redo})")
    return tree


def report_uri(run_dir: str, version: str) -> str:
    """``<run_dir>/models/<version>/report``: the version's evaluation and submissions."""
    return f"{model_uri(run_dir, version)}/report"


def boosted_uri(run_dir: str, version: str) -> str:
    """``<run_dir>/models/<version>/boosted``: the baseline fitted on the version's training rows."""
    return f"{model_uri(run_dir, version)}/{BOOSTED_DIR}"


def run_report_uri(run_dir: str) -> str:
    """``<run_dir>/report``: a copy of the ``LATEST`` version's report (``report.json`` and plots)."""
    return f"{run_dir.rstrip('/')}/{RUN_REPORT_DIR}"


def lineage_uri(run_dir: str, version: str) -> str:
    """``<run_dir>/models/<version>/lineage.json``."""
    return f"{model_uri(run_dir, version)}/{LINEAGE_NAME}"


def latest_uri(run_dir: str) -> str:
    """``<run_dir>/models/LATEST``."""
    return f"{models_uri(run_dir)}/{LATEST_NAME}"
