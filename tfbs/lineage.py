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

This module is core: it imports no stage package. The manifest arrives as
JSON text, a dict, or any object with pydantic's ``model_dump``.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from tfbs import __version__, storage
from tfbs.errors import BadInputError, MissingInputError, TfbsError

if TYPE_CHECKING:
    from tfbs.config import PipelineConfig

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


class LineageError(TfbsError):
    """A model version made from other shards or another configuration than this run's."""


class _Dumpable(Protocol):
    def model_dump(self, *, mode: str = ...) -> dict[str, Any]: ...


# --------------------------------------------------------------------------
# Where things are
# --------------------------------------------------------------------------


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


def run_report_uri(run_dir: str) -> str:
    """``<run_dir>/report``: a copy of the ``LATEST`` version's report (``report.json`` and plots)."""
    return f"{run_dir.rstrip('/')}/{RUN_REPORT_DIR}"


def lineage_uri(run_dir: str, version: str) -> str:
    """``<run_dir>/models/<version>/lineage.json``."""
    return f"{model_uri(run_dir, version)}/{LINEAGE_NAME}"


def latest_uri(run_dir: str) -> str:
    """``<run_dir>/models/LATEST``."""
    return f"{models_uri(run_dir)}/{LATEST_NAME}"


# --------------------------------------------------------------------------
# Digests and names
# --------------------------------------------------------------------------


