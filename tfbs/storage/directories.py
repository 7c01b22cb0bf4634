"""Directories: listing, creating, removing, and swapping one in whole.

Listings leave out files still being written (:func:`tfbs.storage.is_temporary`);
:mod:`tfbs.storage.leftovers` sweeps what killed writers left behind.
:func:`replace_dir` puts a fully written directory under its final name so
that readers never find old and new files mixed.
"""

from __future__ import annotations

import errno
from concurrent.futures import ThreadPoolExecutor

import pyarrow.fs as pafs

from tfbs import interrupts
from tfbs.storage import atomic, dir_swap, filesystems, uris


def exists(uri: str) -> bool:
    """True if a file or directory exists at ``uri``.

    On object stores a "directory" exists when an object lies under it.
    """
    fs, path = filesystems.filesystem(uri)
    return fs.get_file_info(path).type != pafs.FileType.NotFound


def makedirs(uri: str) -> None:
    """Create a directory and its parents.

    On GCS pyarrow writes empty ``dir/`` marker objects (and creates the
    bucket if missing, which needs a project id).
    """
    fs, path = filesystems.filesystem(uri)
    fs.create_dir(path, recursive=True)


def list_files(uri: str, suffix: str | None = None) -> list[str]:
    """URIs of the files under the directory ``uri``, recursively, sorted.

    Parameters
    ----------
    uri
        A directory.
    suffix
        Keep only names ending with it (e.g. ``".parquet"``).

    Returns
    -------
    list of str
        File URIs in the scheme of ``uri``; directories (and GCS directory
        markers) and files still being written (:func:`is_temporary`) are
        left out.

    Raises
    ------
    FileNotFoundError
        If nothing exists at ``uri``.
    NotADirectoryError
        If ``uri`` is a file.
    """
    paths = [info.path for info in _file_infos(uri)]
    if suffix is not None:
        paths = [p for p in paths if p.endswith(suffix)]
    return sorted(uris._uri_of(uri, p) for p in paths)


def list_sizes(uri: str) -> dict[str, int]:
    """``{file URI: size in bytes}`` of the files :func:`list_files` lists under ``uri``.

    Raises
    ------
    FileNotFoundError, NotADirectoryError
        As :func:`list_files`.
    """
    return dict(sorted((uris._uri_of(uri, info.path), info.size) for info in _file_infos(uri)))


def _file_infos(uri: str) -> list[pafs.FileInfo]:
    """The files under the directory ``uri`` (recursively), but those still being written."""
    fs, path = filesystems.filesystem(uri)
    kind = fs.get_file_info(path).type
    if kind == pafs.FileType.NotFound:
        raise FileNotFoundError(errno.ENOENT, "no such directory", uri)
    if kind == pafs.FileType.File:
        raise NotADirectoryError(errno.ENOTDIR, "not a directory", uri)
    infos = fs.get_file_info(pafs.FileSelector(path, recursive=True))
    return [info for info in infos if info.type == pafs.FileType.File and not atomic.is_temporary(info.path)]


def delete_file(uri: str) -> bool:
    """Remove the file at ``uri``; returns whether there was one."""
    fs, path = filesystems.filesystem(uri)
    # Checked first: not every pyarrow file system raises FileNotFoundError.
    if fs.get_file_info(path).type == pafs.FileType.NotFound:
        return False
    try:
        fs.delete_file(path)
    except FileNotFoundError:
        return False  # removed by another process since
    return True


def delete_dir(uri: str) -> None:
    """Remove a directory tree if it exists.

    Raises
    ------
    ValueError
        For a bucket itself (``gs://bucket``): pyarrow would delete the
        bucket, never what a pipeline run means to do.
    """
    fs, path = filesystems.filesystem(uri)
    if fs.get_file_info(path).type == pafs.FileType.NotFound:
        return
    if not filesystems._is_object_store(fs):
        fs.delete_dir(path)
        return
    if "/" not in path:
        raise ValueError(f"{uri}: refusing to delete a whole bucket")
    fs.delete_dir_contents(path, missing_dir_ok=True)
    # pyarrow's GCS delete_dir then deletes the "dir/" marker object and fails
    # when there is none (objects written without makedirs), so only call it
    # while a marker keeps the directory visible.
    if fs.get_file_info(path).type != pafs.FileType.NotFound:
        fs.delete_dir(path)


def replace_dir(staging_uri: str, final_uri: str, commit_marker: str) -> None:
    """Swap a fully written directory in under its final name.

    Readers must trust the directory only when its ``commit_marker`` file
    (the shards' ``manifest.json``) exists.

    - Local file systems on Linux: the two names are exchanged in one step
      (``renameat2``), so readers find the old directory or the new one,
      whole, at every moment (:mod:`tfbs.storage.dir_swap`).
    - HDFS, and local file systems without that exchange: the old directory
      is renamed aside, the staging one renamed in, then the old one
      deleted; readers find the old directory whole, for a moment none,
      then the new one whole, never one partly deleted.
    - Object stores (GCS, S3) have no rename. The old directory is deleted
      first, then every staging object except the marker(s) is copied,
      then the top-level marker last, then the staging objects
      are deleted. A reader in between sees a directory without a manifest
      (incomplete, to be ignored), never old and new objects mixed under a
      manifest. A failure part-way leaves the staging copy whole for a retry.

    Parameters
    ----------
    staging_uri
        The fully written directory.
    final_uri
        Its final name, on the same file system.
    commit_marker
        Name of the file whose presence says the directory is whole.
    """
    interrupts.raise_if_interrupted(final_uri)
    fs, final_path = filesystems.filesystem(final_uri)
    _, staging_path = filesystems.filesystem(staging_uri)
    if not filesystems._is_object_store(fs):
        dir_swap.swap_in(fs, staging_path, final_path, aside=atomic._temporary_sibling(final_path))
        return
    if fs.get_file_info(staging_path).type == pafs.FileType.NotFound:
        raise FileNotFoundError(errno.ENOENT, "no such staging directory", staging_uri)
    delete_dir(final_uri)
    infos = fs.get_file_info(pafs.FileSelector(staging_path, recursive=True))
    sources = [info.path for info in infos if info.type == pafs.FileType.File]
    prefix = staging_path.rstrip("/") + "/"

    def copy(source: str) -> None:
        fs.copy_file(source, final_path + "/" + source[len(prefix) :])

    # Markers go last, the top-level one very last: it commits the directory.
    top_manifest = prefix + commit_marker
    body = [s for s in sources if s.rsplit("/", 1)[-1] != commit_marker]
    nested = sorted(s for s in sources if s.rsplit("/", 1)[-1] == commit_marker and s != top_manifest)
    # Server-side copies are independent round trips; a few in flight at once
    # keep a shard directory of hundreds of files from taking minutes.
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(copy, body))
    for source in nested:
        copy(source)
    if top_manifest in sources:
        copy(top_manifest)
    delete_dir(staging_uri)
