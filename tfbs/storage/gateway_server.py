"""The parent's side of the storage gateway (:mod:`tfbs.storage.gateway`): the real file systems, served.

Apart from the node's side because it serves through :mod:`tfbs.storage`,
whose remote file systems in a node process are the node's side.
"""

from __future__ import annotations

import shutil
import socket
import threading
from typing import Any

import pyarrow.fs as pafs

from tfbs import storage
from tfbs.storage.gateway import info_tuple, receive_message, send_message


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
                operation, base, args = receive_message(self._sock)
            except (ConnectionError, OSError, EOFError):
                return
            try:
                reply: Any = ("ok", self._perform(operation, base, args))
            except Exception as err:  # noqa: BLE001 - raised again in the node process
                reply = ("error", err)
            try:
                send_message(self._sock, reply)
            except OSError:
                return

    def _perform(self, operation: str, base: str, args: tuple) -> Any:
        fs, _ = storage.filesystem(f"{base}/")
        if operation == "type_name":
            return fs.type_name
        if operation == "info":
            return [info_tuple(info) for info in fs.get_file_info(list(args[0]))]
        if operation == "list":
            path, allow_not_found, recursive = args
            selector = pafs.FileSelector(path, allow_not_found=allow_not_found, recursive=recursive)
            return [info_tuple(info) for info in fs.get_file_info(selector)]
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
