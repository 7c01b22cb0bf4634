"""Faults as a user or a cluster meets them, on the real components.

- A Spark executor lost mid-preprocessing (``local-cluster``: real executor
  JVMs, one ``SIGKILL``ed): Spark recomputes what died with it, and the
  shards are byte for byte those of an undisturbed run.
- Every stage interrupted (``SIGINT``, as Ctrl-C) and killed (``SIGKILL``)
  mid-way, as users run it (``python -m jobs.<stage>``): nothing the next
  stage reads is left half-written, nothing of the run keeps running, and
  the same command run again succeeds (training resumes from its checkpoint).
- The chief's TensorFlow process killed while training with data and run
  on HDFS, under both distributed strategies: the rerun resumes from the
  checkpoint on HDFS and finishes.

Outputs are found by name wherever they lie under the run (``report.json``,
``saved_model.pb``, ...), so the checks hold however model versions and
reports are laid out.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import signal
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest
from conftest import DEMO_CONFIG, SMALL_OVERRIDES, StreamedProcess

from preprocess.manifest import MANIFEST_NAME, Manifest, read_manifest
from tfbs import uri as storage
from tfbs.config import load_config
from tfbs.errors import MissingInputError
from tfbs.session import _local_cluster_home

pytestmark = [pytest.mark.spark, pytest.mark.slow]

#: Set in each faulted command's environment: every process the run starts
#: (Spark JVMs, Python workers, TF nodes) inherits it.
RUN_MARKER = "TFBS_FAULT_RUN"
#: From a fault to the command's exit, and to the end of all it started.
EXIT_WITHIN_S = 120
#: A whole stage on 2 shared cores, start-up included.
STAGE_TIMEOUT_S = 900
#: Spark's console progress bar: a line per update once a stage has run 0.5 s.
SPARK_STAGE = re.compile(r"^\[Stage (\d+):", re.MULTILINE)
#: The Spark conf of the demo configuration, which a ``spark.conf`` override replaces whole.
DEMO_SPARK_CONF = load_config(DEMO_CONFIG).spark.conf


@dataclass
class Stage:
    """A stage's command line, as a user runs it again and again after faults."""

    stage: str
    overrides: list[str]
    arguments: tuple[str, ...] = ()
    #: Where ``local-cluster`` executors work and log (else inside the installed pyspark).
    spark_home: Path | None = None
    marker: str = field(default_factory=lambda: uuid.uuid4().hex)

    def command(self) -> list[str]:
        command = [sys.executable, "-m", f"jobs.{self.stage}", "--config", str(DEMO_CONFIG), *self.arguments]
        for override in [*SMALL_OVERRIDES, *self.overrides]:
            command += ["--set", override]
        return command

    def start(self) -> StreamedProcess:
        env = {**os.environ, RUN_MARKER: self.marker}
        if self.spark_home is not None:
            env["SPARK_HOME"] = _local_cluster_home(str(self.spark_home))
        return StreamedProcess(self.command(), env=env)

    def run(self) -> str:
        """Run to the end; it must succeed. Returns the output."""
        started = time.monotonic()
        process = self.start()
        try:
            code = process.wait(timeout=STAGE_TIMEOUT_S)
        finally:
            process.kill()
        assert code == 0, process.output[-4000:]
        print(f"{self.stage}: finished in {time.monotonic() - started:.1f} s")
        self.assert_nothing_left_running()
        return process.output

    def faulted(
        self, ready: Callable[[str], object], what: str, fault: Callable[[StreamedProcess, object], None]
    ) -> tuple[int, str, float]:
        """Start, call ``fault(process, ready(output))`` once ``ready`` holds, wait for the exit.

        Returns
        -------
        tuple
            The exit code, the output, and the seconds from the fault to the exit.
        """
        process = self.start()
        try:
            found = _wait_for(process, ready, what)
            fault(process, found)
            faulted_at = time.monotonic()
            code = process.wait(timeout=STAGE_TIMEOUT_S)
            seconds = time.monotonic() - faulted_at
        finally:
            process.kill()
        self.assert_nothing_left_running()
        return code, process.output, seconds

    def signalled(self, sig: signal.Signals, ready: Callable[[str], object], what: str) -> str:
        """Send ``sig`` to the command once ``ready`` holds; it must stop on it. Returns the output."""
        code, output, seconds = self.faulted(ready, what, lambda process, _: process.proc.send_signal(sig))
        # Killed by the signal: Python re-raises an unhandled SIGINT's
        # KeyboardInterrupt as the signal itself.
        assert code == -sig, f"exit {code} after {sig.name}:\n{output[-4000:]}"
        assert seconds < EXIT_WITHIN_S, f"{sig.name}: the command exited {seconds:.0f} s later"
        print(f"{self.stage}: {sig.name} at {what}; exited {seconds:.1f} s later")
        return output

    def assert_nothing_left_running(self) -> None:
        """Every process of the run ends soon after the command (no orphaned JVM, worker or TF node)."""
        deadline = time.monotonic() + EXIT_WITHIN_S
        left = _marked_processes(self.marker)
        while left and time.monotonic() < deadline:
            time.sleep(1)
            left = _marked_processes(self.marker)
        assert not left, f"still running {EXIT_WITHIN_S} s after the command ended: {left}"


