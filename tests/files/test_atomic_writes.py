"""No half-written files on shared storage, and bounded storage.

- A writer killed mid-write (SIGKILL) never leaves its target present but
  truncated, on ``file://`` and on ``hdfs://`` (Hadoop's mini cluster):
  readers polling all along, and afterwards, find the old content or the
  new, whole.
- The model directory's remote keeps ``max_to_keep`` checkpoints, as the
  local mirror does, and its state file never names a missing one.
- Temporary mirrors and copies of exports do not pile up, nor do the
  temporaries killed writers leave (removed at a stage's start once stale).

Run as a script (``python tests/files/test_atomic_writes.py URI MODE SIZE CHUNKS PAUSE``)
it is the writer the kill tests start: it rewrites ``URI`` with numbered
generations until killed, saying on stdout where it is.
"""

from __future__ import annotations

import gc
import json
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from datetime import timedelta
from pathlib import Path

import pyarrow.fs as pafs
import pytest
from conftest import SUITE_MODEL, script_env, wait_until

from tfbs import storage

REPO = Path(__file__).resolve().parents[2]
#: The killed generation: two whole ones are there before it starts.
KILLED = 3


# --------------------------------------------------------------------------
# A writer killed mid-write
# --------------------------------------------------------------------------


def _content(generation: int, size: int) -> bytes:
    """Generation ``generation`` of the file: a header naming it and its size, then filler."""
    header = f"{generation:08d}{size:016d}".encode()
    return header + bytes([generation % 251]) * (size - len(header))


def _whole_generation(data: bytes) -> int | None:
    """The generation ``data`` is a whole copy of, else None (truncated or mixed)."""
    try:
        generation, size = int(data[:8]), int(data[8:24])
    except ValueError:
        return None
    return generation if data == _content(generation, size) else None


