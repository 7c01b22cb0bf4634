"""Storage addressed by URI: ``file://``, ``hdfs://`` and ``gs://``.

Every read and write of the pipeline outside Spark's own DataFrame I/O goes
through pyarrow's file systems here, in the driver (listing, staging,
manifests, reports) and in Spark tasks (label files, FASTA ranges, shards),
so one code path serves a laptop directory, a cluster's HDFS and a bucket:

- ``file://`` (and plain paths): ``pyarrow.fs.LocalFileSystem``.
- ``hdfs://``: HDFS's RPC protocol through ``hdfs-native``, behind pyarrow's
  file system interface (no Hadoop install, JVM or ``libhdfs`` needed).
- ``gs://`` (or ``gcs://``): ``pyarrow.fs.GcsFileSystem`` with Google's
  default credentials, or, when ``STORAGE_EMULATOR_HOST`` is set (the
  variable Google's storage clients honour), the same client pointed at
  that emulator without credentials.

Whole-file writes are atomic on every backend: a reader (or a process
resuming after a crash) finds the old file or the new one, never a
truncated one. On file systems with directories, bytes go to a hidden
sibling ``.<name>.tmp-<hex>`` that is renamed over the target once closed;
listings leave such names out (as Hadoop's readers do with dot files). On
GCS the same hidden name is uploaded and then copied over the target (a
server-side copy) and deleted: pyarrow's stream cannot drop an upload, so
an aborted write finalizes only the hidden object.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import gzip
import io
import logging
import os
import re
import shutil
import socket
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from types import TracebackType
from typing import IO, Any, BinaryIO, TypeVar
from urllib.parse import ParseResult, urlparse

import pyarrow as pa
import pyarrow.fs as pafs
from blake3 import blake3

from tfbs import content_keys, dir_swap, interrupts
from tfbs.errors import MissingInputError
from tfbs.hadoop_conf import token_service_host
from tfbs.storage_gateway import GATEWAY_FD_ENV, GatewayHandler

_REMOTE_SCHEMES = ("hdfs", "gs", "gcs", "s3", "s3a")
_GCS_SCHEMES = ("gs", "gcs")
_HDFS_SCHEMES = ("hdfs",)
#: The name node's RPC port when an ``hdfs://host/`` URI names none.
HDFS_DEFAULT_PORT = 8020
#: pyarrow file system type names that have no rename (objects, not files).
_OBJECT_STORES = ("gcs", "s3")

log = logging.getLogger(__name__)

#: Attempts at an HDFS file whose DataNodes fail, and the pause before the
#: second (doubling up to 16 s): about two minutes in all.
HDFS_WRITE_ATTEMPTS = 8
_HDFS_FIRST_PAUSE_S = 1.0
#: Bytes of an HDFS file kept in memory until it is written; the rest waits on local disk.
_HDFS_SPOOL_IN_MEMORY = 8 << 20

#: Google's storage clients send requests to this ``host:port`` (or URL)
#: instead of storage.googleapis.com, without credentials.
EMULATOR_ENV = "STORAGE_EMULATOR_HOST"

#: A file being written: ``.<name>.tmp-<32 hex digits>`` next to its target.
_TEMPORARY_NAME = re.compile(r"^\..+\.tmp-[0-9a-f]{32}$")
#: The codecs ``compression="detect"`` picks by extension (pyarrow's own rule).
_CODECS_BY_SUFFIX = {".gz": "gzip", ".bz2": "bz2", ".lz4": "lz4", ".zst": "zstd"}
#: Bytes per read when copying streams.
_CHUNK = 1 << 22

_T = TypeVar("_T")


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


# --------------------------------------------------------------------------
# File systems
# --------------------------------------------------------------------------


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
        return pafs.LocalFileSystem(), local_path(uri)
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
    """The remote file system ``base`` through the parent's storage gateway (:mod:`tfbs.storage_gateway`)."""
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
    host, _, port = netloc.partition(":")
    if not host:
        return pafs.PyFileSystem(_HdfsHandler(HdfsFileSystem()))
    number = int(port or HDFS_DEFAULT_PORT)
    # The client retries an unreachable name node without end: fail in seconds, naming it.
    try:
        socket.create_connection((host, number), timeout=10).close()
    except OSError as err:
        raise OSError(f"hdfs://{netloc}: cannot reach the HDFS name node at {host}:{number} ({err})") from None
    return pafs.PyFileSystem(_HdfsHandler(HdfsFileSystem(host=token_service_host(host), port=number)))


