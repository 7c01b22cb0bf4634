"""The Hadoop mini cluster of hadoop/minicluster.py, used the way the
pipeline's clients use HDFS: WebHDFS (`hdfs`), HDFS RPC (`hdfs-native`) and
Spark through HADOOP_CONF_DIR.  One cluster serves the whole module; the last
test stops it and checks that nothing of it is left.  YARN submission is tested
with the project's packed environment elsewhere."""

from __future__ import annotations

import getpass
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from containers import application_of
from jvm import DEFAULT_CACHE_DIR, ClusterError, ensure_classpath, ensure_daemon_classes, find_java_home
from minicluster import MiniCluster
from procs import argv, is_alive

MINICLUSTER_PY = Path(__file__).resolve().parents[2] / "hadoop" / "minicluster.py"

#: Run by a fresh interpreter with the cluster's environment: writes parquet to
#: a path without a scheme (so HDFS only if HADOOP_CONF_DIR is honoured), reads
#: it back and prints what it saw.
SPARK_ROUND_TRIP = """
import json, sys
from pyspark.sql import SparkSession

spark = SparkSession.builder.master("local[2]").appName("minicluster-test").config("spark.ui.enabled", "false").getOrCreate()
rows = [(i, f"row-{i}") for i in range(1000)]
spark.createDataFrame(rows, "id long, name string").repartition(3).write.parquet(sys.argv[1])
back = sorted(tuple(row) for row in spark.read.parquet(sys.argv[1]).collect())
default_fs = spark.sparkContext._jsc.hadoopConfiguration().get("fs.defaultFS")
spark.stop()
print(json.dumps({"default_fs": default_fs, "same_rows": back == rows, "rows": len(back)}))
"""


@pytest.fixture(scope="module")
def minicluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MiniCluster]:
    """One HDFS + YARN cluster for this module.

    `test_stop_leaves_no_process_and_frees_the_ports` stops it, so it must stay
    the module's last test; stopping again here is a no-op.
    """
    with MiniCluster(tmp_path_factory.mktemp("minicluster")) as cluster:
        yield cluster


def test_ensure_classpath_names_missing_maven(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(find_java_home()))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ClusterError, match="`mvn` not found"):
        ensure_classpath(tmp_path / "cache")


#: A stand-in for ``mvn`` (the real one runs in every cluster's start-up): it copies
#: one jar into ``-Dcache.dir``'s ``lib/`` and counts its calls, or fails when asked to.
FAKE_MVN = """#!/bin/sh
echo called >> "$(dirname "$0")/calls"
[ -e "$(dirname "$0")/fail" ] && { echo "no network" >&2; exit 1; }
for arg in "$@"; do case "$arg" in -Dcache.dir=*) dir="${arg#-Dcache.dir=}";; esac; done
mkdir -p "$dir/lib" && echo jar > "$dir/lib/hadoop-client.jar"
"""


def test_ensure_classpath_puts_each_pom_s_jars_in_place_whole_and_once(tmp_path, monkeypatch) -> None:
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "mvn").write_text(FAKE_MVN)
    (tools / "mvn").chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(find_java_home()))
    monkeypatch.setenv("PATH", f"{tools}:/usr/bin:/bin")
    cache = tmp_path / "cache"
    (tools / "fail").touch()
    with pytest.raises(ClusterError, match="no network"):
        ensure_classpath(cache)
    assert list(cache.iterdir()) == []  # a failed fetch leaves no folder, not even its staging one
    (tools / "fail").unlink()
    lib = ensure_classpath(cache)
    assert lib.parent == cache and lib.name.startswith("lib-") and len(lib.name) == len("lib-") + 16
    assert [p.name for p in cache.iterdir()] == [lib.name] and (lib / "hadoop-client.jar").is_file()
    assert ensure_classpath(cache) == lib  # in place: Maven not called again
    assert (tools / "calls").read_text().count("called") == 2


@pytest.mark.cluster
def test_the_daemon_classes_compile_once_beside_the_class_path(tmp_path: Path, monkeypatch) -> None:
    lib = tmp_path / "lib-0123456789abcdef"
    lib.symlink_to(ensure_classpath(DEFAULT_CACHE_DIR))
    # A compiler that fails: the error carries its output, and nothing is left in place.
    jdk = tmp_path / "jdk"
    (jdk / "bin").mkdir(parents=True)
    (jdk / "bin" / "java").symlink_to(find_java_home() / "bin" / "java")
    (jdk / "bin" / "javac").write_text("#!/bin/sh\necho 'NioLocalFs.java:1: error: no disk' >&2\nexit 2\n")
    (jdk / "bin" / "javac").chmod(0o755)
    with monkeypatch.context() as patch:
        patch.setenv("JAVA_HOME", str(jdk))
        with pytest.raises(ClusterError, match=r"javac failed .*exit 2\)[\s\S]*no disk"):
            ensure_daemon_classes(lib)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["jdk", lib.name]
    classes = ensure_daemon_classes(lib)
    assert classes.parent == tmp_path and classes.name.startswith("classes-")
    compiled = classes / "local" / "tfbs" / "hadoop" / "NodeManagerMain.class"
    assert compiled.is_file() and (classes / "local" / "tfbs" / "hadoop" / "NioLocalFs.class").is_file()
    # The setting the NodeManager's JVM alone reads, beside its classes.
    assert "<value>local.tfbs.hadoop.NioLocalFs</value>" in (classes / "tfbs-nodemanager.xml").read_text()
    before = compiled.stat().st_mtime_ns
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))  # in place: no compiler needed again
    assert ensure_daemon_classes(lib) == classes and compiled.stat().st_mtime_ns == before


