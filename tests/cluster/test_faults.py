"""Faults as a user or a cluster meets them, on the real components.

- A Spark executor lost mid-preprocessing (``local-cluster``: real executor
  JVMs, one ``SIGKILL``ed): Spark recomputes what died with it, and the
  shards are byte for byte those of an undisturbed run.
- Every stage interrupted (``SIGINT``, as Ctrl-C) and killed (``SIGKILL``)
  mid-way, as users run it (``python -m jobs.<stage>``): nothing the next
  stage reads is left half-written, nothing of the run keeps running, and
  the same command run again succeeds (training resumes from its checkpoint).
- The chief's TensorFlow process killed while training with data and run
  on HDFS, under the all-reduce strategy (the parameter-server one's stop
  and resume from HDFS is the lost ps's, on YARN): the rerun resumes from the
  checkpoint on HDFS and finishes; and one killed exactly while it pushes
  TensorFlow's checkpoint state file to HDFS (expected to fail until HDFS
  writes go through a temporary name).

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
import shutil
import signal
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import psutil
import pytest
from conftest import DEMO_CONFIG, SMALL_OVERRIDES, TENANT_HOME, StreamedProcess

from tfbs import storage
from tfbs.config import load_config
from tfbs.errors import MissingInputError
from tfbs.formats.manifest import MANIFEST_NAME, Manifest, read_manifest
from tfbs.launch.session import _local_cluster_home

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
#: Its tasks running, in the bar's ``(done + running) / total``.
SPARK_RUNNING = re.compile(r"^\[Stage \d+:[=> ]*\(\d+ \+ (\d+)\) / \d+\]", re.MULTILINE)
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
        # Python ends on an unhandled KeyboardInterrupt by re-raising SIGINT,
        # but PySpark's clean-up can turn it into another error first (exit 1:
        # an UnboundLocalError in pyspark's _load_from_socket, seen in predict).
        assert code == -sig or (sig == signal.SIGINT and code == 1), f"exit {code} after {sig.name}:\n{output[-4000:]}"
        if sig == signal.SIGINT:
            assert "KeyboardInterrupt" in output, output[-4000:]
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


def _tasks_running(at_least: int) -> Callable[[str], object]:
    """Ready once Spark's progress bar shows ``at_least`` tasks running at once.

    A stage's bar can show before any executor has registered (``(0 + 0)``):
    an executor killed then is only replaced, not lost with a task.
    """
    return lambda output: any(int(n) >= at_least for n in SPARK_RUNNING.findall(output))


# --------------------------------------------------------------------------
# What the next stage reads: whole, wherever it is
# --------------------------------------------------------------------------


def _read_bytes(uri: str) -> bytes:
    with storage.open_input(uri, compression=None) as stream:
        return stream.read()


def _restorable(state_uri: str, files: set[str]) -> bool:
    """Whether a TensorFlow checkpoint state file names a checkpoint whose index is among ``files``."""
    named = re.search(r'^model_checkpoint_path: "(.+)"', _read_bytes(state_uri).decode(), re.MULTILINE)
    parent = state_uri.rsplit("/", 1)[0]
    return named is not None and f"{parent}/{named.group(1).rsplit('/', 1)[-1]}.index" in files


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
        if parent.endswith(".partial") or ".partial/" in parent:
            continue  # being written (the export's), read by no stage, removed by the rerun
        if name in ("report.json", "history.json", "tfbs_metadata.json", MANIFEST_NAME):
            json.loads(_read_bytes(uri))  # a truncated file does not parse
        elif name == "saved_model.pb":
            saved_model_pb2.SavedModel().ParseFromString(_read_bytes(uri))
            # tf.saved_model.save writes the variables first: both, or no export.
            assert f"{parent}/variables/variables.index" in names, f"{uri}: no variables beside it"
            assert f"{parent}/tfbs_metadata.json" in names, f"{uri}: no tfbs_metadata.json beside it"
        elif name == "checkpoint":  # TensorFlow's state file: the checkpoint a rerun restores
            assert _restorable(uri, names), f"{uri}: names no checkpoint that is there"
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


def _no_shards_visible_unless_committed(shards_uri: str, undisturbed: Manifest) -> None:
    """No shards; or, when the signal landed after the commit, the whole shards of an undisturbed run.

    On a quiet machine the small data's write stage may end, and the shards be
    committed, between the progress line the signal waits for and its
    delivery. Those shards must be whole and the same; they are removed so
    the next signal interrupts a build again.
    """
    try:
        manifest = read_manifest(shards_uri)
    except MissingInputError:
        _no_shards_visible(shards_uri)
        return
    _assert_whole_shards(manifest)
    assert manifest.fingerprint == undisturbed.fingerprint
    print("preprocess: the signal landed after the commit; the shards are whole")
    shutil.rmtree(storage.local_path(shards_uri))


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


def _collected_back_to_baseline(overrides: list[str], run_dir: Path) -> list[str]:
    """``tfbs gc --older-than 0`` after the reruns: no leftover of the killed runs stays; returns what it removed."""
    output = Stage("gc", overrides, ("--older-than", "0")).run()
    assert storage.find_leftovers(storage.to_uri(run_dir), timedelta(0)) == []
    assert not [path for path in run_dir.rglob("*") if storage.leftovers.leftover_kind(path.name)]
    return [line.split()[-1] for line in output.splitlines() if line.startswith("removed ") and "://" in line]


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


@pytest.mark.cluster
def test_preprocess_interrupted_killed_and_losing_an_executor(small_shards, tmp_path):
    """Ctrl-C, then kill -9, mid-way leave no shards; the rerun, losing an executor, writes the undisturbed shards."""
    config, undisturbed = small_shards
    run_dir = tmp_path / "run"
    shards_uri = f"{storage.to_uri(run_dir)}/shards"
    overrides = [f"data.root={storage.local_path(config.data.root)}", f"run_dir={run_dir}"]
    interrupted = Stage("preprocess", overrides)

    # Every Spark stage of the job writes into the staging folder beside the
    # shards (preprocess/build_shards.py): stage 0 the test chromosomes'
    # shards and the others' annotations, 1 their shards, 2 the record files.
    def writing(output: str) -> bool:
        return _spark_stage()(output) and any(run_dir.glob("shards._staging-*/**/*.*"))

    for sig in (signal.SIGINT, signal.SIGKILL):
        interrupted.signalled(sig, writing, "shards being written (a Spark stage running, files staged)")
        _no_shards_visible_unless_committed(shards_uri, undisturbed)
        _assert_whole_outputs(storage.to_uri(run_dir))
    leftovers = sorted(path.name for path in run_dir.iterdir() if path.name != "spark-home")

    # The rerun: two executor JVMs, retries allowed, one executor killed while both run a task.
    retrying = Stage(
        "preprocess",
        [
            *overrides,
            "spark.master=local-cluster[2,1,1024]",
            f"spark.conf={json.dumps({**DEMO_SPARK_CONF, 'spark.task.maxFailures': '4'})}",
        ],
        spark_home=tmp_path,
    )
    code, output, seconds = retrying.faulted(_tasks_running(2), "a task on each executor", _kill_an_executor)
    assert code == 0, output[-4000:]
    assert re.search(r"Lost executor \d+ .*exited with code 137", output), output[-4000:]
    retried = re.findall(r"Lost task (\S+) in stage (\S+)", output)
    print(f"preprocess: an executor killed; tasks lost and retried: {retried}; finished {seconds:.1f} s later")
    print(f"preprocess: left beside the shards by the killed runs: {leftovers}")
    # The SIGKILLed build's staging folder, swept by gc; the run folder holds the shards alone.
    assert any(storage.STAGING_INFIX in name for name in leftovers), leftovers
    swept = _collected_back_to_baseline(overrides, run_dir)
    assert any(storage.STAGING_INFIX in uri for uri in swept), swept
    assert sorted(path.name for path in run_dir.iterdir() if path.name != "spark-home") == ["shards"]

    manifest = read_manifest(shards_uri)
    _assert_whole_shards(manifest)
    assert manifest.fingerprint == undisturbed.fingerprint
    assert _relative(manifest, shards_uri) == _relative(undisturbed, config.shards_uri)
    # Byte for byte: every task seeds its draws and record deal by (TF,
    # chromosome, file), and each record file sorts its chunks before its
    # seeded shuffle, so retries and delivery order change nothing.
    assert _digests(run_dir / "shards") == _digests(Path(storage.local_path(config.shards_uri)))


# --------------------------------------------------------------------------
# Training, evaluation and prediction
# --------------------------------------------------------------------------

#: Steps of the faulted training, checkpointed every CHECKPOINT_EVERY: a
#: kill at the first checkpoint lands seconds before the end.
STEPS = 150
CHECKPOINT_EVERY = 30
#: The driver's log line after each checkpoint (tf_models/train_loop.py).
CHECKPOINT_LINE = re.compile(r"tfbs\.train: checkpoint \S+-(\d+)$", re.MULTILINE)
RESUMED_LINE = re.compile(r"tfbs\.train: resumed from \S+ at step (\d+)")
REGIONS = ["chr8\t10000\t10200", "chr21\t5000\t5200", "chr1\t20000\t20200"]


def _checkpointed(step: int | None = None) -> Callable[[str], object]:
    """Ready once the driver logged a checkpoint (of ``step``, or any)."""
    return lambda output: [int(s) for s in CHECKPOINT_LINE.findall(output) if step is None or int(s) == step]


def _exporting(run_dir: Path) -> Callable[[str], object]:
    """Ready once a SavedModel's ``variables`` folder appears under the run (written first
    by ``tf.saved_model.save``), or, if the export is written elsewhere and moved in, once
    training reports it finished."""

    def ready(output: str) -> object:
        try:
            started = next((p for p in run_dir.rglob("variables") if p.is_dir()), None)
        except FileNotFoundError:  # a folder the run renamed or removed while it was walked (a checkpoint's _temp)
            started = None
        return started or re.search(r"tfbs\.train: training \(\w+\) finished", output)

    return ready


@pytest.fixture(scope="module")
def faulted_training(small_shards, tmp_path_factory) -> dict:
    """``tfbs train`` interrupted after its first checkpoint, rerun and killed as it exports, rerun again.

    The ``local`` strategy: the loop runs in the command's own process, the
    one the user's Ctrl-C and a kill reach (TF nodes on executors: see
    ``test_a_killed_chief_resumes_from_hdfs``).
    """
    config, _ = small_shards
    run_dir = tmp_path_factory.mktemp("faulted") / "run"
    train = Stage(
        "train",
        [
            f"data.root={storage.local_path(config.data.root)}",
            f"run_dir={run_dir}",
            f"shards_dir={config.shards_uri}",
            "train.placement.strategy=local",
            f"train.steps={STEPS}",
            f"train.checkpoint_every_steps={CHECKPOINT_EVERY}",
            # Every step is run: the reruns resume to the end, not to an early stop.
            "train.early_stopping_patience=null",
        ],
    )
    run_uri = storage.to_uri(run_dir)
    interrupted = train.signalled(signal.SIGINT, _checkpointed(), "the first checkpoint")
    after_interrupt = _assert_whole_outputs(run_uri)
    exporting = train.signalled(signal.SIGKILL, _exporting(run_dir), "the export")
    after_kill = _assert_whole_outputs(run_uri)
    debris = sorted(str(p.relative_to(run_dir)) for p in run_dir.rglob("variables") if p.is_dir())
    print(f"train: after SIGKILL at the export: {dict(after_kill)}; SavedModel variables dirs: {debris}")
    finished = train.run()
    return {
        "run_dir": run_dir,
        "overrides": train.overrides,
        "interrupted": interrupted,
        "after_interrupt": after_interrupt,
        "exporting": exporting,
        "after_kill": after_kill,
        "finished": finished,
        "after_finish": _assert_whole_outputs(run_uri),
    }


def test_training_interrupted_then_killed_resumes_and_exports_whole(faulted_training):
    interrupted = faulted_training["interrupted"]
    stopped_at = max(_checkpointed()(interrupted))
    assert stopped_at < STEPS, "the interrupt came after the end"
    # Interrupted mid-training: checkpoints and history, whole; no export.
    assert faulted_training["after_interrupt"]["checkpoint"] >= 1
    assert faulted_training["after_interrupt"]["saved_model.pb"] == 0

    # The rerun resumed where the interrupt left it (a checkpoint saved as
    # the interrupt came may not have been logged yet).
    resumed = [int(s) for s in RESUMED_LINE.findall(faulted_training["exporting"])]
    assert len(resumed) == 1 and stopped_at <= resumed[0] < STEPS, faulted_training["exporting"][-4000:]
    assert min(_checkpointed()(faulted_training["exporting"])) == resumed[0] + CHECKPOINT_EVERY

    # Killed as it exported: the last rerun restores the last checkpoint and
    # exports; or, when the kill landed just after the export was whole (the
    # window is short on a loaded machine), it finds the version up to date.
    finished = faulted_training["finished"]
    resumed_at_end = RESUMED_LINE.findall(finished) == [str(STEPS)]
    assert resumed_at_end or "up to date" in finished, finished[-4000:]
    assert faulted_training["after_finish"]["saved_model.pb"] >= 1
    assert faulted_training["after_finish"]["tfbs_metadata.json"] >= 1
    run_dir = faulted_training["run_dir"]
    histories = list(run_dir.rglob("history.json"))
    assert histories
    for path in histories:
        steps = [entry["step"] for entry in json.loads(path.read_text())]
        assert steps == list(range(CHECKPOINT_EVERY, STEPS + 1, CHECKPOINT_EVERY)), path


def _interrupted_then_killed(stage: Stage, what: str, kind: str, run_uri: str) -> None:
    """Ctrl-C, then kill -9, ``stage`` as Spark starts on ``what``; neither leaves a ``kind`` output; the rerun works."""
    for sig in (signal.SIGINT, signal.SIGKILL):
        stage.signalled(sig, _spark_stage(), what)
        assert _assert_whole_outputs(run_uri)[kind] == 0
    stage.run()


def test_evaluation_and_prediction_interrupted_then_killed_leave_no_output(faulted_training, tmp_path):
    run_dir = faulted_training["run_dir"]
    regions = tmp_path / "regions.bed"
    regions.write_text("\n".join(REGIONS) + "\n")
    overrides = faulted_training["overrides"]
    # The version trained above, named: no LATEST exists until evaluation passes.
    (lineage,) = run_dir.glob("models/*/lineage.json")
    predict_arguments = ("--regions", str(regions), "--tf", "CTCF", "--cell", "K562")
    predict_arguments += ("--model-version", lineage.parent.name)
    # Side by side: they write different files, and each mostly waits on start-up.
    with ThreadPoolExecutor(max_workers=2) as pool:
        chains = [
            pool.submit(
                _interrupted_then_killed,
                Stage("evaluate", overrides),
                "the test split being scored",
                "report.json",
                storage.to_uri(run_dir),
            ),
            pool.submit(
                _interrupted_then_killed,
                Stage("predict", overrides, predict_arguments),
                "the regions being scored",
                "submission",
                storage.to_uri(run_dir),
            ),
        ]
        for chain in chains:
            chain.result()

    # The version's report, and its copy at <run_dir>/report once LATEST moved to it.
    reports = sorted(run_dir.rglob("report.json"))
    assert [p.parent.relative_to(run_dir).as_posix() for p in reports] == [
        f"models/{lineage.parent.name}/report",
        "report",
    ]
    assert reports[0].read_text() == reports[1].read_text()
    assert len(json.loads(reports[0].read_text())["results"]) == 6  # 2 TFs x 3 cells
    submissions = list(run_dir.rglob("*.tab.gz"))
    assert len(submissions) == 1
    rows = gzip.decompress(submissions[0].read_bytes()).decode().splitlines()
    assert ["\t".join(row.split("\t")[:3]) for row in rows] == REGIONS
    # Training's interrupt and kill, evaluation's and prediction's: nothing of theirs stays once collected.
    _collected_back_to_baseline(overrides, run_dir)


# --------------------------------------------------------------------------
# A killed chief, data and run on HDFS
# --------------------------------------------------------------------------

#: Steps of the distributed runs: the chief is killed at its first checkpoint,
#: several seconds of training before the end.
HDFS_STEPS = 120
HDFS_CHECKPOINT_EVERY = 30
CHIEF_PROCESS = re.compile(r"tfbs node process: job=chief task=0 \S+ host=\S+ pid=(\d+)")
#: The all-reduce strategy, the chief and one worker on an executor each. The parameter-server
#: strategy's stop and resume from HDFS is the lost ps's, on YARN (test_host_failures.py);
#: what is whole on HDFS after a chief's death is the same for both (the chief's push).
STRATEGY, MASTER = "multi_worker_mirrored", "local-cluster[2,1,1024]"


def _chief_with_checkpoint(run_uri: str) -> Callable[[str], object]:
    """Ready (with the chief's pid) once the chief runs and a checkpoint of the run is on HDFS."""
    next_look = [0.0]

    def ready(output: str) -> object:
        chief = CHIEF_PROCESS.search(output)
        if chief is None or time.monotonic() < next_look[0]:
            return None
        next_look[0] = time.monotonic() + 0.5
        # The state file of the checkpoints a rerun restores (not the best one's, pushed
        # before it), once whole: a file being written to HDFS is there, empty, until closed.
        files = set(storage.list_files(run_uri)) if storage.exists(run_uri) else set()
        states = [u for u in files if u.endswith("/checkpoints/checkpoint")]
        return int(chief.group(1)) if any(_restorable(u, files) for u in states) else None

    return ready


@pytest.mark.cluster
def test_a_killed_chief_resumes_from_hdfs(hadoop, hdfs, hdfs_dataset, tmp_path):
    base = f"{hdfs}{TENANT_HOME}/faults"
    data_uri = hadoop.by_address(hdfs_dataset)  # local Spark on this machine reaches the hosts by address
    shards_uri = f"{base}/shards"
    # In a process of its own, as a user runs it: its JVM logs in to the secure cluster from the ticket cache.
    Stage("preprocess", [f"data.root={data_uri}", f"run_dir={base}/preprocess", f"shards_dir={shards_uri}"]).run()
    _chief_killed_then_resumed(STRATEGY, base, data_uri, tmp_path)


def _chief_killed_then_resumed(strategy: str, base: str, data_uri: str, scratch: Path) -> None:
    """Kill the chief once its first checkpoint is on HDFS; run the same command again."""
    run_uri = f"{base}/{strategy}"
    train = Stage(
        "train",
        [
            f"data.root={data_uri}",
            f"run_dir={run_uri}",
            f"shards_dir={base}/shards",
            f"train.placement.strategy={strategy}",
            f"spark.master={MASTER}",
            "train.placement.num_workers=1",
            f"train.steps={HDFS_STEPS}",
            f"train.checkpoint_every_steps={HDFS_CHECKPOINT_EVERY}",
            "train.early_stopping_patience=null",
        ],
        spark_home=scratch / strategy,
    )

    def kill_chief(_: StreamedProcess, pid: object) -> None:
        assert pid in _marked_processes(train.marker), "the logged chief pid is not a process of this run"
        os.kill(int(pid), signal.SIGKILL)  # type: ignore[call-overload]

    code, output, seconds = train.faulted(_chief_with_checkpoint(run_uri), "a checkpoint on HDFS", kill_chief)
    print(f"{strategy}: chief killed; the command exited {seconds:.1f} s later")
    assert code != 0, output[-4000:]
    assert seconds < EXIT_WITHIN_S
    assert re.search(r"TF node chief:0 \(.*\) died: its process was killed by SIGKILL", output), output[-4000:]
    hint = re.search(r"Run the same command again to resume from the checkpoint at step (\d+)", output)
    assert hint is not None and 0 < int(hint.group(1)) < HDFS_STEPS, output[-4000:]
    after_kill = _assert_whole_outputs(run_uri)
    assert after_kill["checkpoint"] >= 1 and after_kill["saved_model.pb"] == 0, after_kill

    rerun = train.run()
    resumed = re.search(rf"resuming from the checkpoint at step (\d+) of {HDFS_STEPS} \(hdfs://", rerun)
    assert resumed is not None and int(resumed.group(1)) >= int(hint.group(1)), rerun[-4000:]
    finished = _assert_whole_outputs(run_uri)
    assert finished["saved_model.pb"] >= 1, finished
    histories = [u for u in storage.list_files(run_uri) if u.endswith("/history.json")]
    assert histories
    for uri in histories:
        steps = [entry["step"] for entry in json.loads(storage.read_text(uri))]
        assert steps == list(range(HDFS_CHECKPOINT_EVERY, HDFS_STEPS + 1, HDFS_CHECKPOINT_EVERY)), uri


#: Pushes a model directory to HDFS as the chief does after each checkpoint,
#: and dies (SIGKILL) with TensorFlow's checkpoint state file written but
#: not closed, recognised by its content whatever name it is written under.
DYING_PUSH = """
import os, signal, sys
from tfbs import storage
from tf_models.model_dir import ModelDirectory

class DyingStream:
    def __init__(self, stream):
        self.stream, self.head = stream, b""
    def write(self, data):
        self.head += bytes(data)[: max(0, 64 - len(self.head))]
        return self.stream.write(data)
    def close(self):
        if self.head.startswith(b"model_checkpoint_path"):
            os.kill(os.getpid(), signal.SIGKILL)
        return self.stream.close()
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        self.close()
    def __getattr__(self, name):
        return getattr(self.stream, name)

class DyingFileSystem:
    def __init__(self, fs):
        self.fs = fs
    def open_output_stream(self, *args, **kwargs):
        return DyingStream(self.fs.open_output_stream(*args, **kwargs))
    def __getattr__(self, name):
        return getattr(self.fs, name)

real = storage.filesystem
def filesystem(uri):
    fs, path = real(uri)
    return DyingFileSystem(fs), path
# The package's own writers call it in its module; callers outside, through the package.
storage.filesystems.filesystem = storage.filesystem = filesystem
ModelDirectory(sys.argv[1], sys.argv[2]).push()
"""


@pytest.mark.cluster
def test_a_chief_killed_while_pushing_its_checkpoint_state_leaves_a_resumable_run(hdfs, tmp_path):
    """The push the chief makes after each checkpoint, killed as it writes the state file: what
    HDFS then holds must restore (the newest whole checkpoint, or the one pushed before), as a rerun reads it."""
    import subprocess

    import tensorflow as tf

    from tf_models.model_dir import ModelDirectory, model_directory

    local = tmp_path / "mirror"
    step = tf.Variable(20)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(step=step), str(local / "checkpoints"), 3)
    manager.save(checkpoint_number=20)
    model_uri = f"{hdfs}{TENANT_HOME}/faults/dying-push/model"
    ModelDirectory(model_uri, str(local)).push()  # the push after the previous checkpoint, whole
    step.assign(30)
    manager.save(checkpoint_number=30)
    pushed = subprocess.run(
        [sys.executable, "-c", DYING_PUSH, model_uri, str(local)], capture_output=True, text=True, timeout=300
    )
    assert pushed.returncode == -signal.SIGKILL, pushed.stderr[-4000:]
    # What a rerun does first: pull the remote into a fresh mirror and restore the newest checkpoint.
    rerun = model_directory(model_uri)
    rerun.pull()
    checkpoints = f"{rerun.local}/checkpoints"
    resumed = tf.Variable(0)
    restored = tf.train.CheckpointManager(tf.train.Checkpoint(step=resumed), checkpoints, 3)
    assert restored.latest_checkpoint in (f"{checkpoints}/ckpt-20", f"{checkpoints}/ckpt-30")
    restored.restore_or_initialize()
    assert int(resumed.numpy()) == int(restored.latest_checkpoint.rsplit("-", 1)[1])
