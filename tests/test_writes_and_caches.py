"""Writes that publish whole or nothing, and local caches keyed by content (issue 32).

- :func:`tfbs.storage.replace_dir` swaps a directory in without a moment
  where a reader finds it partly deleted.
- A cached copy is current only if its content is the store's (not its size).
- Mirrors and export copies of killed processes are swept on the next run.
- The YARN archive is rebuilt when the dependencies pip resolves change.

GCS counterparts are in tests/test_uri_gcs.py (the emulator).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from tfbs import dir_swap, storage


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _write_tree(root: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)


# --------------------------------------------------------------------------
# replace_dir
# --------------------------------------------------------------------------

OLD = {"manifest.json": b"old", "records/part-0.rec": b"old 0", "records/part-1.rec": b"old 1"}
NEW = {"manifest.json": b"new", "records/part-0.rec": b"new 0"}


@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "aside"])
def test_replace_dir_swaps_whole_directories_and_leaves_nothing(tmp_path, monkeypatch, exchange):
    if not exchange:
        monkeypatch.setattr(dir_swap, "exchange", lambda first, second: False)
    _write_tree(tmp_path / "shards", OLD)
    _write_tree(tmp_path / "shards._staging", NEW)

    storage.replace_dir(
        storage.to_uri(tmp_path / "shards._staging"), storage.to_uri(tmp_path / "shards"), "manifest.json"
    )

    assert _tree(tmp_path / "shards") == NEW
    assert [p.name for p in tmp_path.iterdir()] == ["shards"]  # no staging, no old copy aside


def test_replace_dir_into_a_new_name(tmp_path):
    _write_tree(tmp_path / "staging", NEW)
    storage.replace_dir(storage.to_uri(tmp_path / "staging"), storage.to_uri(tmp_path / "shards"), "manifest.json")
    assert _tree(tmp_path / "shards") == NEW and not (tmp_path / "staging").exists()


def test_exchange_swaps_in_one_step(tmp_path):
    _write_tree(tmp_path / "a", {"x": b"a"})
    _write_tree(tmp_path / "b", {"x": b"b"})
    if not dir_swap.exchange(str(tmp_path / "a"), str(tmp_path / "b")):
        pytest.skip("this kernel or file system cannot exchange two names")
    assert _tree(tmp_path / "a") == {"x": b"b"} and _tree(tmp_path / "b") == {"x": b"a"}


@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "aside"])
def test_readers_never_find_a_partial_directory(tmp_path, monkeypatch, exchange):
    """A reader polling throughout finds at the name a directory written whole, or (renamed aside) none.

    Each look is one ``stat`` of the name: which directory it held at one
    moment. The old directory is deleted under another name, so a reader
    that resolves the name afresh never lands in one half deleted.
    """
    if not exchange:
        monkeypatch.setattr(dir_swap, "exchange", lambda first, second: False)
    elif not _can_exchange(tmp_path):
        pytest.skip("this kernel or file system cannot exchange two names")
    final = tmp_path / "shards"
    _write_tree(final, OLD)
    whole = {final.stat().st_ino}
    seen: set[int | None] = set()
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            try:
                seen.add(final.stat().st_ino)
            except FileNotFoundError:
                seen.add(None)

    reader = threading.Thread(target=poll)
    reader.start()
    try:
        for round_ in range(40):
            staging = tmp_path / f"shards._staging-{round_}"
            _write_tree(staging, OLD if round_ % 2 else NEW)
            whole.add(staging.stat().st_ino)
            storage.replace_dir(storage.to_uri(staging), storage.to_uri(final), "manifest.json")
    finally:
        stop.set()
        reader.join()
    # Renamed aside, the name is free for a moment; exchanged, never.
    assert seen - whole <= ({None} if not exchange else set()), seen - whole
    assert _tree(final) == OLD


def _can_exchange(tmp_path: Path) -> bool:
    (tmp_path / "probe-a").mkdir()
    (tmp_path / "probe-b").mkdir()
    try:
        return dir_swap.exchange(str(tmp_path / "probe-a"), str(tmp_path / "probe-b"))
    finally:
        (tmp_path / "probe-a").rmdir()
        (tmp_path / "probe-b").rmdir()


def test_aside_failure_puts_the_old_directory_back(tmp_path):
    _write_tree(tmp_path / "shards", OLD)
    _write_tree(tmp_path / "staging", NEW)
    local = pafs.LocalFileSystem()

    def move(src: str, dest: str) -> None:
        if src.endswith("/staging"):
            raise OSError("rename failed")
        local.move(src, dest)

    with pytest.raises(OSError, match="rename failed"):
        dir_swap.swap_in(
            _MoveFailing(local, move), str(tmp_path / "staging"), str(tmp_path / "shards"), str(tmp_path / ".aside")
        )

    assert _tree(tmp_path / "shards") == OLD and _tree(tmp_path / "staging") == NEW
    assert not (tmp_path / ".aside").exists()


class _MoveFailing:
    """A file system (HDFS-like: no exchange) whose ``move`` is ``move``."""

    def __init__(self, fs: pafs.FileSystem, move: Callable[[str, str], None]) -> None:
        self._fs, self.move = fs, move

    def get_file_info(self, path: str) -> pafs.FileInfo:
        return self._fs.get_file_info(path)

    def delete_dir(self, path: str) -> None:
        self._fs.delete_dir(path)