class _BytesWriter(io.RawIOBase):
    """A writable file that hands ``writer`` every write as ``bytes``.

    hdfs-native's writer takes ``bytes`` at disk speed but is slow with any
    other buffer, which is what pyarrow passes: measured on the mini cluster,
    7 MB/s through pyarrow's stream, 170-270 MB/s with each write copied
    into ``bytes`` first (``hdfs dfs -put`` of the same file: 37 MB/s).
    """

    def __init__(self, writer: Any) -> None:
        super().__init__()
        self._writer = writer

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        self._writer.write(chunk)
        return len(chunk)

    def close(self) -> None:
        if not self.closed:
            try:
                self._writer.close()
            finally:
                super().close()


#: hdfs-native's error when the NameNode would not complete a file (its blocks short of replicas).
_UNCOMPLETED = 'OperationFailed("Failed to complete file in time'


def _datanode_failure(err: BaseException) -> bool:
    """Whether an hdfs-native error came from a DataNode, which another pipeline may avoid.

    A socket's error (refused, reset, timed out) is an ``OSError``; a
    pipeline that lost every node a ``RuntimeError`` naming
    ``DataTransferError``. The NameNode's refusals (permissions, quotas, a
    missing parent) are neither, and are final.

    Examples
    --------
    >>> _datanode_failure(OSError("Connection refused (os error 111)"))
    True
    >>> _datanode_failure(RuntimeError('OperationFailed("Failed to complete file in time")'))
    True
    >>> _datanode_failure(RuntimeError('RPCError("org.apache.hadoop.security.AccessControlException", "...")'))
    False
    """
    if isinstance(err, FileNotFoundError | FileExistsError | IsADirectoryError | PermissionError):
        return False
    if isinstance(err, OSError):
        return True
    # The NameNode completes a file once its blocks reach their minimal replication:
    # a pipeline that lost a DataNode as the last block closed never does.
    return isinstance(err, RuntimeError) and str(err).startswith(("DataTransferError", _UNCOMPLETED))


class _ReplayedHdfsWriter(io.RawIOBase):
    """An HDFS file written when closed, from a local spool, and written again when a DataNode fails.

    hdfs-native opens a block's pipeline on the DataNodes the NameNode names
    and cannot ask for others when one does not answer (Java's client
    retries excluding it). Until the NameNode declares a lost DataNode
    dead, 10.5 minutes by default, some of the blocks it hands out fail.
    So the bytes wait in a spool (memory, then local disk) and the file is
    written at close; a DataNode failure deletes the partial file and writes
    it again on a new pipeline, up to :data:`HDFS_WRITE_ATTEMPTS` times.
    Measured with a DataNode host killed during preprocessing: without
    this, tasks failed with ``Connection refused`` until Spark gave up.
    """

    def __init__(self, fs: Any, path: str) -> None:
        super().__init__()
        self._fs, self._path = fs, path
        self._spool = tempfile.SpooledTemporaryFile(max_size=_HDFS_SPOOL_IN_MEMORY)  # noqa: SIM115 - closed by close()

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        return self._spool.write(data)

    def close(self) -> None:
        if self.closed:
            return
        try:
            self._write_with_retries()
        finally:
            self._spool.close()
            super().close()

    def _write_with_retries(self) -> None:
        pause = _HDFS_FIRST_PAUSE_S
        for attempt in range(1, HDFS_WRITE_ATTEMPTS + 1):
            try:
                self._write_once()
                return
            except Exception as err:
                if attempt == HDFS_WRITE_ATTEMPTS or not _datanode_failure(err):
                    raise
                log.warning(
                    "%s: a DataNode failed (%s); writing the file again in %.0f s (attempt %d of %d)",
                    self._path, err, pause, attempt + 1, HDFS_WRITE_ATTEMPTS,
                )  # fmt: skip
                with contextlib.suppress(Exception):
                    self._fs.rm(self._path)  # the partial file, and its lease
                time.sleep(pause)
                pause = min(pause * 2, 16.0)

    def _write_once(self) -> None:
        self._spool.seek(0)
        writer = self._fs.open(self._path, mode="wb")
        try:
            # bytes: hdfs-native takes them at disk speed, other buffers far slower (_BytesWriter)
            while chunk := self._spool.read(4 << 20):
                writer.write(chunk)
        except BaseException:
            # The write's error is the one to judge: closing a broken pipeline fails
            # too ("Failed to complete file in time") and would hide it.
            with contextlib.suppress(Exception):
                writer.close()
            raise
        writer.close()


