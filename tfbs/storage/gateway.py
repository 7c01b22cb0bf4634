"""Remote storage for a process without a network of its own, through its parent.

A TF node's process lives in a private network (only its loopback, see
``tf_models.tfos.private_network``), from where no HDFS NameNode or bucket
can be reached. Its parent, on the host's network, serves as its gateway:
:class:`~tfbs.storage.gateway_server.StorageGateway` answers requests on one
end of a Unix socket pair,
and the node process, given the other end in ``TFBS_STORAGE_GATEWAY_FD``,
gets every remote file system of :func:`tfbs.storage.filesystem` as a
:class:`GatewayHandler` that forwards each operation there. Both processes
share the host's file system: file contents pass as local files in a
spool folder, not through the socket.

This module is the node's side and the wire format; the parent's side is
:mod:`tfbs.storage.gateway_server`, apart because it serves through
:mod:`tfbs.storage`, which uses this module.

The requests are pickles: both ends are the same program, forked, and the
socket pair is reachable by no other process.
"""

from __future__ import annotations

import os
import pickle
import socket
import struct
import tempfile
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

#: The environment variable naming the node process's end of the pair (a file descriptor).
GATEWAY_FD_ENV = "TFBS_STORAGE_GATEWAY_FD"
_LENGTH = struct.Struct(">Q")


def send_message(sock: socket.socket, message: Any) -> None:
    """One pickled message, length first (both ends are this program)."""
    payload = pickle.dumps(message)
    sock.sendall(_LENGTH.pack(len(payload)) + payload)


def receive_message(sock: socket.socket) -> Any:
    """The next message of :func:`send_message`."""
    header = _exactly(sock, _LENGTH.size)
    return pickle.loads(_exactly(sock, _LENGTH.unpack(header)[0]))  # our own forked process's


def _exactly(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("the storage gateway's peer is gone")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def info_tuple(info: pafs.FileInfo) -> tuple[str, int, int | None, int | None]:
    """A file's information as plain values, to pickle."""
    return (info.path, int(info.type), info.size, info.mtime_ns)


def _info(fields: tuple[str, int, int | None, int | None]) -> pafs.FileInfo:
    path, kind, size, mtime_ns = fields
    return pafs.FileInfo(path, pafs.FileType(kind), size=size, mtime_ns=mtime_ns)


class _Connection:
    """The node process's end of the pair: one request at a time, from any thread."""

    def __init__(self, fd: int) -> None:
        self._sock = socket.socket(fileno=os.dup(fd))
        self._lock = threading.Lock()
        self.spool = Path(tempfile.mkdtemp(prefix="tfbs-gateway-spool-"))

    def call(self, operation: str, base: str, *args: Any) -> Any:
        with self._lock:
            send_message(self._sock, (operation, base, args))
            status, value = receive_message(self._sock)
        if status == "error":
            raise value
        return value


class _SpoolFile:
    """A local file that, closed, goes to the gateway (``put`` or ``append``) and is then removed."""

    def __init__(self, connection: _Connection, operation: str, base: str, path: str) -> None:
        self.connection, self.operation, self.base, self.path = connection, operation, base, path
        handle, self.local = tempfile.mkstemp(dir=connection.spool)
        self.file = os.fdopen(handle, "wb")
        self.closed = False

    def write(self, data: Any) -> int:
        return self.file.write(data)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.file.close()
        try:
            self.connection.call(self.operation, self.base, self.path, self.local)
        finally:
            os.unlink(self.local)

    def flush(self) -> None:
        self.file.flush()


class GatewayHandler(pafs.FileSystemHandler):
    """A remote file system (``hdfs://host:port``, ``gs://``) reached through the parent's :class:`StorageGateway`.

    Parameters
    ----------
    base : str
        The file system's URI prefix: ``hdfs://namenode:8020``, ``gs:/``.
    fd : int
        The node process's end of the pair.
    """

    def __init__(self, base: str, fd: int) -> None:
        self.base = base
        self.connection = _Connection(fd)
        self._type_name = str(self.connection.call("type_name", base))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GatewayHandler) and other.base == self.base

    def __ne__(self, other: object) -> bool:
        return not self == other

    def get_type_name(self) -> str:
        return self._type_name

    def normalize_path(self, path: str) -> str:
        return path

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        return [_info(fields) for fields in self.connection.call("info", self.base, list(paths))]

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        found = self.connection.call("list", self.base, selector.base_dir, selector.allow_not_found, selector.recursive)
        return [_info(fields) for fields in found]

    def create_dir(self, path: str, recursive: bool) -> None:
        self.connection.call("create_dir", self.base, path, recursive)

    def delete_dir(self, path: str) -> None:
        self.connection.call("delete_dir", self.base, path)

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        self.connection.call("delete_dir_contents", self.base, path, missing_dir_ok)

    def delete_root_dir_contents(self) -> None:
        raise PermissionError("the storage gateway never empties a file system's root")

    def delete_file(self, path: str) -> None:
        self.connection.call("delete_file", self.base, path)

    def move(self, src: str, dest: str) -> None:
        self.connection.call("move", self.base, src, dest)

    def copy_file(self, src: str, dest: str) -> None:
        self.connection.call("copy_file", self.base, src, dest)

    def replace(self, temporary: str, path: str) -> None:
        """Rename ``temporary`` over ``path`` as :func:`tfbs.storage.replace_file` does on the real file system."""
        self.connection.call("replace", self.base, temporary, path)

    def _fetched(self, path: str) -> pa.NativeFile:
        handle, local = tempfile.mkstemp(dir=self.connection.spool)
        os.close(handle)
        try:
            self.connection.call("fetch", self.base, path, local)
            return pa.OSFile(local, "rb")
        finally:
            os.unlink(local)  # open, it stays readable until closed

    def open_input_stream(self, path: str) -> pa.NativeFile:
        return self._fetched(path)

    def open_input_file(self, path: str) -> pa.NativeFile:
        return self._fetched(path)

    def open_output_stream(self, path: str, metadata: Any) -> pa.NativeFile:
        return pa.PythonFile(_SpoolFile(self.connection, "put", self.base, path), mode="w")

    def open_append_stream(self, path: str, metadata: Any) -> pa.NativeFile:
        return pa.PythonFile(_SpoolFile(self.connection, "append", self.base, path), mode="w")