def _marked_processes(marker: str) -> dict[int, str]:
    """Live processes whose environment carries ``RUN_MARKER=marker``: pid -> command line."""
    needle = f"{RUN_MARKER}={marker}\0".encode()
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes():
                found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()[:160]
        except OSError:
            continue  # gone meanwhile, or not ours to read
    return found


def _wait_for(process: StreamedProcess, ready: Callable[[str], object], what: str) -> object:
    """Poll the command's output until ``ready(output)`` is truthy; returns that value."""
    deadline = time.monotonic() + STAGE_TIMEOUT_S
    while time.monotonic() < deadline:
        found = ready(process.output)
        if found:
            return found
        if process.proc.poll() is not None:
            pytest.fail(f"the command ended before {what}:\n{process.output[-4000:]}")
        time.sleep(0.05)
    pytest.fail(f"no {what} within {STAGE_TIMEOUT_S} s:\n{process.output[-4000:]}")


def _spark_stage(number: int | None = None) -> Callable[[str], object]:
    """Ready once Spark's progress bar shows stage ``number`` (any stage if None) running."""
    return lambda output: any(number is None or int(n) == number for n in SPARK_STAGE.findall(output))


# --------------------------------------------------------------------------
# What the next stage reads: whole, wherever it is
# --------------------------------------------------------------------------


def _read_bytes(uri: str) -> bytes:
    with storage.open_input(uri, compression=None) as stream:
        return stream.read()


def _assert_whole_outputs(run_uri: str) -> Counter:
    """Every output under ``run_uri`` that a later stage or a rerun reads is complete.

    Returns
    -------
    Counter
        How many of each kind were found.
    """
    from tensorflow.core.protobuf import saved_model_pb2

    found: Counter = Counter()
    files = storage.list_files(run_uri) if storage.exists(run_uri) else []
    names = set(files)
    for uri in files:
        parent, name = uri.rsplit("/", 1)
        if name in ("report.json", "history.json", "tfbs_metadata.json", MANIFEST_NAME):
            json.loads(_read_bytes(uri))  # a truncated file does not parse
        elif name == "saved_model.pb":
            saved_model_pb2.SavedModel().ParseFromString(_read_bytes(uri))
            # tf.saved_model.save writes the variables first: both, or no export.
            assert f"{parent}/variables/variables.index" in names, f"{uri}: no variables beside it"
            assert f"{parent}/tfbs_metadata.json" in names, f"{uri}: no tfbs_metadata.json beside it"
        elif name == "checkpoint":  # TensorFlow's state file: the checkpoint a rerun restores
            latest = re.search(r'^model_checkpoint_path: "(.+)"', _read_bytes(uri).decode(), re.MULTILINE)
            assert latest, f"{uri}: names no checkpoint"
            assert f"{parent}/{latest.group(1).rsplit('/', 1)[-1]}.index" in names, f"{uri}: its checkpoint is missing"
        elif name.endswith(".tab.gz"):
            rows = gzip.decompress(_read_bytes(uri)).decode().splitlines()  # EOFError if truncated
            assert rows and all(len(row.split("\t")) == 4 for row in rows), uri
        elif name.endswith(".png"):
            assert _read_bytes(uri).endswith(b"IEND\xaeB`\x82"), f"{uri}: truncated image"
        else:
            continue
        found[name if not name.endswith(".tab.gz") else "submission"] += 1
    return found


