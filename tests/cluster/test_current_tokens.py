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

from tfbs.launch.current_tokens import PLUGIN_CLASS, plugin_conf, plugin_jar
from tfbs.storage.hadoop_conf import CURRENT_TOKENS_NAME, TOKEN_FILE_ENV, use_current_tokens

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
    from tfbs.storage.hadoop_conf import TOKEN_FILE_ENV, use_current_tokens
    use_current_tokens()
    yield os.environ[TOKEN_FILE_ENV]

print("task reads", spark.sparkContext.parallelize([0], 1).mapPartitions(in_task).collect()[0])
spark.stop()
"""


#: An executor JVM of its own (local-cluster) with YARN's token file; the driver then adds a token
#: to its own credentials only, as Spark does when it obtains new tokens (its push to the
#: executors is what a late-registering executor misses): the executor's copy gets it by asking.
_ASKED = """
import json, sys, time
from pathlib import Path
from pyspark.sql import SparkSession
conf, launched = json.loads(sys.argv[1]), sys.argv[2]
builder = (SparkSession.builder.master("local-cluster[1,1,1024]").config("spark.ui.enabled", "false")
           .config("spark.executorEnv.HADOOP_TOKEN_FILE_LOCATION", launched))
for key, value in conf.items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
sc = spark.sparkContext
sc.parallelize([0], 1).count()  # the executor is up, its copy written
jvm = sc._jvm
text = jvm.org.apache.hadoop.io.Text
token = jvm.org.apache.hadoop.security.token.Token(
    bytearray(b"driver-identifier"), bytearray(b"driver-password"), text("TFBS_DRIVER_TOKEN"), text("10.0.0.2:8020"))
credentials = jvm.org.apache.hadoop.security.Credentials()
credentials.addToken(text("10.0.0.2:8020"), token)
jvm.org.apache.hadoop.security.UserGroupInformation.getCurrentUser().addCredentials(credentials)
copy = Path(launched).with_name("tfbs-current-tokens")
deadline = time.monotonic() + 60
while b"TFBS_DRIVER_TOKEN" not in copy.read_bytes() and time.monotonic() < deadline:
    time.sleep(0.5)
print("copy holds", sorted(k for k in ("TFBS_DRIVER_TOKEN", "TFBS_TEST_TOKEN") if k.encode() in copy.read_bytes()))
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


def test_an_executor_that_missed_spark_s_push_gets_the_driver_s_tokens_by_asking(tmp_path):
    launched = tmp_path / "container" / "container_tokens"
    launched.parent.mkdir()
    write_token_file(launched, b"TFBS_TEST_TOKEN", b"10.0.0.1:8020")
    env = {k: v for k, v in os.environ.items() if k != TOKEN_FILE_ENV}  # the driver holds no token
    job = subprocess.run(
        [sys.executable, "-c", _ASKED, json.dumps(plugin_conf()), str(launched)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert job.returncode == 0, job.stderr[-3000:]
    # The driver's new token beside the executor's own from YARN's file.
    assert "copy holds ['TFBS_DRIVER_TOKEN', 'TFBS_TEST_TOKEN']" in job.stdout, job.stdout + job.stderr[-3000:]
    assert (launched.parent / CURRENT_TOKENS_NAME).stat().st_mode & 0o777 == 0o600
