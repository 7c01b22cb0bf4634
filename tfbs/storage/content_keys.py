"""What a file holds, named by a digest of its bytes: keys for local copies of remote files.

A copy is current only if it holds the bytes the store holds now; two
versions of a file can have the same size (a model retrained at the same
URI). A content key is ``"<algorithm>:<digest>"``:

- ``md5:<hex>`` where the store keeps a checksum of each object and says
  it without reading the bytes (GCS's ``md5Hash``, in the object's metadata);
- ``blake3:<hex>`` of the bytes otherwise (HDFS through hdfs-native, which
  exposes no file checksum; local files), read once;
- or a digest recorded when the file was written (:func:`record_digests`,
  :data:`DIGESTS_NAME`), which a reader of a whole directory looks up
  instead of reading the bytes.

The key of a local copy is computed the same way from its bytes.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs
from blake3 import blake3

#: ``{relative path: content key}`` of a directory's other files, written with them (an export's).
DIGESTS_NAME = "tfbs_digests.json"
#: Bytes read at a time while hashing.
_BLOCK = 8 << 20


def _hasher(algorithm: str) -> Any:
    if algorithm == "md5":
        return hashlib.md5(usedforsecurity=False)
    if algorithm == "blake3":
        return blake3()
    raise ValueError(f"no content key of algorithm {algorithm!r}")


def _encode(algorithm: str, digest: bytes) -> str:
    # Hex, as md5sum and b3sum print them (and preprocess.fingerprint records them).
    return f"{algorithm}:{digest.hex()}"


def stored_key(fs: pafs.FileSystem, path: str) -> str | None:
    """The content key the store keeps for ``path``, read from its metadata (not its bytes); None if it keeps none.

    On GCS the object's MD5 (absent for composite objects); through the
    storage gateway, or on any other file system, None.
    """
    if fs.type_name != "gcs":
        return None
    # open_input_file asks for the object's metadata only; bytes come on read.
    with fs.open_input_file(path) as handle:
        md5 = handle.metadata().get("md5Hash")
    # pyarrow hands the object's JSON metadata over as {str: bytes}; GCS states the MD5 in base64.
    return _encode("md5", base64.b64decode(md5)) if md5 else None


def key_of_stream(stream: object, algorithm: str = "blake3") -> str:
    """The content key (of ``algorithm``) of what ``stream`` (with ``read(n)``) holds from where it stands."""
    digest = _hasher(algorithm)
    while chunk := stream.read(_BLOCK):  # type: ignore[attr-defined]
        digest.update(chunk)
    return _encode(algorithm, digest.digest())


def content_key(fs: pafs.FileSystem, path: str) -> str:
    """The content key of the file ``path``: the store's own (:func:`stored_key`), else BLAKE3 of its bytes."""
    stored = stored_key(fs, path)
    if stored is not None:
        return stored
    with fs.open_input_stream(path, compression=None) as stream:
        return key_of_stream(stream)


def local_key(path: str | os.PathLike[str], like: str) -> str:
    """The content key of the local file ``path``, of the same algorithm as the key ``like``."""
    with open(path, "rb") as stream:
        return key_of_stream(stream, like.partition(":")[0])


def same_content(fs: pafs.FileSystem, path: str, local: str | os.PathLike[str]) -> bool:
    """Whether the local file ``local`` holds the bytes of ``path`` on ``fs``.

    Sizes differing settle it without reading; equal sizes are compared by
    content key (on a store without checksums, that reads ``path`` once).
    """
    if Path(local).stat().st_size != fs.get_file_info(path).size:
        return False
    remote = content_key(fs, path)
    return local_key(local, remote) == remote


def record_digests(directory: str | os.PathLike[str]) -> dict[str, str]:
    """Write :data:`DIGESTS_NAME` in ``directory``: the BLAKE3 key of every file under it; returns them.

    For a directory readers copy whole (an export): they key their copy by
    this record instead of reading every file. Write it after the files it
    names, before whatever marks the directory whole.
    """
    root = Path(directory)
    keys = {
        path.relative_to(root).as_posix(): local_key(path, "blake3:")
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.name != DIGESTS_NAME
    }
    (root / DIGESTS_NAME).write_text(json.dumps(keys, indent=1, sort_keys=True))
    return keys


def unlike_record(fs: pafs.FileSystem, root: str) -> tuple[str, str] | None:
    """The first file under ``root`` that is not what ``root``'s :data:`DIGESTS_NAME` records, and why.

    Every file the record names is read and hashed the recorded way (never
    compared by size: a truncated file and a whole one can only be told
    apart by their bytes, and a rewritten one not even by its size). Files
    the record does not name (the metadata written after it) are not
    checked here.

    Parameters
    ----------
    fs
        The file system holding the directory (local, HDFS, GCS).
    root
        The directory's path on ``fs``.

    Returns
    -------
    tuple or None
        ``(name relative to root, reason)``; None when every recorded file
        holds the recorded bytes.
    """
    base = root.rstrip("/")
    try:
        with fs.open_input_stream(f"{base}/{DIGESTS_NAME}", compression=None) as stream:
            record = json.loads(stream.read().decode("utf-8"))
    except FileNotFoundError:
        return DIGESTS_NAME, "missing: the export's files cannot be checked"
    except (UnicodeDecodeError, json.JSONDecodeError):
        return DIGESTS_NAME, "not a JSON record of digests"
    if not isinstance(record, dict) or not record or not all(isinstance(k, str) for k in record.values()):
        return DIGESTS_NAME, "not a JSON record of digests"
    for name, key in sorted(record.items()):
        algorithm = key.partition(":")[0]
        try:
            with fs.open_input_stream(f"{base}/{name}", compression=None) as stream:
                found = key_of_stream(stream, algorithm)
        except FileNotFoundError:
            return name, f"missing (named in {DIGESTS_NAME})"
        except ValueError:  # an algorithm this code does not know
            return DIGESTS_NAME, f"{name}: unknown digest {key!r}"
        if found != key:
            return name, f"not the bytes {DIGESTS_NAME} records: damaged, truncated or rewritten since export"
    return None