def _writer(uri: str, mode: str, size: int, chunks: int, pause: float) -> None:
    """Rewrite ``uri`` through tfbs.storage, generations 1 to ``KILLED``, then wait to be killed."""
    for generation in range(1, KILLED + 1):
        data = _content(generation, size)
        print(f"start {generation}", flush=True)
        if mode == "stream":
            step = -(-len(data) // chunks)
            with storage.open_output(uri, compression=None) as out:
                for chunk in range(chunks):
                    out.write(data[chunk * step : (chunk + 1) * step])
                    out.flush()
                    print(f"chunk {generation} {chunk}", flush=True)
                    time.sleep(pause)
        else:
            storage.write_bytes(uri, data)
        print(f"done {generation}", flush=True)
    time.sleep(600)


class _Poller(threading.Thread):
    """Reads the target over and over, sorting what it finds."""

    def __init__(self, uri: str) -> None:
        super().__init__(daemon=True)
        self.uri = uri
        self.stopped = threading.Event()
        self.whole: list[int] = []
        self.partial: list[tuple[int, bytes]] = []
        self.missing = self.errors = self.reads = 0

    def run(self) -> None:
        while not self.stopped.is_set():
            self.reads += 1
            try:
                with storage.open_input(self.uri, compression=None) as stream:
                    data = stream.read()
            except FileNotFoundError:
                self.missing += 1
                continue
            except OSError:
                # HDFS: the old file's blocks may go while it is being read
                # (renamed over); an error, not a short read.
                self.errors += 1
                continue
            generation = _whole_generation(data)
            if generation is None:
                self.partial.append((len(data), data[:24]))
            else:
                self.whole.append(generation)


def _lines(proc: subprocess.Popen) -> queue.Queue:
    lines: queue.Queue = queue.Queue()

    def read() -> None:
        for line in proc.stdout:
            lines.put(line.split())
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    return lines


def _into_write_bytes(uri: str, lines: queue.Queue, done: int) -> int:
    """Wait until the writer is inside write_bytes of generation ``KILLED``: its hidden copy is
    there, or (rarely) already renamed over the target. Returns the last generation done."""
    directory = uri.rsplit("/", 1)[0]

    def finished() -> bool:
        return ["done", str(KILLED)] in list(lines.queue)

    wait_until(lambda: any(map(storage.is_temporary, _raw_names(directory))) or finished(), "the writer's copy")
    return KILLED if finished() else done


def _kill_mid_write(uri: str, mode: str, size: int, chunks: int = 1, pause: float = 0.0) -> tuple[int, _Poller]:
    """Start the writer, SIGKILL it while it writes generation ``KILLED``; returns the last whole one."""
    poller = _Poller(uri)
    poller.start()
    command = [sys.executable, __file__, uri, mode, str(size), str(chunks), str(pause)]
    proc = subprocess.Popen(command, cwd=REPO, env=script_env(), stdout=subprocess.PIPE, text=True)
    lines, done = _lines(proc), 0
    try:
        while True:
            line = lines.get(timeout=120)
            assert line is not None, "the writer exited before it was killed"
            if line[0] == "done":
                done = int(line[1])
            if mode == "stream" and line[:3] == ["chunk", str(KILLED), "1"]:
                break  # two chunks of the generation written and flushed, more to come
            if mode == "bytes" and line == ["start", str(KILLED)]:
                done = _into_write_bytes(uri, lines, done)
                break
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        after_kill = poller.reads
        wait_until(lambda: poller.reads >= after_kill + 3, "three reads of what the killed writer left")
        poller.stopped.set()
        poller.join(timeout=60)
    return done, poller


def _raw_names(directory_uri: str) -> list[str]:
    """Every name in a directory, temporary ones included (not through list_files)."""
    fs, path = storage.filesystem(directory_uri)
    return sorted(info.base_name for info in fs.get_file_info(pafs.FileSelector(path)))


def _check_killed_writer(base: str, mode: str, size: int, chunks: int = 1, pause: float = 0.0) -> None:
    target = f"{base}/{mode}/data.bin"
    done, poller = _kill_mid_write(target, mode, size, chunks, pause)

    assert done == KILLED - 1 or (mode == "bytes" and done == KILLED)
    assert poller.partial == []  # not once present but truncated
    assert len(poller.whole) > 0 and set(poller.whole) <= {1, 2, 3}
    with storage.open_input(target, compression=None) as stream:
        last = _whole_generation(stream.read())
    if mode == "stream" and base.startswith("hdfs://"):
        # Killed with a third of generation 3 written: the target is generation 2. An HDFS
        # file is written when closed, from its local spool: HDFS never saw generation 3.
        assert last == KILLED - 1
        assert _raw_names(f"{base}/{mode}") == ["data.bin"]
    elif mode == "stream":
        # Killed with a third of generation 3 written: the target is generation 2,
        # the bytes of 3 under a hidden name that listings leave out.
        assert last == KILLED - 1
        assert any(storage.is_temporary(name) for name in _raw_names(f"{base}/{mode}"))
        # Left for good by the kill; removed once old enough that no live writer can own it.
        assert storage.remove_leftovers(f"{base}/{mode}") == []
        assert [left.kind for left in storage.remove_leftovers(f"{base}/{mode}", older_than=timedelta(0))] == [
            "temporary"
        ]
        assert _raw_names(f"{base}/{mode}") == ["data.bin"]
    else:
        assert last in (KILLED - 1, KILLED)  # the kill may land after the rename
    assert storage.list_files(f"{base}/{mode}") == [target]


@pytest.mark.parametrize("mode, size, chunks", [("stream", 8 << 20, 6), ("bytes", 64 << 20, 1)])
def test_killed_writer_leaves_old_or_new_file_local(tmp_path, mode, size, chunks):
    _check_killed_writer(storage.to_uri(tmp_path), mode, size, chunks, pause=0.05)


@pytest.mark.parametrize("mode, size, chunks", [("stream", 2 << 20, 6), ("bytes", 4 << 20, 1)])
def test_killed_writer_leaves_old_or_new_file_hdfs(hdfs, mode, size, chunks):
    _check_killed_writer(f"{hdfs}/atomic/killed", mode, size, chunks, pause=0.05)


def test_failed_write_keeps_the_old_file(tmp_path):
    target = storage.to_uri(tmp_path / "report.json")
    storage.write_text(target, "old")
    with pytest.raises(RuntimeError, match="half way"), storage.open_output(target) as out:
        out.write(b"new, but only")
        raise RuntimeError("half way")
    assert storage.read_text(target) == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]  # the temporary went too

    def failing_plot(path: str) -> None:
        Path(path).write_text("half a figure")
        raise ValueError("plot failed")

    with pytest.raises(ValueError, match="plot failed"):
        storage.write_through_local(target, failing_plot)
    assert storage.read_text(target) == "old"


