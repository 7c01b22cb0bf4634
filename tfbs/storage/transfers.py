"""Transfers: files copied between a URI and the local disk.

For tools that open local paths only (bedtools, pyfaidx, matplotlib,
TensorFlow's checkpoints): a remote file staged or fetched into a local
directory, a local tree mirrored to a URI or back. Every copy lands whole,
under a temporary name first.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlparse

from tfbs.storage import atomic, content_keys, directories, files, filesystems, uris
from tfbs.storage.atomic import _CHUNK


def stage_local(uri: str, directory: str | os.PathLike[str]) -> str:
    """A local path holding the file at ``uri``, for tools that need one.

    bedtools and pyfaidx open local paths only. A local URI is returned as
    its path, without copying; a remote file is copied (bytes as stored,
    compression kept) into ``directory`` under its own name.

    Parameters
    ----------
    uri
        The file.
    directory
        A local scratch directory (created if missing), e.g. the task's.

    Raises
    ------
    FileNotFoundError
        If the file is missing; the message names ``uri``.
    """
    if not uris.is_remote(uri):
        return uris.local_path(uri)
    target = Path(directory) / urlparse(uri).path.rsplit("/", 1)[-1]
    # Written under a temporary name first: a task retried on the same
    # executor must not take a half-copied file for a staged one.
    with files.open_input(uri, compression=None) as source:
        atomic._copy_to_local(source, target)
    return str(target)


def fetch_file(uri: str, target: str | os.PathLike[str]) -> bool:
    """Copy the file at ``uri`` to the local ``target``, unless ``target`` holds its bytes already.

    A copy there is kept only if its content key is the file's
    (:func:`tfbs.storage.content_keys.same_content`): the MD5 GCS keeps, else
    BLAKE3, which reads the file once; a file rewritten at the same size
    is fetched again. The copy is written under a temporary name and
    renamed, so processes fetching the same file at once (or after a killed
    one) never read a half-written one.

    Returns
    -------
    bool
        Whether a copy was made.
    """
    target = Path(target)
    fs, path = filesystems.filesystem(uri)
    if target.is_file() and content_keys.same_content(fs, path, target):
        return False
    with files.open_input(uri, compression=None) as stream:
        atomic._copy_to_local(stream, target)
    return True


def download_tree(uri: str, directory: str | os.PathLike[str]) -> int:
    """Copy every file under ``uri`` into ``directory``, keeping relative paths.

    Files already there with the same content are left alone; files still
    being written at ``uri``, or removed after the listing, are not copied.
    Each file is renamed into place whole. Returns the number of files
    copied (0 when nothing exists at ``uri``).
    """
    if not directories.exists(uri):
        return 0
    base = uri.rstrip("/") + "/"
    copied = 0
    for source in directories.list_files(uri):
        try:
            copied += fetch_file(source, Path(directory) / source[len(base) :])
        except FileNotFoundError:
            # Removed since the listing (an old checkpoint the writer let go):
            # the copy is of the directory as it is now, not as listed.
            continue
    return copied


def upload_tree(
    directory: str | os.PathLike[str], uri: str, last: tuple[str, ...] = (), uploaded: dict | None = None
) -> int:
    """Copy the files under ``directory`` to ``uri``, keeping relative paths.

    Parameters
    ----------
    directory
        The local tree.
    uri
        Where it goes.
    last
        File names copied after all others, so a reader that trusts them
        (TensorFlow's ``checkpoint`` state file) never finds them pointing at
        files not copied yet.
    uploaded
        ``{local path: (size, mtime_ns)}`` of earlier uploads, updated here:
        files unchanged since are skipped.

    Returns
    -------
    int
        The number of files copied.

    Notes
    -----
    Each file is replaced whole (:func:`upload_file`); files being written
    locally under a temporary name are skipped.
    """
    root = Path(directory)
    memo = {} if uploaded is None else uploaded
    files = sorted(
        (p for p in root.rglob("*") if p.is_file() and not atomic.is_temporary(p.name)),
        key=lambda p: (p.name in last, str(p)),
    )
    copied = 0
    for source in files:
        stat = source.stat()
        if memo.get(str(source)) == (stat.st_size, stat.st_mtime_ns):
            continue
        upload_file(source, f"{uri.rstrip('/')}/{source.relative_to(root).as_posix()}")
        memo[str(source)] = (stat.st_size, stat.st_mtime_ns)
        copied += 1
    return copied


def upload_file(source: str | os.PathLike[str], uri: str) -> None:
    """Copy the local file ``source`` to ``uri`` (bytes as they are), replacing it whole.

    Streamed in chunks: a checkpoint's data file need not fit in memory twice.
    """
    with open(source, "rb") as stream, files.open_output(uri, compression=None) as out:
        while chunk := stream.read(_CHUNK):
            out.write(chunk)


def write_through_local(uri: str, write: Callable[[str], None]) -> None:
    """Have ``write`` produce a file at a local path, and put it at ``uri``.

    For writers that take only local paths (matplotlib's ``savefig``). The
    file is written in a scratch directory under its own name (writers pick
    the format by extension) and then copied to ``uri`` whole, local or not,
    so a reader never finds half a figure and a failed ``write`` leaves the
    old file.
    """
    with tempfile.TemporaryDirectory(prefix="tfbs-") as scratch:
        staged = Path(scratch) / urlparse(uri).path.rsplit("/", 1)[-1]
        write(str(staged))
        upload_file(staged, uri)