class _HdfsHandler(pafs.FSSpecHandler):
    """pyarrow's handler of hdfs-native's fsspec file system, its output streams through :class:`_ReplayedHdfsWriter`."""

    def open_input_stream(self, path: str) -> pa.NativeFile:
        return pa.PythonFile(self._open_file(path), mode="r")

    def open_input_file(self, path: str) -> pa.NativeFile:
        return pa.PythonFile(self._open_file(path), mode="r")

    def _open_file(self, path: str) -> Any:
        # Not fsspec's isfile(), which answers False on any error: a refused
        # login (no Kerberos ticket, no matching token) would read as a missing file.
        if self.fs.info(path)["type"] != "file":
            raise FileNotFoundError(errno.ENOENT, "not a file", path)
        return self.fs.open(path, mode="rb")

    def open_output_stream(self, path: str, metadata: Any) -> pa.NativeFile:
        return pa.PythonFile(_ReplayedHdfsWriter(self.fs, path), mode="w")

    def open_append_stream(self, path: str, metadata: Any) -> pa.NativeFile:
        return pa.PythonFile(_BytesWriter(self.fs.open(path, mode="ab")), mode="w")


def _is_object_store(fs: pafs.FileSystem) -> bool:
    """True for file systems without directories or rename (GCS, S3)."""
    return fs.type_name in _OBJECT_STORES


def _uri_of(uri: str, fs_path: str) -> str:
    """The URI, in the scheme of ``uri``, of ``fs_path`` on its file system."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        return Path(fs_path).as_uri()
    if parsed.scheme in _GCS_SCHEMES:
        return f"{parsed.scheme}://{fs_path}"
    return f"{parsed.scheme}://{parsed.netloc}/{fs_path.lstrip('/')}"


def _naming_uri(uri: str, action: Callable[[], _T]) -> _T:
    """Run ``action``; a missing file is re-raised naming ``uri``.

    pyarrow's GCS errors name the client's status, not the object, which
    leaves a user of a many-file job guessing which input is missing.
    """
    try:
        return action()
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, "no such file", uri) from None


def _ensure_parent(fs: pafs.FileSystem, path: str) -> None:
    """Create the parent directory of ``path`` where directories exist.

    Object stores need none, and creating GCS marker objects would cost a
    round trip per path level on every write.
    """
    parent = path.rsplit("/", 1)[0]
    if parent and not _is_object_store(fs):
        fs.create_dir(parent, recursive=True)


# --------------------------------------------------------------------------
# Atomic writes
# --------------------------------------------------------------------------


def temporary_name(name: str) -> str:
    """A hidden, unique sibling name under which ``name`` is written before it is renamed.

    Examples
    --------
    >>> is_temporary(temporary_name("checkpoint"))
    True
    """
    return f".{name}.tmp-{uuid.uuid4().hex}"


def is_temporary(path: str) -> bool:
    """True if the last component of ``path`` names a file still being written (or left by a killed writer).

    Examples
    --------
    >>> is_temporary("hdfs://nn/run/model/checkpoints/.checkpoint.tmp-" + "0" * 32), is_temporary("a/checkpoint")
    (True, False)
    """
    return _TEMPORARY_NAME.match(path.rstrip("/").rsplit("/", 1)[-1]) is not None


def _detect_compression(path: str) -> str | None:
    """The codec pyarrow's ``compression="detect"`` would pick for ``path``."""
    return next((codec for suffix, codec in _CODECS_BY_SUFFIX.items() if path.endswith(suffix)), None)


