"""The executor plugin that keeps a container's Hadoop tokens current for its Python processes.

On the secure cluster of hosts the DAG's training shows it across token
renewals (test_yarn.py); here a real Spark JVM loads the compiled plugin
with a token file where YARN would put one, and a Python task of it reads
the plugin's copy.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tfbs.current_tokens import PLUGIN_CLASS, plugin_conf, plugin_jar
from tfbs.hadoop_conf import CURRENT_TOKENS_NAME, TOKEN_FILE_ENV, use_current_tokens

pytestmark = [pytest.mark.spark]

#: A Spark run in local mode with the plugin: one Python task reports the token file its HDFS clients would read.
_JOB = """
import json, os, sys
from pyspark.sql import SparkSession
conf = json.loads(sys.argv[1])
builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
for key, value in conf.items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()

def in_task(_):
    from tfbs.hadoop_conf import TOKEN_FILE_ENV, use_current_tokens
    use_current_tokens()
    yield os.environ[TOKEN_FILE_ENV]

print("task reads", spark.sparkContext.parallelize([0], 1).mapPartitions(in_task).collect()[0])
spark.stop()
"""


def _text(value: bytes) -> bytes:
    """Hadoop's ``Text``/byte-array encoding of a value shorter than 128 bytes: a one-byte length, the bytes."""
    return bytes([len(value)]) + value


def write_token_file(path, kind: bytes, service: bytes) -> None:
    """A token storage file (``HDTS``, format 0) with one token, as YARN writes a container's."""
    token = _text(b"identifier-bytes") + _text(b"password-bytes") + _text(kind) + _text(service)
    path.write_bytes(b"HDTS" + bytes([0]) + bytes([1]) + _text(service) + token + bytes([0]))


def test_the_jar_is_compiled_once_and_names_the_plugin(tmp_path):
    first = plugin_jar(tmp_path)
    stamp = first.stat().st_mtime_ns
    assert plugin_jar(tmp_path) == first and first.stat().st_mtime_ns == stamp
    assert plugin_conf()["spark.plugins"] == PLUGIN_CLASS


def test_a_python_task_reads_the_copy_the_plugin_writes_beside_yarns_file(tmp_path):
    launched = tmp_path / "container_tokens"
    write_token_file(launched, b"TFBS_TEST_TOKEN", b"10.0.0.1:8020")
    env = {**os.environ, TOKEN_FILE_ENV: str(launched)}
    job = subprocess.run(
        [sys.executable, "-c", _JOB, json.dumps(plugin_conf())],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert job.returncode == 0, job.stderr[-3000:]
    current = tmp_path / CURRENT_TOKENS_NAME
    assert f"task reads {current}" in job.stdout, job.stdout + job.stderr[-3000:]
    # The executor JVM's tokens (read by Hadoop from YARN's file at login), for the owner alone.
    assert b"TFBS_TEST_TOKEN" in current.read_bytes() and b"identifier-bytes" in current.read_bytes()
    assert current.stat().st_mode & 0o777 == 0o600
    assert "tfbs current tokens: 1 token(s) written to" in job.stderr


def test_without_the_copy_a_process_keeps_yarns_file(tmp_path, monkeypatch):
    monkeypatch.delenv(TOKEN_FILE_ENV, raising=False)
    assert use_current_tokens() is None
    monkeypatch.setenv(TOKEN_FILE_ENV, str(tmp_path / "container_tokens"))
    assert use_current_tokens() == str(tmp_path / "container_tokens")
    (tmp_path / CURRENT_TOKENS_NAME).write_bytes(b"HDTS")
    assert use_current_tokens() == str(tmp_path / CURRENT_TOKENS_NAME)
    assert use_current_tokens() == str(tmp_path / CURRENT_TOKENS_NAME)  # once pointed, it stays