def _assert_whole_shards(manifest: Manifest) -> None:
    """Every file the manifest lists is there with its rows."""
    import pyarrow.parquet as pq

    for entries in manifest.parquet.values():
        for entry in entries:
            assert pq.read_metadata(storage.local_path(entry.path)).num_rows == entry.rows, entry.path
    record_bytes = manifest.record_layout["record_bytes"]
    for split in manifest.records.values():
        for entry in [*split.positives, *(e for draw in split.negatives for e in draw)]:
            assert Path(storage.local_path(entry.path)).stat().st_size == entry.rows * record_bytes, entry.path


def _no_shards_visible(shards_uri: str) -> None:
    """The next stage finds no shards, and nothing lies under their final name."""
    with pytest.raises(MissingInputError):
        read_manifest(shards_uri)
    if storage.exists(shards_uri):
        assert not storage.list_files(shards_uri), "files under the shards' final name"


def _relative(manifest: Manifest, shards_uri: str) -> dict:
    """The manifest's contents, its file paths relative to the shards directory."""
    tree = manifest.model_dump(exclude={"created_unix", "config_digest"})
    return json.loads(json.dumps(tree).replace(f"{shards_uri}/", ""))


def _digests(directory: Path) -> dict[str, str]:
    return {
        str(path.relative_to(directory)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(directory.rglob("*"))
        if path.is_file() and path.name != MANIFEST_NAME
    }


# --------------------------------------------------------------------------
# Preprocessing
# --------------------------------------------------------------------------


def _kill_an_executor(process: StreamedProcess, _: object) -> None:
    """SIGKILL one executor JVM of the command (one of its ``CoarseGrainedExecutorBackend`` descendants)."""
    executors = []
    for child in psutil.Process(process.proc.pid).children(recursive=True):
        try:
            if "CoarseGrainedExecutorBackend" in " ".join(child.cmdline()):
                executors.append(child)
        except psutil.Error:
            continue  # ended meanwhile (a short-lived launcher)
    assert len(executors) == 2, f"executors: {[e.pid for e in executors]}"
    executors[0].kill()


def test_preprocess_interrupted_killed_and_losing_an_executor(small_shards, tmp_path):
    """Ctrl-C, then kill -9, mid-way leave no shards; the rerun, losing an executor, writes the undisturbed shards."""
    config, undisturbed = small_shards
    run_dir = tmp_path / "run"
    shards_uri = f"{storage.to_uri(run_dir)}/shards"
    overrides = [f"data.root={storage.local_path(config.data.root)}", f"run_dir={run_dir}"]
    interrupted = Stage("preprocess", overrides)
    # Stage 3 decides the rows and writes the Parquet shards (preprocess/build_shards.py).
    for sig in (signal.SIGINT, signal.SIGKILL):
        interrupted.signalled(sig, _spark_stage(3), "shards being written (Spark stage 3)")
        _no_shards_visible(shards_uri)
        _assert_whole_outputs(storage.to_uri(run_dir))
    leftovers = sorted(path.name for path in run_dir.iterdir() if path.name != "spark-home")

    # The rerun: two executor JVMs, retries allowed, one executor killed while stage 3 runs.
    retrying = Stage(
        "preprocess",
        [
            *overrides,
            "spark.master=local-cluster[2,1,1024]",
            f"spark.conf={json.dumps({**DEMO_SPARK_CONF, 'spark.task.maxFailures': '4'})}",
        ],
        spark_home=tmp_path,
    )
    code, output, seconds = retrying.faulted(_spark_stage(3), "Spark stage 3", _kill_an_executor)
    assert code == 0, output[-4000:]
    assert re.search(r"Lost executor \d+ .*exited with code 137", output), output[-4000:]
    retried = re.findall(r"Lost task (\S+) in stage (\S+)", output)
    print(f"preprocess: an executor killed; tasks lost and retried: {retried}; finished {seconds:.1f} s later")
    print(f"preprocess: left beside the shards by the killed runs: {leftovers}")

    manifest = read_manifest(shards_uri)
    _assert_whole_shards(manifest)
    assert manifest.fingerprint == undisturbed.fingerprint
    assert _relative(manifest, shards_uri) == _relative(undisturbed, config.shards_uri)
    # Byte for byte: every task seeds its draws and record deal by (TF,
    # chromosome, file), and each record file sorts its chunks before its
    # seeded shuffle, so retries and delivery order change nothing.
    assert _digests(run_dir / "shards") == _digests(Path(storage.local_path(config.shards_uri)))
