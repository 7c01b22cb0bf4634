"""A version's name from its content: the shards manifest's digest and the training recipe's."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from tfbs import storage
from tfbs.errors import MissingInputError
from tfbs.lineage.paths import FIRST_MODEL_FORMAT

if TYPE_CHECKING:
    from tfbs.config import PipelineConfig


class Dumpable(Protocol):
    def model_dump(self, *, mode: str = ...) -> dict[str, Any]: ...


def canonical_json(tree: Any) -> str:
    """One JSON text per value: sorted keys, no whitespace."""
    return json.dumps(tree, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def manifest_tree(manifest: str | bytes | Mapping[str, Any] | Dumpable) -> dict[str, Any]:
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


#: Manifest keys that say when or from where shards were built, not what they hold.
_PLACE_KEYS = ("created_unix", "config_digest")


def manifest_content(tree: Mapping[str, Any]) -> dict[str, Any]:
    """A manifest's tree without what names places and times: what a model version is named by.

    Left out: when the shards were built (``created_unix``), the digest of
    the whole configuration (it holds ``run_dir`` and other places; the
    settings that change rows are in the fingerprint's own digest), every
    input's and file's location (``uri``, ``path``). What stays, the
    counts, the settings and every input's and file's content digest, says
    what the shards hold: identical shards rebuilt (deleted, a schema bump,
    a crash mid-swap) or a moved run folder keep their version.

    Examples
    --------
    >>> a = {"created_unix": 1, "parquet": {"test": [{"path": "/a/x.parquet", "rows": 2, "blake3": "b"}]}}
    >>> b = {"created_unix": 9, "parquet": {"test": [{"path": "/b/x.parquet", "rows": 2, "blake3": "b"}]}}
    >>> manifest_content(a) == manifest_content(b)
    True
    """

    def strip(value: Any) -> Any:
        if isinstance(value, Mapping):
            return {key: strip(item) for key, item in value.items() if key not in ("uri", "path")}
        if isinstance(value, list):
            return [strip(item) for item in value]
        return value

    return strip({key: value for key, value in tree.items() if key not in _PLACE_KEYS})


def manifest_digest(manifest: str | bytes | Mapping[str, Any] | Dumpable) -> str:
    """The sha256 (hex) of a shard manifest's content (:func:`manifest_content`), as canonical JSON.

    The same manifest gives the same digest whether it comes as the text of
    ``manifest.json`` (any formatting), a dict or the pydantic object, and
    wherever and whenever its shards were built.

    Examples
    --------
    >>> manifest_digest('{"b": 1, "a": [1, 2]}') == manifest_digest({"a": (1, 2), "b": 1})
    True
    """
    return _sha256(canonical_json(manifest_content(manifest_tree(manifest))))


def training_config(config: PipelineConfig) -> dict[str, Any]:
    """The ``train`` section (model included) as a model version's identity holds it (``placement`` and ``version`` left out).

    When the model's first filters start as known motifs
    (``train.model.motif_cnn.seed_motifs``), the motifs they start as are
    part of the recipe too, under ``seed_motifs_from``: the bytes of
    ``motif_cnn.seed_motif_db`` when set, else the motifs named in
    ``evaluate.motifs`` and the bytes of ``evaluate.motif_db``. Another
    motif file trains another model; where it is does not (the path of
    ``seed_motif_db`` reads as null: the same bytes elsewhere are the same
    recipe). A model reading expression (``train.model.use_expression``)
    has the BLAKE3 of each RNA-seq file of ``data.rnaseq_dir`` in its
    recipe, under ``expression_from``: new RNA-seq trains a new version.
    """
    tree: dict[str, Any] = config.content_settings({"train"})["train"]
    model, evaluate = config.train.model, config.evaluate
    if model.use_expression:
        tree["expression_from"] = _expression_digests(config.data.rnaseq_dir)
    if model.architecture != "motif_cnn" or not model.motif_cnn.seed_motifs:
        return tree
    if model.motif_cnn.seed_motif_db is not None:
        seed_db = _motif_file_digest(model.motif_cnn.seed_motif_db, "train.model.motif_cnn.seed_motif_db")
        tree["seed_motifs_from"] = {"seed_motif_db_blake3": seed_db}
    elif evaluate.motifs and evaluate.motif_db:
        tree["seed_motifs_from"] = {
            "motifs": dict(sorted(evaluate.motifs.items())),
            "motif_db_blake3": _motif_file_digest(evaluate.motif_db, "evaluate.motif_db"),
        }
    return tree


def _expression_digests(rnaseq_dir: str | None) -> dict[str, str]:
    """BLAKE3 of each ``gene_expression.*.tsv`` of ``rnaseq_dir``, by file name (none without RNA-seq)."""
    if rnaseq_dir is None or not storage.exists(rnaseq_dir):
        return {}
    files = [uri for uri in storage.list_files(rnaseq_dir) if uri.rsplit("/", 1)[-1].startswith("gene_expression.")]
    return {uri.rsplit("/", 1)[-1]: storage.blake3_of(uri)[0] for uri in files}


def _motif_file_digest(uri: str, key: str) -> str:
    """BLAKE3 of the motif file ``uri`` that ``key`` names.

    Raises
    ------
    MissingInputError
        If there is no such file, in one line naming the file and the key
        (every stage that names a version reads it: ``changes``, train, evaluate).
    """
    if not storage.exists(uri):
        raise MissingInputError(f"{uri}: not found (the MEME motif file {key} names)")
    return storage.blake3_of(uri)[0]


def training_config_digest(config: PipelineConfig) -> str:
    """The sha256 (hex) of :func:`training_config`: what a model learns from besides its shards."""
    return _sha256(canonical_json(training_config(config)))


def config_digest(config: PipelineConfig) -> str:
    """The sha256 (hex) of the whole configuration (its source file's name left out)."""
    return _sha256(canonical_json(config.model_dump(mode="json", exclude={"source"})))


def version_name(config: PipelineConfig, manifest_sha: str, model_format: int, model_code: str | None = None) -> str:
    """``train.version`` if set, else ``<manifest digest[:10]>-<training config digest[:8]>``.

    A model format after :data:`FIRST_MODEL_FORMAT` adds ``-m<format>``, and
    the fingerprint of the model's code (``tf_models.model_format``), when
    given, ``-c<fingerprint[:8]>``: new model code trains a version of its
    own instead of resuming one of the old code's.
    """
    if config.train.version:
        return config.train.version
    name = f"{manifest_sha[:10]}-{training_config_digest(config)[:8]}"
    if model_format != FIRST_MODEL_FORMAT:
        name = f"{name}-m{model_format}"
    return name if model_code is None else f"{name}-c{model_code[:8]}"


def utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
