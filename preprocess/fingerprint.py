"""A content fingerprint of every input preprocessing reads.

Shards are rebuilt exactly when this fingerprint changes, and a later stage
can ask whether anything changed since the last model was trained. Size and
modification time are never trusted: a copy, a restore or a tool that keeps
modification times leaves both as they were while the content changes.

Each file is identified by a digest of its bytes, tagged with its kind:

``blake3``
    streamed through :mod:`tfbs.storage` in large blocks, so ``file://`` and
    ``hdfs://`` inputs are read once each, by the driver (BLAKE3, as
    ``b3sum`` prints it: about 5 GB/s on one core, where SHA-256 is 1.2:
    a 3 GB genome costs under a second);
``md5`` or ``crc32c``
    on GCS, the checksum the store keeps in the object's metadata, read
    with one metadata request instead of the object (MD5 when the object
    has one; composed objects have only CRC32C). Both are digests of the
    bytes, in hex, so they equal ``hashlib.md5`` or CRC32C of a local copy.

HDFS keeps a file checksum too, but only WebHDFS and the Java client serve
it, not the RPC client the pipeline uses (hdfs-native), and it depends on
the block size: HDFS files are hashed.

Two fingerprints are compared on content alone (:func:`changed_inputs`):
each input's digest, and the settings that change which rows the shards
hold (:meth:`tfbs.config.PipelineConfig.content_settings`). An entry's URI
and size are recorded for people; moving identical files, naming them from
another working directory or changing the shards' file layout rebuilds
nothing.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from preprocess.inputs import check_preprocess_inputs
from tfbs import storage
from tfbs.config import DataConfig, PipelineConfig
from tfbs.storage import blake3_of

log = logging.getLogger("tfbs.preprocess")

#: Sections of the configuration that determine the shards.
SHARD_SECTIONS = {"data", "preprocess"}
#: Files hashed at once (I/O of one overlaps hashing of another; hashlib releases the GIL).
_HASH_THREADS = 4


def preprocess_inputs(data: DataConfig, cells_by_tf: dict[str, list[str]]) -> dict[str, str]:
    """Every file ``tfbs preprocess`` reads, by name.

    ``data.chrom_sizes`` and the ChIP-seq peaks are left out: preprocessing
    never reads them (the label files and the genome index carry what it
    needs), so a change to them must not rebuild the shards.

    Parameters
    ----------
    data
        The ``data`` section.
    cells_by_tf
        The cells of each TF (:func:`preprocess.inputs.check_preprocess_inputs`);
        DNase peaks of other cells are not read.

    Returns
    -------
    dict
        ``{name: uri}`` with names ``labels/<TF>``, ``dnase/<cell>``,
        ``genome``, ``genome_index``, ``proteins`` and ``blacklist``.
    """
    files = {f"labels/{tf}": data.labels_uri(tf) for tf in data.tfs}
    if data.has_dnase:
        cells = sorted({cell for cells in cells_by_tf.values() for cell in cells})
        files.update({f"dnase/{cell}": data.dnase_peaks_uri(cell) for cell in cells})
    files["genome"] = data.genome_fasta
    files["genome_index"] = f"{data.genome_fasta}.fai"
    files["proteins"] = data.proteins_fasta
    if data.blacklist is not None:
        files["blacklist"] = data.blacklist
    return dict(sorted(files.items()))


def _store_checksum(uri: str) -> dict[str, Any] | None:
    """The checksum a GCS object's metadata holds, or None where the store gives none cheaply."""
    fs, path = storage.filesystem(uri)
    if fs.type_name != "gcs":
        return None
    # Opening a random-access file fetches the object's metadata, not its bytes.
    with fs.open_input_file(path) as handle:
        metadata = handle.metadata()
    # pyarrow's GCS client hands the object's JSON metadata over as ``{str: bytes}``.
    for key, kind in (("md5Hash", "md5"), ("crc32c", "crc32c")):
        if metadata.get(key):
            return {"kind": kind, "digest": base64.b64decode(metadata[key]).hex(), "size": int(metadata["size"])}
    return None


def file_digest(uri: str) -> dict[str, Any]:
    """The content digest of one file.

    Returns
    -------
    dict
        ``{"uri", "size", "kind", "digest"}``: ``kind`` is ``blake3``, or on
        GCS the store's ``md5`` (``crc32c`` for composed objects).
    """
    entry = _store_checksum(uri)
    if entry is None:
        digest, size = blake3_of(uri)
        entry = {"kind": "blake3", "digest": digest, "size": size}
    return {"uri": uri, **entry}


