"""Writes that publish whole or nothing, and local caches keyed by content (issue 32).

- :func:`tfbs.storage.replace_dir` swaps a directory in without a moment
  where a reader finds it partly deleted.
- A cached copy is current only if its content is the store's (not its size).
- Mirrors and export copies of killed processes are swept on the next run.
- The YARN archive is rebuilt when the dependencies pip resolves change.

GCS counterparts are in tests/files/test_storage_gcs.py (the emulator).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow.fs as pafs
import pytest
from blake3 import blake3

from tfbs import storage
from tfbs.lineage import DamagedExportError
from tfbs.storage import content_keys, dir_swap, owned_dirs

REPO = Path(__file__).resolve().parents[2]


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
        pytest.fail(
            "renameat2(RENAME_EXCHANGE) refused here: replace_dir would rename aside (Linux 3.15+, most local file systems, have it)"
        )
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
        pytest.fail(
            "renameat2(RENAME_EXCHANGE) refused here: replace_dir would rename aside (Linux 3.15+, most local file systems, have it)"
        )
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


# --------------------------------------------------------------------------
# Caches keyed by content
# --------------------------------------------------------------------------


def test_fetch_file_refetches_a_same_size_rewrite(tmp_path):
    source, copy = tmp_path / "remote" / "variables.data", tmp_path / "copy" / "variables.data"
    source.parent.mkdir()
    source.write_bytes(b"A" * 4096)

    assert storage.fetch_file(storage.to_uri(source), copy)
    assert not storage.fetch_file(storage.to_uri(source), copy)  # the same bytes: kept
    source.write_bytes(b"B" * 4096)  # retrained: the same size
    assert storage.fetch_file(storage.to_uri(source), copy)
    assert copy.read_bytes() == b"B" * 4096


def test_fetch_file_on_gcs_compares_the_stored_md5(gcs_base, tmp_path):
    uri, copy = f"{gcs_base}/variables.data", tmp_path / "variables.data"
    storage.write_bytes(uri, b"A" * 4096)
    fs, path = storage.filesystem(uri)
    assert content_keys.stored_key(fs, path) == content_keys.local_key(_bytes_file(tmp_path, b"A" * 4096), "md5:")

    assert storage.fetch_file(uri, copy)
    assert not storage.fetch_file(uri, copy)
    storage.write_bytes(uri, b"B" * 4096)
    assert storage.fetch_file(uri, copy) and copy.read_bytes() == b"B" * 4096


def _bytes_file(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "bytes"
    path.write_bytes(data)
    return path


def _write_export(base: str, data: bytes, record: bool) -> None:
    """A stand-in export at ``base``: a graph, a 2 MiB variables file, its metadata; ``record``: with digests."""
    files = {"saved_model.pb": b"graph", "variables/variables.data-00000-of-00001": data}
    for name, content in files.items():
        storage.write_bytes(f"{base}/{name}", content)
    if record:
        keys = {name: f"blake3:{blake3(content).hexdigest()}" for name, content in files.items()}
        storage.write_text(f"{base}/{content_keys.DIGESTS_NAME}", json.dumps(keys))
    storage.write_text(f"{base}/tfbs_metadata.json", "{}")


@pytest.mark.parametrize("record", [True, False], ids=["recorded", "unrecorded"])
def test_local_export_copy_follows_content_past_1_mib(gcs_base, tmp_path, monkeypatch, record):
    from tf_models.model_dir import export_cache, local_export

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    export = f"{gcs_base}/model/export"
    _write_export(export, b"\1" * (2 << 20), record)
    first = local_export(export)
    assert local_export(export) == first

    _write_export(export, b"\2" * (2 << 20), record)  # retrained: every size the same
    second = local_export(export)
    assert second != first
    assert Path(second, "variables", "variables.data-00000-of-00001").read_bytes()[:1] == b"\2"
    assert [p.name for p in export_cache().iterdir()] == [Path(second).name]


def test_local_export_refuses_a_copy_unlike_its_record(gcs_base, tmp_path, monkeypatch):
    from tf_models.model_dir import export_cache, local_export

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    export = f"{gcs_base}/model/export"
    _write_export(export, b"\1" * 1024, record=True)
    storage.write_bytes(f"{export}/saved_model.pb", b"rewritten meanwhile")

    with pytest.raises(DamagedExportError) as refused:
        local_export(export)
    assert str(refused.value).startswith(
        f"{export}/saved_model.pb: not the bytes {content_keys.DIGESTS_NAME} records"
        ": damaged, truncated or rewritten since export (the export changed while it was copied: run again;"
    )
    assert list(export_cache().iterdir()) == []


def test_local_export_copies_again_a_copy_damaged_in_the_cache(gcs_base, tmp_path, monkeypatch):
    """The export cache is checked against the record on every use, not only when filled."""
    from tf_models.model_dir import local_export

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    export = f"{gcs_base}/model/export"
    _write_export(export, b"\1" * 4096, record=True)
    copy = Path(local_export(export), "variables", "variables.data-00000-of-00001")
    copy.write_bytes(copy.read_bytes()[:100])  # truncated after it was installed
    assert Path(local_export(export)) == copy.parents[1]
    assert copy.read_bytes() == b"\1" * 4096


def test_record_digests_names_every_file(tmp_path):
    _write_tree(tmp_path, {"saved_model.pb": b"graph", "variables/variables.index": b"index"})
    keys = content_keys.record_digests(tmp_path)
    assert json.loads((tmp_path / content_keys.DIGESTS_NAME).read_text()) == keys
    assert keys == {
        "saved_model.pb": f"blake3:{blake3(b'graph').hexdigest()}",
        "variables/variables.index": f"blake3:{blake3(b'index').hexdigest()}",
    }


# --------------------------------------------------------------------------
# Folders of killed processes
# --------------------------------------------------------------------------

_HOLDER = """
import sys, time
from tfbs.storage import owned_dirs
owned_dirs.claim(sys.argv[1])
print("claimed", flush=True)
time.sleep(600)
"""


def _claiming_process(folder: Path) -> subprocess.Popen:
    """A process that claims ``folder`` and lives on (until killed)."""
    process = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(folder)], stdout=subprocess.PIPE, text=True, cwd=REPO
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "claimed"
    return process


def _age(folder: Path, hours: float) -> None:
    then = time.time() - hours * 3600
    os.utime(folder, (then, then))


def test_sweep_removes_folders_of_killed_processes_only(tmp_path):
    killed, alive, young = (tmp_path / f"tfbs-model-{n}" for n in ("killed", "alive", "young"))
    for folder in (killed, alive, young):
        _write_tree(folder, {"ckpt-1.index": b"x"})
    dead = _claiming_process(killed)
    dead.send_signal(signal.SIGKILL)
    dead.wait()
    living = _claiming_process(alive)
    try:
        for folder in (killed, alive):
            _age(folder, 2)
        removed = owned_dirs.sweep(tmp_path, lambda name: name.startswith("tfbs-model-"))
        assert removed == [killed]
        assert alive.is_dir() and young.is_dir()  # claimed; unclaimed but just made
    finally:
        living.kill()
        living.wait()


def test_model_directory_sweeps_mirrors_of_killed_runs(gcs_base, tmp_path, monkeypatch):
    from tf_models.model_dir import MIRROR_PREFIX, model_directory
    from tfbs.storage.private_dirs import user_temp_dir

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    mirrors = user_temp_dir("mirrors")
    stale = mirrors / f"{MIRROR_PREFIX}killed"
    _write_tree(stale, {"checkpoints/ckpt-1.index": b"x"})
    _age(stale, 2)

    first = model_directory(f"{gcs_base}/model")
    _age(Path(first.local), 2)  # old, but its process (this one) is alive and claims it
    second = model_directory(f"{gcs_base}/model")

    assert sorted(p.name for p in mirrors.iterdir()) == sorted([Path(first.local).name, Path(second.local).name])
    for directory in (first, second):
        directory.close()


def test_local_export_sweeps_unfinished_copies_of_killed_processes(gcs_base, tmp_path, monkeypatch):
    from tf_models.model_dir import export_cache, local_export

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    unfinished = export_cache() / storage.temporary_name("0123456789abcdef-fedcba9876543210")
    _write_tree(unfinished, {"saved_model.pb": b"half"})
    _age(unfinished, 2)
    export = f"{gcs_base}/model/export"
    _write_export(export, b"\1" * 16, record=True)

    copy = local_export(export)
    assert [p.name for p in export_cache().iterdir()] == [Path(copy).name]


# --------------------------------------------------------------------------
# The YARN archive's stamp
# --------------------------------------------------------------------------

#: Stands in for $PYTHON: the real interpreter, but pip's dry run answers with $FAKE_PIP_REPORT (fails if unset).
_FAKE_PYTHON = """#!/usr/bin/env bash
case " $* " in
  *" --dry-run "*)
    [ -n "${FAKE_PIP_REPORT:-}" ] || exit 1
    while [ $# -gt 0 ]; do [ "$1" = --report ] && cp "$FAKE_PIP_REPORT" "$2"; shift; done
    exit 0;;
esac
exec "%s" "$@"
"""


def _pip_report(path: Path, versions: dict[str, str]) -> Path:
    install = [{"metadata": {"name": name, "version": version}} for name, version in versions.items()]
    path.write_text(json.dumps({"version": "1", "install": install}))
    return path


def _build_dist(tmp_path: Path, mode: str, report: Path | None) -> subprocess.CompletedProcess:
    python = tmp_path / "python"
    python.write_text(_FAKE_PYTHON % sys.executable)
    python.chmod(0o755)
    env = {
        **os.environ,
        "PYTHON": str(python),
        "DIST_OUT": str(tmp_path / "dist"),
        "FAKE_PIP_REPORT": str(report or ""),
    }
    return subprocess.run(
        ["bash", "scripts/build_dist.sh", mode], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )


def test_archive_stamp_follows_the_resolved_dependencies(tmp_path):
    resolved = _pip_report(tmp_path / "a.json", {"numpy": "2.4.6", "tensorflow-cpu": "2.21.0"})
    stamped = _build_dist(tmp_path, "--stamp", resolved)
    assert stamped.returncode == 0, stamped.stderr
    assert stamped.stdout.splitlines()[1:] == ["numpy==2.4.6", "tensorflow-cpu==2.21.0"]
    # What a build leaves: the archive, the jars, the stamp.
    (tmp_path / "dist").mkdir(exist_ok=True)  # the resolution may have put its pip there
    (tmp_path / "dist" / "tfbs-env.tar.gz").touch()
    (tmp_path / "dist" / "spark-jars.zip").touch()
    (tmp_path / "dist" / ".sources.sha256").write_text(stamped.stdout)

    same = _build_dist(tmp_path, "--check", resolved)
    assert same.returncode == 0 and same.stdout.startswith("up to date:"), same.stdout + same.stderr

    released = _pip_report(tmp_path / "b.json", {"numpy": "2.4.7", "tensorflow-cpu": "2.21.0"})
    newer = _build_dist(tmp_path, "--check", released)
    assert newer.returncode == 1
    assert "dependencies resolved differently" in newer.stdout and "numpy==2.4.7" in newer.stdout

    offline = _build_dist(tmp_path, "--check", None)  # no resolution, nor could a rebuild make one
    assert offline.returncode == 0 and "could not resolve" in offline.stderr

    (tmp_path / "dist" / ".sources.sha256").write_text("0" * 64 + "\n" + "\n".join(stamped.stdout.splitlines()[1:]))
    changed = _build_dist(tmp_path, "--check", resolved)
    assert changed.returncode == 1 and "sources" in changed.stdout