def canonical_json(tree: Any) -> str:
    """One JSON text per value: sorted keys, no whitespace."""
    return json.dumps(tree, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def manifest_tree(manifest: str | bytes | Mapping[str, Any] | _Dumpable) -> dict[str, Any]:
    """The manifest as plain JSON values, from its text, a dict or the model object."""
    if isinstance(manifest, str | bytes):
        tree = json.loads(manifest)
    elif isinstance(manifest, Mapping):
        # Through JSON, so tuples and lists (or other JSON-equal values) compare alike.
        tree = json.loads(json.dumps(manifest))
    else:
        tree = manifest.model_dump(mode="json")
    if not isinstance(tree, dict):
        raise ValueError(f"a manifest is a JSON object, not {type(tree).__name__}")
    return tree


def manifest_digest(manifest: str | bytes | Mapping[str, Any] | _Dumpable) -> str:
    """The sha256 (hex) of a shard manifest's canonical JSON.

    The same manifest gives the same digest whether it comes as the text of
    ``manifest.json`` (any formatting), a dict or the pydantic object.

    Examples
    --------
    >>> manifest_digest('{"b": 1, "a": [1, 2]}') == manifest_digest({"a": (1, 2), "b": 1})
    True
    """
    return _sha256(canonical_json(manifest_tree(manifest)))


def training_config(config: PipelineConfig) -> dict[str, Any]:
    """The ``train`` section (model included) without ``placement`` and ``version`` (``TrainConfig.NOT_RECIPE``).

    When the model's first filters start as known motifs
    (``train.model.motif_cnn.seed_motifs``), the motifs they start as are
    part of the recipe too, under ``seed_motifs_from``: the bytes of
    ``motif_cnn.seed_motif_db`` when set, else the motifs named in
    ``evaluate.motifs`` and the bytes of ``evaluate.motif_db``. Another
    motif file trains another model; where it is does not (the path of
    ``seed_motif_db`` reads as null: the same bytes elsewhere are the same
    recipe).
    """
    tree: dict[str, Any] = config.content_settings({"train"})["train"]
    tree["model"]["motif_cnn"]["seed_motif_db"] = None
    model, evaluate = config.train.model, config.evaluate
    if model.architecture != "motif_cnn" or not model.motif_cnn.seed_motifs:
        return tree
    if model.motif_cnn.seed_motif_db is not None:
        tree["seed_motifs_from"] = {"seed_motif_db_blake3": storage.blake3_of(model.motif_cnn.seed_motif_db)[0]}
    elif evaluate.motifs and evaluate.motif_db:
        tree["seed_motifs_from"] = {
            "motifs": dict(sorted(evaluate.motifs.items())),
            "motif_db_blake3": storage.blake3_of(evaluate.motif_db)[0],
        }
    return tree


def training_config_digest(config: PipelineConfig) -> str:
    """The sha256 (hex) of :func:`training_config`: what a model learns from besides its shards."""
    return _sha256(canonical_json(training_config(config)))


def config_digest(config: PipelineConfig) -> str:
    """The sha256 (hex) of the whole configuration (its source file's name left out)."""
    return _sha256(canonical_json(config.model_dump(mode="json", exclude={"source"})))


def version_name(config: PipelineConfig, manifest_sha: str, model_format: int) -> str:
    """``train.version`` if set, else ``<manifest digest[:10]>-<training config digest[:8]>``.

    A model format after :data:`FIRST_MODEL_FORMAT` adds ``-m<format>``, so
    new model code trains a version of its own instead of resuming one of
    the old code's.
    """
    if config.train.version:
        return config.train.version
    name = f"{manifest_sha[:10]}-{training_config_digest(config)[:8]}"
    return name if model_format == FIRST_MODEL_FORMAT else f"{name}-m{model_format}"


def _utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# --------------------------------------------------------------------------
# The lineage of a version
# --------------------------------------------------------------------------


class Lineage(BaseModel):
    """How one model version was made: ``<run_dir>/models/<version>/lineage.json``.

    Two lineages are of the same model when their ``manifest_digest``,
    ``training_config_digest`` and ``model_format`` agree; the other fields
    are for people.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: str
    manifest_digest: str
    input_fingerprint: Any
    training_config_digest: str
    config_digest: str
    train: dict[str, Any]
    shards_uri: str
    created_at: str
    tfbs_version: str
    #: The model code's format (``tf_models.MODEL_FORMAT``) that trained it.
    model_format: int = FIRST_MODEL_FORMAT

    @classmethod
    def of(
        cls, config: PipelineConfig, manifest: str | bytes | Mapping[str, Any] | _Dumpable, model_format: int
    ) -> Lineage:
        """The lineage a model trained now, from ``manifest``'s shards, by model code of ``model_format``, would have."""
        tree = manifest_tree(manifest)
        digest = manifest_digest(tree)
        return cls(
            version=version_name(config, digest, model_format),
            manifest_digest=digest,
            input_fingerprint=tree.get("fingerprint"),
            training_config_digest=training_config_digest(config),
            config_digest=config_digest(config),
            train=training_config(config),
            shards_uri=config.shards_uri,
            created_at=_utc_now(),
            tfbs_version=__version__,
            model_format=model_format,
        )

    def difference(self, other: Lineage) -> str | None:
        """What makes ``other`` (this run's) another model than this one (on disk), in words; None if nothing.

        Examples
        --------
        >>> a = Lineage(version="v", manifest_digest="3fa2" * 16, input_fingerprint=None,
        ...     training_config_digest="c" * 64, config_digest="", train={"steps": 60}, shards_uri="",
        ...     created_at="", tfbs_version="")
        >>> a.difference(a.model_copy(update={"manifest_digest": "9c01" * 16}))
        'trained from shards manifest 3fa23fa23fa2, these shards are 9c019c019c01'
        """
        found = []
        if other.manifest_digest != self.manifest_digest:
            found.append(
                f"trained from shards manifest {self.manifest_digest[:12]}, these shards are {other.manifest_digest[:12]}"
            )
        if other.training_config_digest != self.training_config_digest:
            changed = _changed_keys(self.train, other.train)
            if changed:
                found.append("trained with " + ", ".join(f"{key}={old!r} (now {new!r})" for key, old, new in changed))
            else:
                found.append(
                    f"trained with train config {self.training_config_digest[:12]}, "
                    f"this run's is {other.training_config_digest[:12]}"
                )
        if other.model_format != self.model_format:
            found.append(f"trained by model format {self.model_format}, this code's is {other.model_format}")
        return "; ".join(found) or None


def _changed_keys(old: Mapping[str, Any], new: Mapping[str, Any], prefix: str = "train") -> list[tuple]:
    """``(dotted key, old value, new value)`` of every leaf that differs, at most 4."""
    changed: list[tuple] = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            changed += _changed_keys(a, b, f"{prefix}.{key}")
        elif a != b:
            changed.append((f"{prefix}.{key}", a, b))
    return changed[:4]


_Record = TypeVar("_Record", bound=BaseModel)


def _read_record(uri: str, model: type[_Record], what: str) -> _Record | None:
    """The JSON record at ``uri`` validated as ``model``, or None if there is none.

    Raises
    ------
    LineageError
        If the file is there but is not such a record (one line: where and why).
    """
    if not storage.exists(uri):
        return None
    try:
        return model.model_validate_json(storage.read_text(uri))
    except ValidationError as err:
        problem = err.errors()[0]
        where = ".".join(map(str, problem["loc"])) or "record"
        raise LineageError(f"{uri}: not {what} ({where}: {problem['msg']})") from None


def read_lineage(run_dir: str, version: str) -> Lineage | None:
    """The lineage of ``version``, or None if it has none (not trained yet).

    Raises
    ------
    LineageError
        If ``lineage.json`` is there but is not a lineage record.
    """
    return _read_record(lineage_uri(run_dir, version), Lineage, "a lineage record")


def write_lineage(run_dir: str, lineage: Lineage) -> str:
    """Write ``lineage.json`` of ``lineage.version``; returns its URI."""
    uri = lineage_uri(run_dir, lineage.version)
    storage.write_text(uri, lineage.model_dump_json(indent=2))
    return uri


def claim_version(run_dir: str, lineage: Lineage) -> Lineage:
    """The version folder for a model of ``lineage``: its own, or a new one.

    Writes ``lineage.json`` if the version has none yet (before training, so
    a run killed mid-training leaves it), and returns the lineage on disk.

    Raises
    ------
    LineageError
        If the version was made from other shards or another training
        configuration, or holds files but no lineage; one line naming the
        difference.
    """
    uri = lineage_uri(run_dir, lineage.version)
    existing = read_lineage(run_dir, lineage.version)
    if existing is None:
        folder = model_uri(run_dir, lineage.version)
        if storage.exists(folder) and storage.list_files(folder):
            raise LineageError(f"{folder}: holds files but no {LINEAGE_NAME}; set train.version to a new name")
        write_lineage(run_dir, lineage)
        return lineage
    difference = existing.difference(lineage)
    if difference:
        raise LineageError(f"{uri}: {difference}; set train.version to a new name")
    return existing


def require_lineage(run_dir: str, lineage: Lineage) -> Lineage:
    """The lineage on disk of ``lineage.version``, which must be of the same model.

    Raises
    ------
    MissingInputError
        If the version was never trained.
    LineageError
        If it was made from other shards or another training configuration.
    """
    existing = read_lineage(run_dir, lineage.version)
    if existing is None:
        raise MissingInputError(f"{lineage_uri(run_dir, lineage.version)}: not found (run `tfbs train` first)")
    difference = existing.difference(lineage)
    if difference:
        raise LineageError(f"{lineage_uri(run_dir, lineage.version)}: {difference}; set train.version to a new name")
    return existing


def list_versions(run_dir: str) -> list[Lineage]:
    """Every version of the run that has a lineage, oldest first."""
    root = models_uri(run_dir)
    if not storage.exists(root):
        return []
    names = sorted(
        {uri[len(root) + 1 :].split("/")[0] for uri in storage.list_files(root) if uri.endswith(f"/{LINEAGE_NAME}")}
    )
    found = [read_lineage(run_dir, name) for name in names]
    return sorted((lineage for lineage in found if lineage is not None), key=lambda x: (x.created_at, x.version))


def export_problem(export_uri: str, lineage: Lineage) -> str | None:
    """What keeps ``export_uri`` from being a whole export of ``lineage``'s model, in words; None if nothing.

    Whole means what prediction loads: the SavedModel's graph, the
    variables' index and data, and the metadata (written last, naming the
    version and its shards).
    """
    base = export_uri.rstrip("/")
    files = set(storage.list_files(base)) if storage.exists(base) else set()
    if not files:
        return f"{export_uri}: no export there"
    missing = [name for name in (*EXPORT_FILES, EXPORT_METADATA) if f"{base}/{name}" not in files]
    if not any(uri.startswith(f"{base}/{EXPORT_VARIABLES_DATA}") for uri in files):
        missing.append(f"{EXPORT_VARIABLES_DATA}*")
    if missing:
        return f"{export_uri}: {', '.join(sorted(missing))} missing"
    try:
        metadata = read_export_metadata(base)
    except BadInputError as damaged:
        return str(damaged)
    named = (metadata.get("version"), metadata.get("manifest_digest"))
    if named != (lineage.version, lineage.manifest_digest):
        return f"{export_uri}: {EXPORT_METADATA} names version {named[0]}, not {lineage.version}"
    return None


# --------------------------------------------------------------------------
# Versions below the floors
# --------------------------------------------------------------------------


class FloorFailure(BaseModel):
    """``<run_dir>/models/<version>/floors_failed.json``: the version fell below evaluation's floors.

    With the floors it was held to: other floors may pass it.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: str
    min_mean_auroc: float | None
    min_mean_auprc: float | None
    mean_auroc: float
    mean_auprc: float
    failures: list[str]
    failed_at: str

    def held_to(self, min_mean_auroc: float | None, min_mean_auprc: float | None) -> bool:
        """Whether these are the floors it failed."""
        return (self.min_mean_auroc, self.min_mean_auprc) == (min_mean_auroc, min_mean_auprc)


def floor_failure_uri(run_dir: str, version: str) -> str:
    """``<run_dir>/models/<version>/floors_failed.json``."""
    return f"{model_uri(run_dir, version)}/{FLOOR_FAILURE_NAME}"


def write_floor_failure(
    run_dir: str,
    lineage: Lineage,
    floors: tuple[float | None, float | None],
    means: tuple[float, float],
    failures: list[str],
) -> FloorFailure:
    """Record that ``lineage.version`` fell below ``floors`` (auROC, auPRC) with mean ``means``."""
    record = FloorFailure(
        version=lineage.version,
        min_mean_auroc=floors[0],
        min_mean_auprc=floors[1],
        mean_auroc=means[0],
        mean_auprc=means[1],
        failures=failures,
        failed_at=_utc_now(),
    )
    storage.write_text(floor_failure_uri(run_dir, lineage.version), record.model_dump_json(indent=2))
    return record


def read_floor_failure(run_dir: str, version: str) -> FloorFailure | None:
    """The record of ``version`` falling below the floors, or None if it has none."""
    return _read_record(floor_failure_uri(run_dir, version), FloorFailure, "a floor failure record")


def clear_floor_failure(run_dir: str, version: str) -> None:
    """Remove the record of ``version`` falling below the floors, if there is one (it passed since)."""
    storage.delete_file(floor_failure_uri(run_dir, version))


# --------------------------------------------------------------------------
# LATEST: the version prediction uses
# --------------------------------------------------------------------------


class Latest(BaseModel):
    """``<run_dir>/models/LATEST``: the version that last passed evaluation."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: str
    manifest_digest: str
    mean_auroc: float
    mean_auprc: float
    promoted_at: str


def read_latest(run_dir: str) -> Latest | None:
    """What ``LATEST`` names, or None before any version passed evaluation.

    Raises
    ------
    LineageError
        If the file is there but unreadable as a pointer.
    """
    return _read_record(latest_uri(run_dir), Latest, "a LATEST pointer")


def chosen_version(run_dir: str, requested: str | None = None) -> str:
    """The model version a stage works on: ``requested``, else the one ``LATEST`` names.

    Raises
    ------
    MissingInputError
        If none is requested and no version has passed evaluation yet.
    """
    if requested:
        return requested
    latest = read_latest(run_dir)
    if latest is None:
        raise MissingInputError(
            f"{latest_uri(run_dir)}: not found: no model has passed evaluation yet "
            "(run `tfbs evaluate`, or name one with --model-version)"
        )
    return latest.version


def write_latest(run_dir: str, lineage: Lineage, mean_auroc: float, mean_auprc: float) -> Latest:
    """Point ``LATEST`` at ``lineage.version`` (one write; readers see the old or the new pointer)."""
    latest = Latest(
        version=lineage.version,
        manifest_digest=lineage.manifest_digest,
        mean_auroc=mean_auroc,
        mean_auprc=mean_auprc,
        promoted_at=_utc_now(),
    )
    storage.write_text(latest_uri(run_dir), latest.model_dump_json(indent=2))
    return latest


def prune_versions(run_dir: str, keep: int) -> list[str]:
    """Delete the model versions older than ``LATEST`` beyond the newest ``keep - 1`` of them.

    ``LATEST`` and every version made after it (being trained or evaluated
    now, or below the floors) are never touched, so a scheduled run cannot
    delete what prediction uses or another stage is writing. A version's
    lineage goes last: a prune cut short leaves a version still listed, and
    the next prune finishes it.

    Parameters
    ----------
    run_dir
        The run whose ``models/`` is pruned.
    keep
        How many versions to keep, ``LATEST`` included.

    Returns
    -------
    list of str
        The deleted versions, oldest first.
    """
    latest = read_latest(run_dir)
    if latest is None:
        return []
    versions = list_versions(run_dir)
    names = [lineage.version for lineage in versions]
    if latest.version not in names:
        return []
    older = names[: names.index(latest.version)]
    doomed = older[: max(0, len(older) - (keep - 1))]
    for version in doomed:
        lineage = lineage_uri(run_dir, version)
        for uri in storage.list_files(model_uri(run_dir, version)):
            if uri != lineage:
                storage.delete_file(uri)
        storage.delete_dir(model_uri(run_dir, version))
    return doomed


__all__ = [
    "EXPORT_FILES",
    "EXPORT_METADATA",
    "FIRST_MODEL_FORMAT",
    "FloorFailure",
    "LATEST_NAME",
    "LINEAGE_NAME",
    "Latest",
    "Lineage",
    "LineageError",
    "claim_version",
    "clear_floor_failure",
    "export_problem",
    "floor_failure_uri",
    "config_digest",
    "export_uri",
    "latest_uri",
    "lineage_uri",
    "list_versions",
    "manifest_digest",
    "model_uri",
    "models_uri",
    "prune_versions",
    "read_floor_failure",
    "read_latest",
    "read_lineage",
    "report_uri",
    "require_lineage",
    "run_report_uri",
    "training_config",
    "training_config_digest",
    "version_name",
    "write_floor_failure",
    "write_latest",
    "write_lineage",
]
