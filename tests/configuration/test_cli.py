"""The ``tfbs`` command: user errors stop before Spark starts, in one line."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import DEMO_CONFIG, REPO

from tfbs.storage import temporary_name
from tfbs.storage.leftovers import STALE_AGE


def _tfbs(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "jobs.cli", *args], cwd=REPO, capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize("stage", ["preprocess", "train", "evaluate"])
def test_missing_input_named_before_spark(stage, tmp_path):
    run = _tfbs(stage, "--config", str(DEMO_CONFIG), "--set", f"data.root={tmp_path}", "--set", f"run_dir={tmp_path}")
    assert run.returncode == 2
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("error: file://" + str(tmp_path)), last
    assert "not found" in last
    assert "SparkContext" not in run.stderr and "log4j" not in run.stderr  # no JVM was started


def test_bad_key_named():
    run = _tfbs("preprocess", "--config", str(DEMO_CONFIG), "--set", "preprocess.windw=500")
    assert run.returncode == 2
    assert run.stderr.strip().splitlines()[-1] == f"error: {DEMO_CONFIG}: preprocess.windw: unknown key"


def test_unknown_stage_is_a_usage_error():
    run = _tfbs("frobnicate")
    assert run.returncode == 2 and "usage: tfbs" in run.stderr


def _leftovers(root: Path, age: float) -> dict[str, Path]:
    """One leftover of each kind under ``root`` (a file in each folder), last modified ``age`` seconds ago."""
    made = {
        "temporary": root / "models" / temporary_name("LATEST"),
        "staging": root / "shards._staging-1a2b3c4d" / "records" / "train-0000.rec",
        "partial": root / "models" / "v1" / "export.partial" / "saved_model.pb",
    }
    for path in made.values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("half")
    for path in root.rglob("*"):  # folders too: a folder's own time counts
        os.utime(path, (time.time() - age, time.time() - age))
    return {
        kind: path if kind == "temporary" else path.parent.parent if kind == "staging" else path.parent
        for kind, path in made.items()
    }


def test_a_stage_starts_by_removing_what_killed_writers_left(tmp_path):
    """Leftovers older than storage.leftovers.STALE_AGE go; a fresh one may be a live writer's."""
    stale = _leftovers(tmp_path / "old", STALE_AGE.total_seconds() + 60)
    fresh = _leftovers(tmp_path / "new", 60)
    run = _tfbs(
        "evaluate", "--config", str(DEMO_CONFIG), "--set", f"data.root={tmp_path}", "--set", f"run_dir={tmp_path}"
    )
    assert run.returncode == 2  # no shards: the stage itself stops
    for kind, path in stale.items():
        assert f"removed a killed writer's {kind} file://{path}" in run.stderr
        assert not path.exists()
    assert all(path.exists() for path in fresh.values())
    assert (tmp_path / "old" / "models" / "v1").is_dir()  # only the partial export inside it went


def test_gc_lists_then_removes_every_leftover_and_refuses_a_negative_age(tmp_path):
    """``tfbs gc --dry-run`` lists, ``--older-than 0`` removes even fresh leftovers; a negative age is refused."""
    left = _leftovers(tmp_path, 60)
    common = ["--config", str(DEMO_CONFIG), "--set", f"data.root={tmp_path}", "--set", f"run_dir={tmp_path}"]
    listed = _tfbs("gc", *common, "--dry-run", "--older-than", "0")
    assert listed.returncode == 0, listed.stderr
    assert sorted(line.split()[3] for line in listed.stdout.splitlines()[:-1]) == sorted(
        f"file://{path}" for path in left.values()
    )
    assert all(path.exists() for path in left.values())
    kept = _tfbs("gc", *common)  # 6 hours by default: none is that old
    assert kept.stdout.splitlines()[-1] == "removed 0 leftover(s) of killed writers and 0 old version(s)"
    removed = _tfbs("gc", *common, "--older-than", "0")
    assert removed.stdout.splitlines()[-1] == "removed 3 leftover(s) of killed writers and 0 old version(s)"
    assert not any(path.exists() for path in left.values())
    negative = _tfbs("gc", *common, "--older-than", "-1")
    assert (negative.returncode, negative.stderr.strip()) == (2, "error: --older-than: -1.0 hours is negative")
