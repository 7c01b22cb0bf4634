"""Remote storage for a process without a network of its own, through its parent.

A TF node's process lives in a private network (only its loopback, see
``tf_models.tfos.private_network``), from where no HDFS NameNode or bucket
can be reached. Its parent, on the host's network, serves as its gateway:
:class:`StorageGateway` answers requests on one end of a Unix socket pair,
and the node process, given the other end in ``TFBS_STORAGE_GATEWAY_FD``,
gets every remote file system of :func:`tfbs.storage.filesystem` as a
:class:`GatewayHandler` that forwards each operation there. Both processes
share the host's file system: file contents pass as local files in a
spool folder, not through the socket.

The requests are pickles: both ends are the same program, forked, and the
socket pair is reachable by no other process.
"""

from __future__ import annotations

import os
import pickle
import shutil
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


def _send(sock: socket.socket, message: Any) -> None:
    payload = pickle.dumps(message)
    sock.sendall(_LENGTH.pack(len(payload)) + payload)


def _receive(sock: socket.socket) -> Any:
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


def _info_tuple(info: pafs.FileInfo) -> tuple[str, int, int | None, int | None]:
    return (info.path, int(info.type), info.size, info.mtime_ns)


def _info(fields: tuple[str, int, int | None, int | None]) -> pafs.FileInfo:
    path, kind, size, mtime_ns = fields
    return pafs.FileInfo(path, pafs.FileType(kind), size=size, mtime_ns=mtime_ns)


class StorageGateway:
    """The parent's side: performs the node process's storage operations on the real file systems.

    Parameters
    ----------
    sock : socket.socket
        The parent's end of the pair; served in a daemon thread until the node process closes its end.
    """

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._thread = threading.Thread(target=self._serve, name="tfbs-storage-gateway", daemon=True)

    def start(self) -> StorageGateway:
        """Serve in a daemon thread; returns self."""
        self._thread.start()
        return self

    def close(self) -> None:
        """Close the parent's end (the thread ends)."""
        self._sock.close()

    def _serve(self) -> None:
        while True:
            try:
                operation, base, args = _receive(self._sock)
            except (ConnectionError, OSError, EOFError):
                return
            try:
                reply: Any = ("ok", self._perform(operation, base, args))
            except Exception as err:  # noqa: BLE001 - raised again in the node process
                reply = ("error", err)
            try:
                _send(self._sock, reply)
            except OSError:
                return

    def _perform(self, operation: str, base: str, args: tuple) -> Any:
        from tfbs import storage

        fs, _ = storage.filesystem(f"{base}/")
        if operation == "type_name":
            return fs.type_name
        if operation == "info":
            return [_info_tuple(info) for info in fs.get_file_info(list(args[0]))]
        if operation == "list":
            path, allow_not_found, recursive = args
            selector = pafs.FileSelector(path, allow_not_found=allow_not_found, recursive=recursive)
            return [_info_tuple(info) for info in fs.get_file_info(selector)]
        if operation == "fetch":
            path, local = args
            with fs.open_input_stream(path) as source, open(local, "wb") as target:
                shutil.copyfileobj(source, target, 1 << 22)
            return None
        if operation in ("put", "append"):
            path, local = args
            opener = fs.open_output_stream if operation == "put" else fs.open_append_stream
            with open(local, "rb") as source, opener(path) as target:
                shutil.copyfileobj(source, target, 1 << 22)
            return None
        if operation == "replace":
            storage.replace_file(fs, *args)
            return None
        if operation == "create_dir":
            path, recursive = args
            return fs.create_dir(path, recursive=recursive)
        if operation == "delete_dir_contents":
            path, missing_dir_ok = args
            return fs.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)
        if operation in ("delete_dir", "delete_file", "move", "copy_file"):
            return getattr(fs, operation)(*args)
        raise ValueError(f"the storage gateway does no {operation!r}")


class _Connection:
    """The node process's end of the pair: one request at a time, from any thread."""

    def __init__(self, fd: int) -> None:
        self._sock = socket.socket(fileno=os.dup(fd))
        self._lock = threading.Lock()
        self.spool = Path(tempfile.mkdtemp(prefix="tfbs-gateway-spool-"))

    def call(self, operation: str, base: str, *args: Any) -> Any:
        with self._lock:
            _send(self._sock, (operation, base, args))
            status, value = _receive(self._sock)
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
