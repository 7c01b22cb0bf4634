"""The driver JVM's class archive: offered only when it fits this machine, and mapped by the drivers
(and by a ``local-cluster``'s executors, ``test_tfos.py``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import DEMO_CONFIG

from tfbs.config import load_config
from tfbs.launch import USE_OPTION, archive_path, launch_profile, with_archive


def test_the_option_is_added_only_when_the_archive_for_this_machine_is_there(tmp_path: Path) -> None:
    assert with_archive("-XX:+UseSerialGC", tmp_path) == "-XX:+UseSerialGC"
    archive = archive_path(tmp_path)
    archive.write_bytes(b"")
    assert with_archive("-XX:+UseSerialGC", tmp_path) == f"-XX:+UseSerialGC {USE_OPTION}{archive}"
    assert with_archive("", tmp_path) == f"{USE_OPTION}{archive}"
    # Options that already name an archive, or dump one, are the user's choice.
    assert with_archive(f"{USE_OPTION}/elsewhere.jsa", tmp_path) == f"{USE_OPTION}/elsewhere.jsa"
    assert with_archive("", None) == ""


def test_only_a_local_cluster_s_executors_get_the_archive_too(tmp_path: Path) -> None:
    """They run the driver's Java and jars as its user on this machine; YARN's containers need not."""
    archive = archive_path(tmp_path)
    archive.write_bytes(b"")
    spark = load_config(DEMO_CONFIG, [f"spark.class_archive_dir={tmp_path}"]).spark
    executor_options = {
        master: launch_profile(spark, master).conf.get("spark.executor.extraJavaOptions", "")
        for master in ("local-cluster[4,1,1024]", "local[2]", "yarn")
    }
    assert executor_options["local-cluster[4,1,1024]"].endswith(f"{USE_OPTION}{archive}")
    assert USE_OPTION not in executor_options["local[2]"] + executor_options["yarn"]
    # A driver spark-submit started: it did not map the archive, nor do its executors.
    submitted = launch_profile(spark, "local-cluster[4,1,1024]", submitted={"spark.master": "local-cluster[4,1,1024]"})
    assert USE_OPTION not in submitted.conf.get("spark.executor.extraJavaOptions", "")


def test_the_archive_is_named_after_this_java_and_pyspark(tmp_path: Path) -> None:
    name = archive_path(tmp_path).name
    assert name.startswith("spark-driver-") and name.endswith(".jsa")
    assert archive_path(tmp_path / "other").name == name


def test_the_archive_folder_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    spark = load_config(DEMO_CONFIG, ["spark.class_archive_dir=jvm"]).spark
    assert spark.class_archive_dir == str(tmp_path / "jvm")
    assert load_config(DEMO_CONFIG, ["spark.class_archive_dir=null"]).spark.class_archive_dir is None


@pytest.mark.spark
def test_the_session_driver_maps_the_archive(spark) -> None:
    """The shared session's driver names the archive, and a JVM on its classpath must be able to map it.

    ``-Xshare:on`` makes a JVM refuse to start when it cannot use the
    archive (another classpath, another JDK, a damaged file), where the
    drivers' default quietly starts without it.
    """
    archive = archive_path(load_config(DEMO_CONFIG).spark.class_archive_dir)
    conf = spark.sparkContext.getConf()
    assert f"{USE_OPTION}{archive}" in conf.get("spark.driver.extraJavaOptions")
    jvm = spark.sparkContext._jvm
    classpath = jvm.System.getProperty("java.class.path")
    java = Path(jvm.System.getProperty("java.home")) / "bin" / "java"
    checked = subprocess.run(
        [str(java), "-Xshare:on", f"{USE_OPTION}{archive}", "-cp", classpath, "-version"],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stderr
    assert "sharing" in checked.stderr
