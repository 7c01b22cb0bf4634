"""File systems: the pyarrow file system that serves a URI.

:func:`filesystem` maps a URI to a pyarrow file system and the path within
it: the local disk, HDFS through ``hdfs-native`` (:mod:`tfbs.storage.hdfs`),
GCS (or its emulator), or, in a process without network access of its own,
its parent's storage gateway (:mod:`tfbs.storage.gateway`). Clients are
cached per endpoint and process.
"""

from __future__ import annotations

import functools
import os
import socket
from datetime import timedelta
from urllib.parse import ParseResult, urlparse

import pyarrow.fs as pafs

from tfbs.storage import hdfs, uris
from tfbs.storage.gateway import GATEWAY_FD_ENV, GatewayHandler
from tfbs.storage.hadoop_conf import token_service_host, use_current_tokens
from tfbs.storage.uris import _GCS_SCHEMES, _HDFS_SCHEMES, _REMOTE_SCHEMES

#: The name node's RPC port when an ``hdfs://host/`` URI names none.
HDFS_DEFAULT_PORT = 8020
#: pyarrow file system type names that have no rename (objects, not files).
_OBJECT_STORES = ("gcs", "s3")

#: Google's storage clients send requests to this ``host:port`` (or URL)
#: instead of storage.googleapis.com, without credentials.
EMULATOR_ENV = "STORAGE_EMULATOR_HOST"


def filesystem(uri: str) -> tuple[pafs.FileSystem, str]:
    """The pyarrow file system serving ``uri`` and the path within it.

    Parameters
    ----------
    uri
        ``file://`` URI or local path, ``hdfs://``, ``gs://`` or ``gcs://``
        URI (other schemes go to ``pyarrow.fs.FileSystem.from_uri``).

    Returns
    -------
    tuple
        The file system and the path to pass to its methods (``bucket/key``
        on GCS, ``/path`` on HDFS and locally).

    """
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        return pafs.LocalFileSystem(), uris.local_path(uri)
    gateway = os.environ.get(GATEWAY_FD_ENV)
    if gateway is not None and parsed.scheme in _REMOTE_SCHEMES:
        # A process in a private network (a TF node): through its parent.
        real_path = _gcs_path(parsed) if parsed.scheme in _GCS_SCHEMES else parsed.path or "/"
        base = f"{parsed.scheme}:/" if parsed.scheme in _GCS_SCHEMES else f"{parsed.scheme}://{parsed.netloc}"
        return _gateway_filesystem(base, int(gateway), os.getpid()), real_path
    if parsed.scheme in _GCS_SCHEMES:
        # Read on every call, not at import: Spark workers and tests set it
        # after this module may already be loaded.
        emulator = os.environ.get(EMULATOR_ENV) or None
        return _gcs_filesystem(emulator, os.getpid()), _gcs_path(parsed)
    if parsed.scheme in _HDFS_SCHEMES:
        return _hdfs_filesystem(uri)
    return pafs.FileSystem.from_uri(uri)


@functools.lru_cache(maxsize=8)
def _gateway_filesystem(base: str, fd: int, pid: int) -> pafs.FileSystem:
    """The remote file system ``base`` through the parent's storage gateway (:mod:`tfbs.storage.gateway`)."""
    del pid
    return pafs.PyFileSystem(GatewayHandler(base, fd))


def _gcs_path(parsed: ParseResult) -> str:
    """``bucket/key`` for ``gs://bucket/key`` (no trailing slash)."""
    key = parsed.path.strip("/")
    return f"{parsed.netloc}/{key}" if key else parsed.netloc


@functools.lru_cache(maxsize=8)
def _gcs_filesystem(emulator: str | None, pid: int) -> pafs.GcsFileSystem:
    """One GCS client per endpoint and process.

    Parameters
    ----------
    emulator
        The value of ``STORAGE_EMULATOR_HOST`` (``host:port`` or
        ``http://host:port``), or None for Google Cloud Storage itself.
    pid
        The calling process: part of the cache key so a forked child never
        reuses its parent's HTTP connection pool.
    """
    del pid
    if emulator is None:
        # Google's default credentials: GOOGLE_APPLICATION_CREDENTIALS, gcloud
        # user credentials, or the metadata server on GCE/Dataproc.
        return pafs.GcsFileSystem()
    scheme, _, endpoint = emulator.rpartition("://")
    return pafs.GcsFileSystem(
        anonymous=True,
        scheme=scheme or "http",
        endpoint_override=endpoint.rstrip("/"),
        # The client's default is to retry for 15 minutes; a stopped emulator
        # should fail a test run quickly instead.
        retry_time_limit=timedelta(seconds=20),
    )


def _hdfs_filesystem(uri: str) -> tuple[pafs.FileSystem, str]:
    """HDFS for ``uri`` and the path in it; ``hdfs:///path`` uses ``fs.defaultFS``."""
    parsed = urlparse(uri)
    return _hdfs_client(parsed.netloc, os.getpid()), parsed.path or "/"


@functools.lru_cache(maxsize=8)
def _hdfs_client(netloc: str, pid: int) -> pafs.FileSystem:
    """One HDFS client per name node and process.

    HDFS's own RPC protocol through ``hdfs-native`` (no JVM, no
    ``libhdfs.so``, which pyarrow's HadoopFileSystem needs and no package
    registry ships), behind pyarrow's file system interface, so the driver
    and every Spark task use the same calls on HDFS as on a local disk or a
    bucket. Without a ``host:port`` the client reads ``fs.defaultFS`` (and
    HA name services) from ``$HADOOP_CONF_DIR``.

    Parameters
    ----------
    netloc
        ``host:port`` of the name node, or ``""``.
    pid
        The calling process: a forked child never reuses its parent's connections.
    """
    del pid
    try:
        from hdfs_native.fsspec import HdfsFileSystem
    except ImportError:
        raise ImportError("hdfs:// needs the hdfs extra: pip install 'tfbs-spark[hdfs]'") from None
    # In a YARN container, the tokens Spark keeps current rather than those of the container's launch.
    use_current_tokens()
    host, _, port = netloc.partition(":")
    if not host:
        return pafs.PyFileSystem(hdfs._HdfsHandler(HdfsFileSystem()))
    number = int(port or HDFS_DEFAULT_PORT)
    # The client retries an unreachable name node without end: fail in seconds, naming it.
    try:
        socket.create_connection((host, number), timeout=10).close()
    except OSError as err:
        raise OSError(f"hdfs://{netloc}: cannot reach the HDFS name node at {host}:{number} ({err})") from None
    return pafs.PyFileSystem(hdfs._HdfsHandler(HdfsFileSystem(host=token_service_host(host), port=number)))


def _is_object_store(fs: pafs.FileSystem) -> bool:
    """True for file systems without directories or rename (GCS, S3)."""
    return fs.type_name in _OBJECT_STORES
