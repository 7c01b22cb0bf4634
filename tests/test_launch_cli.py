"""``python -m tfbs.launch``: a submission's settings, as ``scripts/submit_yarn.sh`` and the DAG read them."""

from __future__ import annotations

import json

from conftest import DEMO_CONFIG

from tfbs.launch import QUICK_JVM_OPTIONS
from tfbs.launch.__main__ import main


def _arguments(printed: str) -> dict[str, str]:
    """``--conf key=value`` lines as a dict (every line but the ``--conf`` before each)."""
    lines = printed.splitlines()
    assert lines[::2] == ["--conf"] * (len(lines) // 2) and len(lines) % 2 == 0, lines
    return dict(line.split("=", 1) for line in lines[1::2])


def test_a_yarn_submission_gets_the_packaging_the_archive_and_the_containers_address(capsys):
    argv = ["--deploy", "yarn", "--config", str(DEMO_CONFIG), "--python", "/opt/env/bin/python"]
    argv += ["--environment", "environment", "--spark-archive", "hdfs:///jars.zip", "--local-ip", "10.1.2.3"]
    assert main(argv) == 0
    conf = _arguments(capsys.readouterr().out)
    assert conf["spark.yarn.archive"] == "hdfs:///jars.zip"
    assert conf["spark.executorEnv.SPARK_LOCAL_IP"] == conf["spark.yarn.appMasterEnv.SPARK_LOCAL_IP"] == "10.1.2.3"
    assert conf["spark.pyspark.python"] == "./environment/bin/python"
    assert conf["spark.pyspark.driver.python"] == "/opt/env/bin/python"
    assert conf["spark.authenticate"] == "true" and conf["spark.network.crypto.cipher"] == "AES/GCM/NoPadding"
    assert conf["spark.driver.extraJavaOptions"] == QUICK_JVM_OPTIONS  # the demo's spark.quick_jvm: [driver, ...]

    # Without them: neither the archive nor an address, and nothing secret on any command line.
    assert main(["--deploy", "yarn", "--config", str(DEMO_CONFIG)]) == 0
    bare = _arguments(capsys.readouterr().out)
    assert not {"spark.yarn.archive", "spark.executorEnv.SPARK_LOCAL_IP", "spark.pyspark.python"} & bare.keys()
    assert not any("secret" in key for key in bare)


def test_a_standalone_master_gets_nothing_and_a_local_one_its_address_as_json(capsys):
    assert main(["--master", "spark://node1:7077", "--config", str(DEMO_CONFIG)]) == 0
    assert capsys.readouterr().out == "\n"
    assert main(["--master", "local[2]", "--config", str(DEMO_CONFIG), "--json"]) == 0
    profile = json.loads(capsys.readouterr().out)
    assert profile["env"] == {"SPARK_LOCAL_IP": "127.0.0.1"}
    assert "spark.yarn.archive" not in profile["conf"]
