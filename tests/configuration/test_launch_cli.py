"""``python -m tfbs.launch``: a submission's settings, as ``scripts/submit_yarn.sh`` and the DAG read them."""

from __future__ import annotations

import json

from conftest import DEMO_CONFIG

from tfbs.config import DEFAULT_GPU_DISCOVERY_SCRIPT
from tfbs.launch import QUICK_JVM_OPTIONS
from tfbs.launch.__main__ import main


def _arguments(printed: str) -> tuple[dict[str, str], dict[str, str]]:
    """The ``--conf key=value`` lines as a dict, and the other options (``--archives``, ``--files``) by name."""
    lines = printed.splitlines()
    assert len(lines) % 2 == 0 and all(option.startswith("--") for option in lines[::2]), lines
    pairs = list(zip(lines[::2], lines[1::2]))
    conf = dict(value.split("=", 1) for option, value in pairs if option == "--conf")
    return conf, {option: value for option, value in pairs if option != "--conf"}


def test_a_yarn_submission_gets_the_packaging_the_archive_and_the_containers_address(capsys):
    argv = ["--deploy", "yarn", "--config", str(DEMO_CONFIG), "--python", "/opt/env/bin/python"]
    argv += ["--env-archive", "hdfs:///envs/tfbs.tar.gz", "--spark-archive", "hdfs:///jars.zip"]
    argv += ["--local-ip", "10.1.2.3", "--files", "extra.txt"]
    assert main(argv) == 0
    conf, options = _arguments(capsys.readouterr().out)
    # The packed environment under its default alias, and the user's files beside the GPU discovery script.
    assert options == {
        "--archives": "hdfs:///envs/tfbs.tar.gz#environment",
        "--files": f"extra.txt,{DEFAULT_GPU_DISCOVERY_SCRIPT}",
    }
    assert conf["spark.yarn.archive"] == "hdfs:///jars.zip"
    assert conf["spark.executorEnv.SPARK_LOCAL_IP"] == conf["spark.yarn.appMasterEnv.SPARK_LOCAL_IP"] == "10.1.2.3"
    assert conf["spark.pyspark.python"] == "./environment/bin/python"
    assert conf["spark.pyspark.driver.python"] == "/opt/env/bin/python"
    assert conf["spark.authenticate"] == "true" and conf["spark.network.crypto.cipher"] == "AES/GCM/NoPadding"
    assert conf["spark.driver.extraJavaOptions"] == QUICK_JVM_OPTIONS  # the demo's spark.quick_jvm: [driver, ...]

    # Without them: neither the archive nor an address, and nothing secret on any command line.
    assert main(["--deploy", "yarn", "--config", str(DEMO_CONFIG)]) == 0
    bare, options = _arguments(capsys.readouterr().out)
    assert options == {"--files": DEFAULT_GPU_DISCOVERY_SCRIPT}
    assert not {"spark.yarn.archive", "spark.executorEnv.SPARK_LOCAL_IP", "spark.pyspark.python"} & bare.keys()
    assert not any("secret" in key for key in bare)


def test_a_standalone_master_gets_nothing_and_a_local_one_its_address_as_json(capsys):
    assert main(["--master", "spark://node1:7077", "--config", str(DEMO_CONFIG)]) == 0
    assert capsys.readouterr().out == "\n"
    assert main(["--master", "local[2]", "--config", str(DEMO_CONFIG), "--json"]) == 0
    profile = json.loads(capsys.readouterr().out)
    assert profile["env"] == {"SPARK_LOCAL_IP": "127.0.0.1"}
    assert profile["archives"] is None and profile["files"] == []
    assert "spark.yarn.archive" not in profile["conf"]