def input_fingerprint(config: PipelineConfig, cells_by_tf: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """The content fingerprint of the shards' inputs and settings.

    A pure function of the input files (their bytes, and where they are,
    recorded but never compared) and the ``data`` and ``preprocess``
    sections: the same inputs always give an equal dict (JSON-ready, keys
    sorted), and a change to any byte of any input file gives one that
    :func:`changed_inputs` tells apart.

    Parameters
    ----------
    config
        The pipeline configuration.
    cells_by_tf
        Each TF's cells, when the caller has checked the inputs already;
        otherwise they are checked here.

    Returns
    -------
    dict
        ``{"config": <digest of the data and preprocess settings that
        change the shards' rows>, "inputs": {name: {"uri", "size", "kind",
        "digest"}}}`` with names as in :func:`preprocess_inputs`.

    Raises
    ------
    MissingInputError, BadInputError
        As :func:`preprocess.inputs.check_preprocess_inputs`.
    """
    if cells_by_tf is None:
        cells_by_tf = check_preprocess_inputs(config.data)
    files = preprocess_inputs(config.data, cells_by_tf)
    started = time.monotonic()
    with ThreadPoolExecutor(_HASH_THREADS) as pool:
        digests = dict(zip(files, pool.map(file_digest, files.values())))
    elapsed = time.monotonic() - started
    hashed = sum(entry["size"] for entry in digests.values() if entry["kind"] == "blake3")
    log.info(
        "fingerprinted %d input files in %.2f s (%.1f MB hashed, %.0f MB/s)",
        len(digests),
        elapsed,
        hashed / 1e6,
        hashed / 1e6 / max(elapsed, 1e-9),
    )
    return {"config": config.content_digest(SHARD_SECTIONS), "inputs": digests}


@dataclass(frozen=True)
class CheckedInputs:
    """A preprocessing run's inputs, checked, and their fingerprint, which may still be being hashed."""

    cells_by_tf: dict[str, list[str]]
    fingerprint: Future[dict[str, Any]]


def check_and_fingerprint(config: PipelineConfig, pool: Executor | None = None) -> CheckedInputs:
    """Check the inputs now, and hash them in ``pool``, or now when there is none.

    Hashing a genome takes seconds: ``tfbs preprocess`` lets it run beside
    the JVM's start and the first stage, which need only the check.

    Raises
    ------
    MissingInputError, BadInputError
        As :func:`preprocess.inputs.check_preprocess_inputs`.
    """
    cells_by_tf = check_preprocess_inputs(config.data)
    if pool is not None:
        return CheckedInputs(cells_by_tf, pool.submit(input_fingerprint, config, cells_by_tf))
    done: Future[dict[str, Any]] = Future()
    done.set_result(input_fingerprint(config, cells_by_tf))
    return CheckedInputs(cells_by_tf, done)


def digest_as(uri: str, kind: str) -> str | None:
    """The digest of kind ``kind`` of the bytes at ``uri`` now, read whole; None for a kind not computed here.

    ``blake3`` and ``md5`` are; ``crc32c`` is not (no CRC32C library is a
    dependency of the pipeline).
    """
    if kind == "blake3":
        return storage.blake3_of(uri)[0]
    if kind != "md5":
        return None
    digest = hashlib.md5(usedforsecurity=False)
    with storage.open_input(uri, compression=None) as stream:
        while chunk := stream.read(storage.HASH_BLOCK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def same_content(
    old: dict[str, Any], new: dict[str, Any], rehash: Callable[[str, str], str | None] = digest_as
) -> bool:
    """Whether two digest entries of one input (:func:`file_digest`) are of the same bytes.

    URIs and sizes are not compared: the same bytes elsewhere are the same
    input. Digests of different kinds cannot be compared (an input moved
    between stores, or a GCS object whose MD5 went when it was composed):
    then the current file is hashed again the recorded way, and where that
    kind is not computed here (``crc32c``) the input counts as changed,
    which costs a rebuild rather than risking stale shards.

    Parameters
    ----------
    old, new
        The recorded entry and the current one (``new["uri"]`` is read if
        the kinds differ).
    rehash
        ``(uri, kind) -> digest or None``; :func:`digest_as`.
    """
    if old.get("kind") == new.get("kind"):
        return bool(old.get("digest") == new.get("digest"))
    digest = rehash(new["uri"], old["kind"]) if old.get("kind") and new.get("uri") else None
    if digest is None:
        log.info(
            "%s: recorded as %s, now %s, not comparable: counted as changed",
            new.get("uri"),
            old.get("kind"),
            new.get("kind"),
        )
    return digest is not None and digest == old.get("digest")


def changed_inputs(
    old: dict[str, Any], new: dict[str, Any], rehash: Callable[[str, str], str | None] = digest_as
) -> list[str]:
    """What differs in content between two fingerprints, by name; empty when the content is the same.

    Parameters
    ----------
    old, new
        The recorded fingerprint and the current one (:func:`input_fingerprint`).
    rehash
        How an input recorded with another kind of digest is hashed again
        (:func:`same_content`).

    Examples
    --------
    >>> a = {"config": "c1", "inputs": {"genome": {"digest": "1"}, "dnase/K562": {"digest": "2"}}}
    >>> changed_inputs(a, {"config": "c2", "inputs": {"genome": {"digest": "9"}}})
    ['configuration (data, preprocess)', 'dnase/K562 (gone)', 'genome']
    >>> moved = {"uri": "file:///elsewhere/genome.fa", "size": 7, "digest": "1"}
    >>> changed_inputs(a, {"config": "c1", "inputs": {"genome": moved, "dnase/K562": {"digest": "2"}}})
    []
    """
    changed = [] if old.get("config") == new.get("config") else ["configuration (data, preprocess)"]
    old_inputs, new_inputs = old.get("inputs", {}), new.get("inputs", {})
    for name in sorted(set(old_inputs) | set(new_inputs)):
        if name not in new_inputs:
            changed.append(f"{name} (gone)")
        elif name not in old_inputs:
            changed.append(f"{name} (new)")
        elif not same_content(old_inputs[name], new_inputs[name], rehash):
            changed.append(name)
    return changed