def _temporary_sibling(path: str) -> str:
    parent, _, name = path.rpartition("/")
    return f"{parent}/{temporary_name(name)}"


def _hdfs_native_client(fs: pafs.FileSystem) -> Any:
    """The ``hdfs_native.Client`` behind an ``hdfs://`` file system of :func:`filesystem`, else None."""
    if not isinstance(fs, pafs.PyFileSystem):
        return None
    fsspec_fs = getattr(fs.handler, "fs", None)
    client = getattr(fsspec_fs, "client", None)
    return client if hasattr(client, "rename") else None


def replace_file(fs: pafs.FileSystem, temporary: str, path: str) -> None:
    """Put the closed file ``temporary`` over ``path`` (same directory) in one step where the file system can: a rename, or a copy on a bucket."""
    if isinstance(fs, pafs.LocalFileSystem):
        os.replace(temporary, path)  # rename(2): atomic, replaces an existing file
        return
    if isinstance(fs, pafs.PyFileSystem) and isinstance(fs.handler, GatewayHandler):
        fs.handler.replace(temporary, path)  # the parent renames on the real file system
        return
    client = _hdfs_native_client(fs)
    if client is not None:
        # HDFS's plain rename refuses an existing target, and pyarrow's move
        # (fsspec's mv) calls it so. hdfs-native's overwrite flag sends
        # rename2 with OVERWRITE instead: the name node swaps the name under
        # its namespace lock, so readers see the old file or the new one;
        # delete-then-rename would leave a moment with no file at all.
        client.rename(temporary, path, True)
        return
    if _is_object_store(fs):
        # No rename on a bucket: a server-side copy replaces the target in one
        # step (a reader gets the old object or the new one), then the hidden
        # source goes. Left behind by a failed delete, it stays out of every
        # listing and remove_stale_temporaries sweeps it.
        fs.copy_file(temporary, path)
        with contextlib.suppress(OSError):
            fs.delete_file(temporary)
        return
    # Any other file system pyarrow serves: no portable rename-over. Deleting
    # first may let a reader find no file for a moment, never a partial one.
    if fs.get_file_info(path).type == pafs.FileType.File:
        fs.delete_file(path)
    fs.move(temporary, path)