def test_application_of_container_ids() -> None:
    assert application_of("container_1795420813666_0002_01_000003") == "application_1795420813666_0002"
    assert application_of("container_e17_1795420813666_0002_01_000003") == "application_1795420813666_0002"


@pytest.mark.cluster
def test_cluster_json_and_cli_describe_the_running_cluster(minicluster: MiniCluster) -> None:
    recorded = json.loads(minicluster.info_file.read_text())
    assert recorded["pid"] == minicluster.pid and is_alive(minicluster.pid)
    assert recorded["fs_default_fs"] == f"hdfs://127.0.0.1:{recorded['ports']['namenode']}"
    assert recorded["nm_url"].startswith("http://") and recorded["startup_seconds"] > 0
    assert f"<value>{minicluster.fs_default_fs}</value>" in (minicluster.conf_dir / "core-site.xml").read_text()
    # a second process attaches through cluster.json
    status = subprocess.run(
        [sys.executable, str(MINICLUSTER_PY), "status", "--workdir", str(minicluster.workdir)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["ready"] is True
    # the class path is complete: asking again needs no Maven (none on the PATH)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", "")
        lib = ensure_classpath(DEFAULT_CACHE_DIR)
    assert lib.parent == DEFAULT_CACHE_DIR and any(lib.glob("hadoop-*.jar"))


@pytest.mark.cluster
def test_webhdfs_round_trip(minicluster: MiniCluster) -> None:
    from hdfs import InsecureClient

    client = InsecureClient(minicluster.webhdfs_url, user=getpass.getuser())
    payload = os.urandom(3 * 2**20 + 7)  # several packets, not a round size
    client.write("/webhdfs/blob.bin", data=payload)
    with client.read("/webhdfs/blob.bin") as reader:
        assert reader.read() == payload
    listing = dict(client.list("/webhdfs", status=True))
    assert list(listing) == ["blob.bin"]
    assert (listing["blob.bin"]["type"], listing["blob.bin"]["length"]) == ("FILE", len(payload))


@pytest.mark.cluster
def test_hdfs_native_round_trip_through_the_conf_dir(minicluster: MiniCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    from hdfs_native import Client

    monkeypatch.setenv("HADOOP_CONF_DIR", str(minicluster.conf_dir))
    client = Client()  # the NameNode from conf/core-site.xml, as in a YARN container
    payload = os.urandom(2**20 + 3)
    client.mkdirs("/native", create_parent=True)
    with client.create("/native/a.bin") as writer:
        writer.write(payload)
    with client.read("/native/a.bin") as reader:
        assert reader.read() == payload
    client.rename("/native/a.bin", "/native/b.bin")
    assert [status.path for status in client.list_status("/native")] == ["/native/b.bin"]
    assert client.get_file_info("/native/b.bin").length == len(payload)
    assert client.delete("/native/b.bin")
    assert list(client.list_status("/native")) == []


@pytest.mark.cluster
def test_spark_writes_parquet_to_hdfs_through_hadoop_conf_dir(minicluster: MiniCluster) -> None:
    from hdfs import InsecureClient

    run = subprocess.run(
        [sys.executable, "-c", SPARK_ROUND_TRIP, "/spark/rows.parquet"],
        env={**os.environ, **minicluster.env()},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.splitlines()[-1])
    assert result == {"default_fs": minicluster.fs_default_fs, "same_rows": True, "rows": 1000}
    files = InsecureClient(minicluster.webhdfs_url, user=getpass.getuser()).list("/spark/rows.parquet")
    assert "_SUCCESS" in files
    assert len([name for name in files if name.endswith(".parquet")]) == 3


@pytest.mark.cluster
def test_stop_leaves_no_process_and_frees_the_ports(minicluster: MiniCluster) -> None:
    processes = minicluster.watch.processes()
    assert minicluster.pid in processes
    ports = minicluster.ports
    minicluster.stop()
    assert not minicluster.watch.is_running()
    assert [pid for pid in processes if is_alive(pid)] == []
    # nor any process elsewhere that still works in the cluster's folder
    workdir = str(minicluster.workdir)
    assert [pid for pid in map(int, filter(str.isdigit, os.listdir("/proc"))) if workdir in " ".join(argv(pid))] == []
    for name, port in ports.items():
        with socket.socket() as sock:
            # as servers do: binding fails only while something listens on the port
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(("127.0.0.1", port))
            except OSError as error:
                pytest.fail(f"port {port} ({name}) still taken: {error}")
