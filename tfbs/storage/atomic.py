"""Atomic writes: a file appears at its name whole, or not at all.

Bytes go to a hidden sibling ``.<name>.tmp-<hex>`` (:func:`temporary_name`)
that replaces the target once closed (:func:`replace_file`): a rename where
there are directories, a server-side copy on a bucket. Listings leave such
names out (:func:`is_temporary`).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import uuid
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

import pyarrow as pa
import pyarrow.fs as pafs

from tfbs import interrupts
from tfbs.storage import filesystems, hdfs
from tfbs.storage.gateway import GatewayHandler

#: A file being written: ``.<name>.tmp-<32 hex digits>`` next to its target.
_TEMPORARY_NAME = re.compile(r"^\..+\.tmp-[0-9a-f]{32}$")
#: The codecs ``compression="detect"`` picks by extension (pyarrow's own rule).
_CODECS_BY_SUFFIX = {".gz": "gzip", ".bz2": "bz2", ".lz4": "lz4", ".zst": "zstd"}
#: Bytes per read when copying streams.
_CHUNK = 1 << 22


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


def replace_file(fs: pafs.FileSystem, temporary: str, path: str) -> None:
    """Put the closed file ``temporary`` over ``path`` (same directory) in one step where the file system can: a rename, or a copy on a bucket."""
    if isinstance(fs, pafs.LocalFileSystem):
        os.replace(temporary, path)  # rename(2): atomic, replaces an existing file
        return
    if isinstance(fs, pafs.PyFileSystem) and isinstance(fs.handler, GatewayHandler):
        fs.handler.replace(temporary, path)  # the parent renames on the real file system
        return
    client = hdfs._hdfs_native_client(fs)
    if client is not None:
        # HDFS's plain rename refuses an existing target, and pyarrow's move
        # (fsspec's mv) calls it so. hdfs-native's overwrite flag sends
        # rename2 with OVERWRITE instead: the name node swaps the name under
        # its namespace lock, so readers see the old file or the new one;
        # delete-then-rename would leave a moment with no file at all.
        client.rename(temporary, path, True)
        return
    if filesystems._is_object_store(fs):
        # No rename on a bucket: a server-side copy replaces the target in one
        # step (a reader gets the old object or the new one), then the hidden
        # source goes. Left behind by a failed delete, it stays out of every
        # listing and remove_leftovers sweeps it.
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
    that :func:`tfbs.storage.remove_leftovers` sweeps.
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
