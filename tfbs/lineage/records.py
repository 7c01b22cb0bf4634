"""A version's lineage record (``lineage.json``): written before training, compared on every run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from tfbs import __version__, storage
from tfbs.errors import BadInputError, MissingInputError, TfbsError
from tfbs.lineage.naming import (
    Dumpable,
    config_digest,
    manifest_digest,
    manifest_tree,
    training_config,
    training_config_digest,
    utc_now,
    version_name,
)
from tfbs.lineage.paths import (
    EXPORT_FILES,
    EXPORT_METADATA,
    EXPORT_VARIABLES_DATA,
    FIRST_MODEL_FORMAT,
    LINEAGE_NAME,
    lineage_uri,
    model_uri,
    models_uri,
    read_export_metadata,
)
from tfbs.storage.content_keys import unlike_record

if TYPE_CHECKING:
    from tfbs.config import PipelineConfig


class LineageError(TfbsError):
    """A model version made from other shards or another configuration than this run's."""


class DamagedExportError(TfbsError):
    """An export that is not whole, or whose files are not what its digests record; the message names the file."""


class Lineage(BaseModel):
    """How one model version was made: ``<run_dir>/models/<version>/lineage.json``.

    Two lineages are of the same model when their ``manifest_digest``,
    ``training_config_digest``, ``model_format`` and ``model_code`` agree;
    the other fields are for people.
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
    #: The recorded fingerprint of the code that defines the model and its
    #: training (``tf_models.model_format``); None in lineages from before it.
    model_code: str | None = None

    @classmethod
    def of(
        cls,
        config: PipelineConfig,
        manifest: str | bytes | Mapping[str, Any] | Dumpable,
        model_format: int,
        model_code: str | None = None,
    ) -> Lineage:
        """The lineage a model trained now, from ``manifest``'s shards, by model code of ``model_format`` and
        fingerprint ``model_code`` (``tf_models.model_format.recorded_model_code()``), would have."""
        tree = manifest_tree(manifest)
        digest = manifest_digest(tree)
        return cls(
            version=version_name(config, digest, model_format, model_code),
            manifest_digest=digest,
            input_fingerprint=tree.get("fingerprint"),
            training_config_digest=training_config_digest(config),
            config_digest=config_digest(config),
            train=training_config(config),
            shards_uri=config.shards_uri,
            created_at=utc_now(),
            tfbs_version=__version__,
            model_format=model_format,
            model_code=model_code,
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
        if other.model_code != self.model_code:
            found.append(f"trained by model code {_code(self.model_code)}, this code's is {_code(other.model_code)}")
        return "; ".join(found) or None


def _code(fingerprint: str | None) -> str:
    """A model code fingerprint in words: its first 12 digits, or when there was none."""
    return fingerprint[:12] if fingerprint else "(before code fingerprints)"


def _changed_keys(old: Mapping[str, Any], new: Mapping[str, Any], prefix: str = "train") -> list[tuple]:
    """``(dotted key, old value, new value)`` of every leaf that differs, at most 4."""
    changed: list[tuple] = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key, _UNSET), new.get(key, _UNSET)
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            changed += _changed_keys(a, b, f"{prefix}.{key}")
        elif a != b:
            changed.append((f"{prefix}.{key}", a, b))
    return changed[:4]


class _Unset:
    """A key one side's training settings lack (a setting newer than the lineage, or one retired since)."""

    def __repr__(self) -> str:
        return "<no such setting>"


_UNSET = _Unset()


_Record = TypeVar("_Record", bound=BaseModel)


def read_record(uri: str, model: type[_Record], what: str) -> _Record | None:
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
    return read_record(lineage_uri(run_dir, version), Lineage, "a lineage record")


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
        raise MissingInputError(
            f"{lineage_uri(run_dir, lineage.version)}: not found ({_nearest_version(run_dir, lineage)})"
        )
    difference = existing.difference(lineage)
    if difference:
        raise LineageError(f"{lineage_uri(run_dir, lineage.version)}: {difference}; set train.version to a new name")
    return existing


def _nearest_version(run_dir: str, lineage: Lineage) -> str:
    """What to do when ``lineage``'s version was never trained, naming the run's newest of the same shards if any.

    A version's name digests its training settings and model code, so a
    setting changed (or added by a newer tfbs) since training names another
    version: saying which setting differs is the way back to the trained one.
    """
    versions = list_versions(run_dir)
    same_shards = [other for other in versions if other.manifest_digest == lineage.manifest_digest]
    if not same_shards:
        return "run `tfbs train` first"
    nearest = same_shards[-1]
    return (
        f"run `tfbs train` first, or evaluate with the settings {nearest.version} of these shards was made with: "
        f"{nearest.difference(lineage)}"
    )


def list_versions(run_dir: str) -> list[Lineage]:
    """Every version of the run that has a lineage, oldest first."""
    root = models_uri(run_dir)
    if not storage.exists(root):
        return []
    # A version's lineage is <run_dir>/models/<version>/lineage.json; the listing's URIs may carry a scheme the
    # run_dir lacks (file://), so the version is read from the end of each.
    tails = [uri.rsplit("/", 3)[-3:] for uri in storage.list_files(root)]
    names = sorted(
        {version for parent, version, name in tails if parent == root.rsplit("/", 1)[-1] and name == LINEAGE_NAME}
    )
    found = [read_lineage(run_dir, name) for name in names]
    return sorted((lineage for lineage in found if lineage is not None), key=lambda x: (x.created_at, x.version))


def export_problem(export_uri: str, lineage: Lineage) -> str | None:
    """What keeps ``export_uri`` from being a whole export of ``lineage``'s model, in words; None if nothing.

    Whole means what prediction loads: the SavedModel's graph, the
    variables' index and data, and the metadata (written last, naming the
    version and its shards), each file holding the bytes the export's
    digests record (:func:`export_damage`).
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
    # Last, as it reads every byte: a file truncated or overwritten since export.
    return export_damage(base)


def export_damage(export_uri: str) -> str | None:
    """``<file>: <reason>`` for the first file of the export unlike its digests record; None if all are alike.

    The export records the BLAKE3 of each of its files (``tfbs_digests.json``,
    :func:`tfbs.storage.content_keys.record_digests`) before its metadata; every
    reader that trusts an export (``tfbs changes``, train's up-to-date
    check, evaluate, predict) checks its bytes against that record, so a
    truncated ``variables.data-*`` retrains instead of failing in a Spark
    task. An export without the record counts as damaged: its files cannot
    be told from damaged ones.
    """
    base = export_uri.rstrip("/")
    fs, path = storage.filesystem(base)
    found = unlike_record(fs, path)
    return None if found is None else f"{base}/{found[0]}: {found[1]}"


def require_whole_export(export_uri: str, lineage: Lineage | None = None) -> None:
    """Refuse, in one line naming the file, an export a stage cannot trust.

    Parameters
    ----------
    export_uri
        The version's export.
    lineage
        The version's lineage, when the caller knows which model it expects
        (then the export must also name that version); None checks only
        what is there against the export's own records.

    Raises
    ------
    MissingInputError
        If the export has no metadata (never finished).
    BadInputError
        If the metadata is damaged (file, line, reason).
    DamagedExportError
        If a file is missing or not what the export's digests record.
    """
    read_export_metadata(export_uri.rstrip("/"))
    problem = export_problem(export_uri, lineage) if lineage is not None else export_damage(export_uri)
    if problem is not None:
        raise DamagedExportError(f"{problem} (run `tfbs train`: it trains and exports this version again)")
