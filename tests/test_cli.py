"""The ``tfbs`` command: user errors stop before Spark starts, in one line."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from conftest import DEMO_CONFIG, REPO

from tfbs.storage import STALE_TEMPORARY_AGE, temporary_name


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


def test_a_stage_starts_by_removing_what_killed_writers_left(tmp_path):
    """Temporaries older than storage.STALE_TEMPORARY_AGE go; a fresh one may be a live writer's."""
    stale = tmp_path / "models" / temporary_name("LATEST")
    fresh = tmp_path / "report" / temporary_name("report.json")
    for path in (stale, fresh):
        path.parent.mkdir()
        path.write_text("half")
    old = time.time() - STALE_TEMPORARY_AGE.total_seconds() - 60
    os.utime(stale, (old, old))
    run = _tfbs(
        "evaluate", "--config", str(DEMO_CONFIG), "--set", f"data.root={tmp_path}", "--set", f"run_dir={tmp_path}"
    )
    assert run.returncode == 2  # no shards: the stage itself stops
    assert f"removed 1 temporary file(s) left by killed writers under file://{tmp_path}" in run.stderr
    assert not stale.exists() and fresh.exists()
