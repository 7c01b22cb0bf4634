"""What killed writers leave behind, known by name and age, and removed.

Every write here that can be cut short goes under a name of its own and is
renamed (or copied) to its final name when whole, so a killed writer leaves
that name behind and nothing else:

- a temporary file or an aside folder, ``.<name>.tmp-<hex>``
  (:func:`tfbs.storage.atomic.temporary_name`: one file's write, or the old
  directory of a swap renamed aside);
- a staging folder, ``<name>._staging-<id>`` (:data:`STAGING_INFIX`: a shard
  build, swapped in whole by :func:`tfbs.storage.replace_dir`);
- a partial folder or file, ``<name>.partial`` (:data:`PARTIAL_SUFFIX`: an
  export, a labels file, renamed when whole);
- a prediction's finished parts, ``<submission>.parts-<key>`` (:data:`PARTS_INFIX`:
  kept for a rerun to join, deleted once joined).

A leftover whose newest file was modified before ``older_than`` ago is a
dead writer's: no write takes hours. Each stage sweeps its run folder on
start (:func:`remove_leftovers`, 6 hours); ``tfbs gc`` lists or removes them
at any age once the operator knows no run is writing.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from datetime import timedelta

import pyarrow.fs as pafs

from tfbs.storage import atomic, directories, filesystems, uris

#: What a staging folder's name adds to its final name.
STAGING_INFIX = "._staging-"
#: What a folder or file written whole before its rename adds to its final name.
PARTIAL_SUFFIX = ".partial"
#: What the folder of a prediction's finished parts adds to its submission's name.
PARTS_INFIX = ".parts-"
#: A leftover modified more recently may be a live writer's.
STALE_AGE = timedelta(hours=6)


@dataclass(frozen=True)
class Leftover:
    """One thing a killed writer left: its URI, its kind, and when its newest file was modified."""

    uri: str
    kind: str
    modified: float | None


def leftover_kind(name: str) -> str | None:
    """Which kind of leftover the last path component ``name`` names, None for anything else.

    Examples
    --------
    >>> names = (".ckpt.tmp-" + "0" * 32, "shards._staging-1a2b3c4d", "export.partial", "a.tab.gz.parts-9f", "shards")
    >>> [leftover_kind(name) for name in names]
    ['temporary', 'staging', 'partial', 'parts', None]
    """
    if atomic.is_temporary(name):
        return "temporary"
    if STAGING_INFIX in name:
        return "staging"
    if name.endswith(PARTIAL_SUFFIX):
        return "partial"
    if PARTS_INFIX in name:
        return "parts"
    return None


def find_leftovers(uri: str, older_than: timedelta = STALE_AGE) -> list[Leftover]:
    """The leftovers under the folder ``uri`` whose newest file is older than ``older_than``, outermost only.

    A folder counts as modified when any file in it was, so a build still
    writing into its staging folder is never taken. Folders are known by
    their files' paths too: a bucket lists no folder it holds no marker of.
    Nothing when ``uri`` does not exist.
    """
    fs, path = filesystems.filesystem(uri)
    if fs.get_file_info(path).type != pafs.FileType.Directory:
        return []
    root = path.rstrip("/")
    found: dict[str, tuple[str, float | None]] = {}
    for info in fs.get_file_info(pafs.FileSelector(path, recursive=True)):
        parts = info.path[len(root) + 1 :].strip("/").split("/")
        outermost = next(((i, kind) for i, name in enumerate(parts) if (kind := leftover_kind(name))), None)
        if outermost is None:
            continue
        depth, kind = outermost
        leftover_path = "/".join([root, *parts[: depth + 1]])
        _, newest = found.get(leftover_path, (kind, None))
        found[leftover_path] = (kind, _newer(newest, _modified_at(fs, info)))
    cutoff = time.time() - older_than.total_seconds()
    return [
        Leftover(uris._uri_of(uri, leftover_path), kind, modified)
        for leftover_path, (kind, modified) in sorted(found.items())
        # A file system that cannot say when gives its leftovers up only when any age will do.
        if (modified <= cutoff if modified is not None else older_than <= timedelta(0))
    ]


def remove_leftovers(uri: str, older_than: timedelta = STALE_AGE) -> list[Leftover]:
    """Delete :func:`find_leftovers` of ``uri``; returns what was deleted."""
    fs, _ = filesystems.filesystem(uri)
    removed = []
    for leftover in find_leftovers(uri, older_than):
        _, path = filesystems.filesystem(leftover.uri)
        with contextlib.suppress(FileNotFoundError):  # removed meanwhile by another sweep
            if fs.get_file_info(path).type == pafs.FileType.File:
                fs.delete_file(path)
            else:  # a folder, or on a bucket the prefix of its objects
                directories.delete_dir(leftover.uri)
            removed.append(leftover)
    return removed


def _modified_at(fs: pafs.FileSystem, info: pafs.FileInfo) -> float | None:
    """When the file of ``info`` was last modified (epoch seconds), None if its file system cannot say."""
    if info.mtime is not None:
        return info.mtime.timestamp()
    # hdfs-native's fsspec listing names it modification_time, which pyarrow does not map to mtime.
    fsspec_fs = getattr(getattr(fs, "handler", None), "fs", None)
    if fsspec_fs is None:
        return None
    return fsspec_fs.modified(info.path).timestamp()


def _newer(first: float | None, second: float | None) -> float | None:
    """The later of two modification times, either unknown (None) if both are."""
    known = [t for t in (first, second) if t is not None]
    return max(known) if known else None
