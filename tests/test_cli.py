"""The ``tfbs`` command: user errors stop before Spark starts, in one line."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import DEMO_CONFIG, REPO


def _tfbs(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tfbs.cli", *args], cwd=REPO, capture_output=True, text=True, timeout=300
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