#: A Ctrl-C whose KeyboardInterrupt a finalizer swallows (as py4j's did in
#: evaluate), then the stage's writes: none may be published.
SWALLOWED_INTERRUPT = """
import os, signal, sys
from tfbs import storage
from tfbs.interrupts import note_interrupts

target, staging, final = sys.argv[1:]
storage.write_text(target, "old")
def pyspark_like(signum, frame):
    raise KeyboardInterrupt
signal.signal(signal.SIGINT, pyspark_like)
note_interrupts()
try:
    os.kill(os.getpid(), signal.SIGINT)
except KeyboardInterrupt:
    print("swallowed", flush=True)
for publish in (lambda: storage.write_text(target, "new"), lambda: storage.replace_dir(staging, final, "m")):
    try:
        publish()
        print("published", flush=True)
    except KeyboardInterrupt as err:
        print(f"refused: {err}", flush=True)
"""


def test_a_swallowed_interrupt_still_stops_every_publication(tmp_path):
    target, staging, final = tmp_path / "report.json", tmp_path / "staging", tmp_path / "shards"
    staging.mkdir()
    (staging / "m").write_text("marker")
    args = [storage.to_uri(target), storage.to_uri(staging), storage.to_uri(final)]
    done = subprocess.run(
        [sys.executable, "-c", SWALLOWED_INTERRUPT, *args], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[0] == "swallowed" and len(lines) == 3, done.stdout
    assert lines[1].startswith("refused: interrupted earlier:") and "report.json" in lines[1]
    assert lines[2].startswith("refused: interrupted earlier:") and "shards" in lines[2]
    assert target.read_text() == "old" and not final.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json", "staging"]  # no temporary left


def test_readers_and_uploads_skip_temporaries(tmp_path):
    local = tmp_path / "tree"
    (local / "ckpt").mkdir(parents=True)
    (local / "ckpt" / "checkpoint").write_text("state")
    (local / "ckpt" / storage.temporary_name("ckpt-2.index")).write_text("half")
    remote = storage.to_uri(tmp_path / "remote")

    assert storage.upload_tree(local, remote) == 1
    storage.write_text(f"{remote}/ckpt/{storage.temporary_name('ckpt-3.index')}", "still being written")
    assert storage.list_files(remote) == [f"{remote}/ckpt/checkpoint"]
    assert list(storage.list_sizes(remote).values()) == [5]
    assert storage.download_tree(remote, tmp_path / "copy") == 1
    assert [p.name for p in (tmp_path / "copy" / "ckpt").iterdir()] == ["checkpoint"]


# --------------------------------------------------------------------------
# The model directory's remote honours max_to_keep
# --------------------------------------------------------------------------


def _saves_through_mirror(directory, monkeypatch) -> list[tuple[str, str]]:
    """Five checkpoints of a CheckpointManager(max_to_keep=3) in the mirror, pushed after each.

    After every push the remote state must name only checkpoints the remote
    has. Returns the storage operations of the last push, in order.
    """
    import tensorflow as tf

    value = tf.Variable(0.0)
    manager = tf.train.CheckpointManager(
        tf.train.Checkpoint(value=value), f"{directory.local}/checkpoints", max_to_keep=3
    )
    operations: list[tuple[str, str]] = []
    upload, delete = storage.upload_file, storage.delete_file
    # Where the callers look the names up: storage.upload_tree's own module, and the package (ModelDirectory).
    monkeypatch.setattr(
        storage.transfers, "upload_file", lambda src, uri: (operations.append(("put", uri)), upload(src, uri))
    )
    monkeypatch.setattr(storage, "delete_file", lambda uri: (operations.append(("del", uri)), delete(uri))[1])
    for step in range(1, 6):
        value.assign(float(step))
        manager.save(checkpoint_number=step)
        operations.clear()
        directory.push()
        assert set(_remote_state(directory.uri)) <= _remote_checkpoints(directory.uri)
    return operations


def _remote_state(uri: str) -> list[str]:
    """The checkpoints the remote state file names (newest first)."""
    lines = storage.read_text(f"{uri}/checkpoints/checkpoint").splitlines()
    keys = ("model_checkpoint_path:", "all_model_checkpoint_paths:")
    return [line.split(": ", 1)[1].strip('"') for line in lines if line.startswith(keys)]


def _remote_checkpoints(uri: str) -> set[str]:
    """Checkpoints with an index file in the remote's checkpoint folder."""
    names = [f.rsplit("/", 1)[-1] for f in storage.list_files(f"{uri}/checkpoints")]
    return {name.removesuffix(".index") for name in names if name.endswith(".index")}


def _check_max_to_keep(directory, monkeypatch) -> None:
    import tensorflow as tf

    storage.write_text(f"{directory.uri}/_TRAINING_DONE", "{}")  # others' files next to the mirror's
    last_push = _saves_through_mirror(directory, monkeypatch)

    assert _remote_checkpoints(directory.uri) == {"ckpt-3", "ckpt-4", "ckpt-5"}
    assert _remote_state(directory.uri)[0] == "ckpt-5"
    assert storage.exists(f"{directory.uri}/_TRAINING_DONE")
    # The last push: the new checkpoint, then the state file, then ckpt-2's files.
    kinds = [(kind, uri.rsplit("/", 1)[-1].split(".")[0]) for kind, uri in last_push]
    state_at = kinds.index(("put", "checkpoint"))
    assert {name for kind, name in kinds[:state_at]} == {"ckpt-5"}
    assert kinds[state_at + 1 :] == [("del", "ckpt-2"), ("del", "ckpt-2")]  # data and index
    # A fresh mirror (a resumed run) restores the newest.
    from tf_models.model_dir import ModelDirectory

    with ModelDirectory(directory.uri, tempfile.mkdtemp(prefix="tfbs-model-"), temporary=True) as fresh:
        fresh.pull()
        uploads: list[str] = []
        monkeypatch.setattr(storage.transfers, "upload_file", lambda src, uri: uploads.append(uri))  # upload_tree's
        fresh.push()
        assert uploads == []  # what was pulled is not sent back
        value = tf.Variable(0.0)
        tf.train.Checkpoint(value=value).restore(tf.train.latest_checkpoint(f"{fresh.local}/checkpoints"))
        assert float(value.numpy()) == 5.0


def test_push_honours_max_to_keep_file_mirror(tmp_path, monkeypatch):
    from tf_models.model_dir import ModelDirectory

    directory = ModelDirectory(storage.to_uri(tmp_path / "model"), str(tmp_path / "mirror"))
    assert directory.mirrored
    _check_max_to_keep(directory, monkeypatch)


def test_push_honours_max_to_keep_hdfs(hdfs, tmp_path, monkeypatch):
    from tf_models.model_dir import model_directory

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with model_directory(f"{hdfs}/atomic/max_to_keep/model") as directory:
        _check_max_to_keep(directory, monkeypatch)


# --------------------------------------------------------------------------
# Temporary mirrors and export copies do not pile up
# --------------------------------------------------------------------------


def _mirrors(root: Path) -> list[str]:
    return sorted(p.name for p in root.glob("tfbs-*/mirrors/tfbs-model-*"))


def test_mirrors_are_removed(hdfs, tmp_path, monkeypatch):
    from tf_models.model_dir import model_directory

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    uri = f"{hdfs}/atomic/mirrors/model"
    storage.write_text(f"{uri}/history.json", "[]")

    directory = model_directory(uri)
    directory.pull()
    assert _mirrors(tmp_path) and Path(directory.local, "history.json").exists()
    directory.close()
    directory.close()  # idempotent
    assert _mirrors(tmp_path) == []

    with model_directory(uri) as directory:
        directory.pull()
        assert len(_mirrors(tmp_path)) == 1
    assert _mirrors(tmp_path) == []

    model_directory(uri).pull("checkpoints")  # dropped without close, as a caller might
    gc.collect()
    assert _mirrors(tmp_path) == []
    assert storage.read_text(f"{uri}/history.json") == "[]"  # the remote is untouched

    local = model_directory(storage.to_uri(tmp_path / "local-model"))
    local.close()  # a local model directory is the directory itself: never removed
    assert not local.mirrored and local.local == str(tmp_path / "local-model")


def test_train_on_hdfs_leaves_no_mirror(hdfs, tmp_path, monkeypatch):
    """A few steps of the real loop with the model on HDFS: checkpoints there, no mirror left."""
    import numpy as np
    import tensorflow as tf

    from tf_models.train_loop import TrainingRun, train
    from tfbs.config import load_config
    from tfbs.formats.records import RecordLayout, write_record_file

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    window, rng = 200, np.random.default_rng(0)
    layout = RecordLayout(window)
    files = []
    for label in (1, 0):
        bases = rng.choice(np.frombuffer(b"ACGT", np.uint8), (32, window))
        rows = [(bases[i].tobytes(), label, 0, i % 2, 0.5) for i in range(32)]
        files.append(str(tmp_path / f"records-{label}.rec"))
        write_record_file(rows, files[-1], layout)
    run = TrainingRun([files[0]], [[files[1]]], [], 0.5, layout, ["MKTAYIAKQR" * 4], n_cells=2, n_positive=32)
    cfg = load_config(
        REPO / "conf" / "demo.yaml",
        [
            *SUITE_MODEL,
            "train.steps=30",
            "train.steps_per_execution=5",
            "train.checkpoint_every_steps=5",
            "train.batch_size=8",
            "train.model.architecture=motif_cnn",
            "train.model.motif_cnn.filters=4",
            "train.model.aa_filters=[4]",
            "train.model.aa_max_length=40",
            "train.model.dense_units=4",
            "train.model.dna_center_bp=100",
        ],
    ).train
    uri = f"{hdfs}/atomic/train/model"

    result = train(cfg, uri, run, tf.distribute.get_strategy())

    assert result.steps == 30
    assert _mirrors(tmp_path) == []
    assert _remote_checkpoints(uri) == {"ckpt-20", "ckpt-25", "ckpt-30"}  # 6 saves, max_to_keep=3
    assert _remote_state(uri)[0] == "ckpt-30"
    assert [entry["step"] for entry in json.loads(storage.read_text(f"{uri}/history.json"))][-1] == 30
    # What the export step does today after train(): write under the mirror, push.
    Path(result.directory.local, "export").mkdir(parents=True)
    Path(result.directory.local, "export", "saved_model.pb").write_bytes(b"model")
    result.directory.push()
    assert storage.read_text(f"{uri}/export/saved_model.pb") == "model"
    assert _remote_checkpoints(uri) == {"ckpt-20", "ckpt-25", "ckpt-30"}
    del result
    gc.collect()
    assert _mirrors(tmp_path) == []


def test_local_export_one_copy_per_node_and_version(hdfs, tmp_path, monkeypatch):
    from tf_models.model_dir import export_cache, local_export

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    export = f"{hdfs}/atomic/export/model/export"
    storage.write_bytes(f"{export}/saved_model.pb", b"graph v1")
    storage.write_bytes(f"{export}/variables/variables.data-00000-of-00001", bytes(2 << 20))
    storage.write_bytes(f"{export}/variables/variables.index", b"checksums v1")

    first = local_export(export)
    assert local_export(export) == first  # reused: another task, or another process of the node
    assert Path(first, "variables", "variables.index").read_bytes() == b"checksums v1"

    storage.write_bytes(f"{export}/variables/variables.index", b"checksums v2")  # retrained, same sizes
    second = local_export(export)
    assert second != first and Path(second, "variables", "variables.index").read_bytes() == b"checksums v2"
    assert [p.name for p in export_cache().iterdir()] == [Path(second).name]  # v1 removed
    assert export_cache().parent.parent == tmp_path and export_cache().stat().st_mode & 0o777 == 0o700


if __name__ == "__main__":
    _writer(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]))


def test_hdfs_native_writer_is_handed_every_write_as_bytes():
    """pyarrow passes its own buffers; hdfs-native takes them 30x slower than bytes (bench/hdfs_speed.py)."""
    import pyarrow as pa

    received = []

    class Writer:  # stands in for hdfs_native.FileWriter
        def write(self, data):
            received.append(data)

        def close(self):
            received.append("closed")

    stream = pa.PythonFile(storage._BytesWriter(Writer()), mode="w")
    stream.write(memoryview(b"ACGT"))
    stream.write(pa.py_buffer(b"NN"))
    stream.close()
    assert received == [b"ACGT", b"NN", "closed"] and all(type(chunk) is bytes for chunk in received[:2])
