"""URIs: the scheme of a path, and local paths as ``file://`` URIs.

Plain string work on ``file://``, ``hdfs://`` and ``gs://`` URIs, with no
file system opened: what the rest of :mod:`tfbs.storage` (and the jobs'
configuration) uses to tell a local path from a remote one.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlparse

_REMOTE_SCHEMES = ("hdfs", "gs", "gcs", "s3", "s3a")
_GCS_SCHEMES = ("gs", "gcs")
_HDFS_SCHEMES = ("hdfs",)


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
    raise ValueError(f"{uri}: not a local path (stage it with tfbs.storage.stage_local first)")


def _uri_of(uri: str, fs_path: str) -> str:
    """The URI, in the scheme of ``uri``, of ``fs_path`` on its file system."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        return Path(fs_path).as_uri()
    if parsed.scheme in _GCS_SCHEMES:
        return f"{parsed.scheme}://{fs_path}"
    return f"{parsed.scheme}://{parsed.netloc}/{fs_path.lstrip('/')}"
