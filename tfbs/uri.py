"""Storage addressed by URI: ``file://``, ``hdfs://`` and ``gs://``.

Spark reads and writes through its own Hadoop file systems; this module
serves the driver-side work around it (checking inputs, staging, manifests,
reports) through pyarrow's file systems, so the same code path handles a
laptop directory and a bucket.
"""

from __future__ import annotations

import gzip
import io
import os
from pathlib import Path
from typing import IO
from urllib.parse import urlparse

import pyarrow.fs as pafs

_REMOTE_SCHEMES = ("hdfs", "gs", "gcs", "s3", "s3a")


def to_uri(path_or_uri: str | os.PathLike[str]) -> str:
    """Return a URI; local paths become absolute ``file://`` URIs.

    Parameters
    ----------
    path_or_uri
        A URI with a scheme, or a local path (relative to the working
        directory, which executors do not share).
    """
    text = str(path_or_uri)
    if "://" in text:
        scheme, rest = text.split("://", 1)
        # Trailing slashes would double up when paths are joined with "/".
        return f"{scheme}://{rest.rstrip('/')}" if rest.strip("/") else text
    return Path(text).expanduser().absolute().as_uri()


def is_remote(uri: str) -> bool:
    """True for URIs that live outside the local file system."""
    return urlparse(uri).scheme in _REMOTE_SCHEMES


def local_path(uri: str) -> str:
    """The local file system path of a ``file://`` URI (or a plain path).

    Raises
    ------
    ValueError
        If the URI is remote: the caller must stage the file first.
    """
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        return parsed.path if parsed.scheme else uri
    raise ValueError(f"{uri}: not a local path (stage it with tfbs.uri.stage_local first)")


def filesystem(uri: str) -> tuple[pafs.FileSystem, str]:
    """The pyarrow file system serving ``uri`` and the path within it."""
    if urlparse(uri).scheme in ("", "file"):
        return pafs.LocalFileSystem(), local_path(uri)
    return pafs.FileSystem.from_uri(uri)


def exists(uri: str) -> bool:
    """True if a file or directory exists at ``uri``."""
    fs, path = filesystem(uri)
    return fs.get_file_info(path).type != pafs.FileType.NotFound


def makedirs(uri: str) -> None:
    """Create a directory and its parents (no-op on object stores)."""
    fs, path = filesystem(uri)
    fs.create_dir(path, recursive=True)


def delete_dir(uri: str) -> None:
    """Remove a directory tree if it exists."""
    fs, path = filesystem(uri)
    if fs.get_file_info(path).type != pafs.FileType.NotFound:
        fs.delete_dir(path)


def replace_dir(staging_uri: str, final_uri: str) -> None:
    """Swap a fully written directory in under its final name.

    The old directory is removed first; on local and HDFS file systems the
    rename itself is atomic, so readers see either nothing or a whole run.
    On object stores (no rename) the manifest, written last, is the commit
    marker that readers check.
    """
    fs, final_path = filesystem(final_uri)
    _, staging_path = filesystem(staging_uri)
    if fs.get_file_info(final_path).type != pafs.FileType.NotFound:
        fs.delete_dir(final_path)
    fs.move(staging_path, final_path)


def open_text(uri: str) -> IO[str]:
    """Open a (possibly gzipped) text file for reading."""
    fs, path = filesystem(uri)
    raw = fs.open_input_stream(path, compression=None)
    if uri.endswith(".gz"):
        return io.TextIOWrapper(gzip.GzipFile(fileobj=raw), encoding="utf-8")
    return io.TextIOWrapper(raw, encoding="utf-8")


def write_bytes(uri: str, data: bytes) -> None:
    """Write ``data`` to ``uri``, creating parent directories."""
    fs, path = filesystem(uri)
    parent = path.rsplit("/", 1)[0]
    if parent:
        fs.create_dir(parent, recursive=True)
    with fs.open_output_stream(path, compression=None) as out:
        out.write(data)


def write_text(uri: str, text: str) -> None:
    """Write UTF-8 ``text`` to ``uri``."""
    write_bytes(uri, text.encode("utf-8"))


def read_text(uri: str) -> str:
    """Read a whole (possibly gzipped) text file."""
    with open_text(uri) as handle:
        return handle.read()