class AtomicOutput:
    """A binary output stream whose file appears at its target only when closed without error.

    Returned by :func:`open_output`. Used as a context manager it gives the
    underlying pyarrow stream (for ``pq.write_table`` and the like): leaving
    the block normally publishes the file; an exception discards it and the
    target keeps what it held before. Without ``with``, call ``write`` and
    then ``close`` (publish) or ``abort`` (discard).

    The bytes go to a hidden sibling (:func:`temporary_name`) that replaces
    the target at close (:func:`replace_file`): a rename where there are
    directories, a server-side copy on a bucket. pyarrow's GCS stream has no
    abort and finalizes its upload whenever it is closed (or collected), so
    writing the target in place would publish half an object on abort; under
    the hidden name only that name is finalized, and :meth:`abort` deletes
    it. A writer killed mid-upload leaves nothing (the resumable upload is
    never finalized), or, killed between close and copy, a hidden object
    that :func:`remove_stale_temporaries` sweeps.
    """

    def __init__(self, fs: pafs.FileSystem, path: str, compression: str | None) -> None:
        if compression == "detect":
            # Detected from the target's name: the temporary one ends in hex digits.
            compression = _detect_compression(path)
        self._fs, self._path = fs, path
        self._temporary = _temporary_sibling(path)
        self._stream = fs.open_output_stream(self._temporary, compression=compression)
        self._finished = False

    @property
    def stream(self) -> pa.NativeFile:
        """The pyarrow stream the bytes go to."""
        return self._stream

    def write(self, data: bytes | bytearray | memoryview | pa.Buffer) -> int:
        """Write ``data``; returns the number of bytes written."""
        return self._stream.write(data)

    def close(self) -> None:
        """Finish the file and put it at its target, replacing any file there."""
        if self._finished:
            return
        self._finished = True
        try:
            interrupts.raise_if_interrupted(self._path)
            self._stream.close()
            replace_file(self._fs, self._temporary, self._path)
        except BaseException:
            self._discard()
            raise

    def abort(self) -> None:
        """Drop what was written; the target is left as it was."""
        if self._finished:
            return
        self._finished = True
        try:
            self._stream.close()
        finally:
            self._discard()

    def _discard(self) -> None:
        # Called while an error propagates, which matters more than a
        # leftover: a temporary name stays hidden from readers anyway.
        with contextlib.suppress(Exception):
            self._fs.delete_file(self._temporary)

    def __enter__(self) -> pa.NativeFile:
        return self._stream

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def _copy_to_local(source: BinaryIO | pa.NativeFile, target: Path) -> None:
    """Write the stream ``source`` to the local ``target`` atomically (temporary sibling, then rename)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(temporary_name(target.name))
    try:
        with open(partial, "wb") as out:
            shutil.copyfileobj(source, out, _CHUNK)
        os.replace(partial, target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


# --------------------------------------------------------------------------
# Directories
# --------------------------------------------------------------------------


def exists(uri: str) -> bool:
    """True if a file or directory exists at ``uri``.

    On object stores a "directory" exists when an object lies under it.
    """
    fs, path = filesystem(uri)
    return fs.get_file_info(path).type != pafs.FileType.NotFound


def makedirs(uri: str) -> None:
    """Create a directory and its parents.

    On GCS pyarrow writes empty ``dir/`` marker objects (and creates the
    bucket if missing, which needs a project id).
    """
    fs, path = filesystem(uri)
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
    return sorted(_uri_of(uri, p) for p in paths)


def list_sizes(uri: str) -> dict[str, int]:
    """``{file URI: size in bytes}`` of the files :func:`list_files` lists under ``uri``.

    Raises
    ------
    FileNotFoundError, NotADirectoryError
        As :func:`list_files`.
    """
    return dict(sorted((_uri_of(uri, info.path), info.size) for info in _file_infos(uri)))


def _file_infos(uri: str) -> list[pafs.FileInfo]:
    """The files under the directory ``uri`` (recursively), but those still being written."""
    fs, path = filesystem(uri)
    kind = fs.get_file_info(path).type
    if kind == pafs.FileType.NotFound:
        raise FileNotFoundError(errno.ENOENT, "no such directory", uri)
    if kind == pafs.FileType.File:
        raise NotADirectoryError(errno.ENOTDIR, "not a directory", uri)
    infos = fs.get_file_info(pafs.FileSelector(path, recursive=True))
    return [info for info in infos if info.type == pafs.FileType.File and not is_temporary(info.path)]


#: A temporary file older than this was left by a killed writer: no write of
#: one file through this module takes hours.
STALE_TEMPORARY_AGE = timedelta(hours=6)


def _modified_at(fs: pafs.FileSystem, info: pafs.FileInfo) -> float | None:
    """When the file of ``info`` was last modified (epoch seconds), None if its file system cannot say."""
    if info.mtime is not None:
        return info.mtime.timestamp()
    # hdfs-native's fsspec listing names it modification_time, which pyarrow does not map to mtime.
    fsspec_fs = getattr(getattr(fs, "handler", None), "fs", None)
    if fsspec_fs is None:
        return None
    return fsspec_fs.modified(info.path).timestamp()


def remove_stale_temporaries(uri: str, older_than: timedelta = STALE_TEMPORARY_AGE) -> int:
    """Delete the temporary files (:func:`is_temporary`) under ``uri`` last modified before ``older_than`` ago.

    A writer killed with SIGKILL cannot remove its temporary sibling;
    readers never see it, but without this the run directory collects one
    per kill. Files a live writer is still writing are younger than
    ``older_than`` and stay. Returns the number removed; nothing if ``uri``
    does not exist.
    """
    fs, path = filesystem(uri)
    if fs.get_file_info(path).type != pafs.FileType.Directory:
        return 0
    cutoff = time.time() - older_than.total_seconds()
    removed = 0
    for info in fs.get_file_info(pafs.FileSelector(path, recursive=True)):
        if info.type != pafs.FileType.File or not is_temporary(info.path):
            continue
        modified = _modified_at(fs, info)
        if modified is not None and modified < cutoff:
            with contextlib.suppress(FileNotFoundError):
                fs.delete_file(info.path)
                removed += 1
    return removed


def delete_file(uri: str) -> bool:
    """Remove the file at ``uri``; returns whether there was one."""
    fs, path = filesystem(uri)
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
    fs, path = filesystem(uri)
    if fs.get_file_info(path).type == pafs.FileType.NotFound:
        return
    if not _is_object_store(fs):
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
      whole, at every moment (:mod:`tfbs.dir_swap`).
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
    fs, final_path = filesystem(final_uri)
    _, staging_path = filesystem(staging_uri)
    if not _is_object_store(fs):
        dir_swap.swap_in(fs, staging_path, final_path, aside=_temporary_sibling(final_path))
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


# --------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------


def open_input(uri: str, compression: str | None = "detect") -> pa.NativeFile:
    """Open a file as a binary input stream.

    Parameters
    ----------
    uri
        The file.
    compression
        ``"detect"`` decompresses by extension (``.gz``, ``.bz2``, ``.zst``,
        ``.lz4``, through pyarrow's codecs); None reads the raw bytes; or a
        codec name.

    Raises
    ------
    FileNotFoundError
        If the file is missing; the message names ``uri``.
    """
    fs, path = filesystem(uri)
    return _naming_uri(uri, lambda: fs.open_input_stream(path, compression=compression))


def open_output(uri: str, compression: str | None = "detect") -> AtomicOutput:
    """Open a binary output stream that replaces any file at ``uri`` when closed.

    Parent directories are created where the file system has them. The file
    appears whole at close, never before (see :class:`AtomicOutput`):
    ``with open_output(uri) as out:`` binds ``out`` to the pyarrow stream,
    and an exception in the block leaves ``uri`` as it was.

    Parameters
    ----------
    uri
        The file.
    compression
        ``"detect"`` compresses by extension (a ``.gz`` name gets gzip);
        None writes the bytes as given; or a codec name.
    """
    fs, path = filesystem(uri)
    _ensure_parent(fs, path)
    return AtomicOutput(fs, path, compression)


def read_range(uri: str, offset: int, length: int) -> bytes:
    """Read ``length`` bytes at ``offset`` (random access, no decompression).

    Meant for reading one sequence out of a FASTA at its ``.fai`` offsets:
    on GCS only the requested range is fetched.

    Raises
    ------
    FileNotFoundError
        If the file is missing; the message names ``uri``.
    EOFError
        If the file ends before ``offset + length``: a truncated input must
        not pass as a shorter sequence.
    ValueError
        For a negative offset or length.
    """
    (data,) = read_ranges(uri, [(offset, length)])
    return data


def read_ranges(uri: str, ranges: Iterable[tuple[int, int]]) -> Iterator[bytes]:
    """:func:`read_range` of each ``(offset, length)`` in turn, through one open file.

    For reading a large range a block at a time: one allocation the size of
    the block instead of one the size of the range.

    Raises
    ------
    FileNotFoundError, EOFError, ValueError
        As :func:`read_range`.
    """
    fs, path = filesystem(uri)
    with _naming_uri(uri, lambda: fs.open_input_file(path)) as handle:
        for offset, length in ranges:
            if offset < 0 or length < 0:
                raise ValueError(f"{uri}: bad byte range offset={offset} length={length}")
            data = handle.read_at(length, offset)  # pyarrow's order: nbytes, offset
            if len(data) != length:
                raise EOFError(f"{uri}: {length} bytes at offset {offset} requested, file ends after {len(data)}")
            yield data


def open_text(uri: str) -> IO[str]:
    """Open a (possibly gzipped) UTF-8 text file for reading.

    Raises
    ------
    FileNotFoundError
        If the file is missing; the message names ``uri``.
    """
    fs, path = filesystem(uri)
    raw = _naming_uri(uri, lambda: fs.open_input_stream(path, compression=None))
    if uri.endswith(".gz"):
        # Python's gzip reads multi-member (bgzip) files whole.
        return io.TextIOWrapper(gzip.GzipFile(fileobj=raw), encoding="utf-8")
    return io.TextIOWrapper(raw, encoding="utf-8")


def write_bytes(uri: str, data: bytes) -> None:
    """Write ``data`` to ``uri`` as is, creating parent directories; atomic (see :func:`open_output`)."""
    with open_output(uri, compression=None) as out:
        out.write(data)


def write_text(uri: str, text: str) -> None:
    """Write UTF-8 ``text`` to ``uri`` (not compressed, whatever its name); atomic."""
    write_bytes(uri, text.encode("utf-8"))


def concatenate(part_uris: list[str], uri: str) -> int:
    """Join files byte for byte, in the order given, into ``uri`` (atomic); returns the bytes written.

    Gzip files joined this way are one gzip file of several members, which
    gzip, Python and zlib-based readers decompress whole (RFC 1952). The
    parts are streamed in blocks of :data:`HASH_BLOCK_BYTES`, never parsed.
    """
    written = 0
    with open_output(uri, compression=None) as out:
        for part in part_uris:
            with open_input(part, compression=None) as stream:
                while block := stream.read(HASH_BLOCK_BYTES):
                    out.write(block)
                    written += len(block)
    return written


def read_text(uri: str) -> str:
    """Read a whole (possibly gzipped) text file."""
    with open_text(uri) as handle:
        return handle.read()


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
    if not is_remote(uri):
        return local_path(uri)
    target = Path(directory) / urlparse(uri).path.rsplit("/", 1)[-1]
    # Written under a temporary name first: a task retried on the same
    # executor must not take a half-copied file for a staged one.
    with open_input(uri, compression=None) as source:
        _copy_to_local(source, target)
    return str(target)


def fetch_file(uri: str, target: str | os.PathLike[str]) -> bool:
    """Copy the file at ``uri`` to the local ``target``, unless ``target`` holds its bytes already.

    A copy there is kept only if its content key is the file's
    (:func:`tfbs.content_keys.same_content`): the MD5 GCS keeps, else
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
    fs, path = filesystem(uri)
    if target.is_file() and content_keys.same_content(fs, path, target):
        return False
    with open_input(uri, compression=None) as stream:
        _copy_to_local(stream, target)
    return True


def download_tree(uri: str, directory: str | os.PathLike[str]) -> int:
    """Copy every file under ``uri`` into ``directory``, keeping relative paths.

    Files already there with the same content are left alone; files still
    being written at ``uri``, or removed after the listing, are not copied.
    Each file is renamed into place whole. Returns the number of files
    copied (0 when nothing exists at ``uri``).
    """
    if not exists(uri):
        return 0
    base = uri.rstrip("/") + "/"
    copied = 0
    for source in list_files(uri):
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
        (p for p in root.rglob("*") if p.is_file() and not is_temporary(p.name)),
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
    with open(source, "rb") as stream, open_output(uri, compression=None) as out:
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


# --------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------

#: Bytes read at a time while hashing: large reads keep remote stores streaming.
HASH_BLOCK_BYTES = 8 << 20


def blake3_of(uri: str) -> tuple[str, int]:
    """BLAKE3 (hex, 256 bits) and size of the bytes at ``uri`` (a URI or local path), as stored.

    ``b3sum`` gives the same digest of a local copy.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "x"
    >>> _ = path.write_bytes(b"abc")
    >>> blake3_of(str(path))
    ('6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85', 3)
    """
    digest = blake3()
    size = 0
    with open_input(uri, compression=None) as stream:
        while chunk := stream.read(HASH_BLOCK_BYTES):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def require(uri: str | None, what: str) -> str:
    """Return ``uri`` if it exists, else raise :class:`MissingInputError`."""
    if uri is None or not exists(uri):
        raise MissingInputError(f"{uri}: {what} not found")
    return uri
