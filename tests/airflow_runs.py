"""A real Airflow for the tests: its home, its commands and the DAG run on YARN.

Airflow runs in subprocesses (its own ``AIRFLOW_HOME`` in a temporary folder,
a SQLite metadata database migrated there, example DAGs off), so its settings
and logging never leak into the test session. ``test_airflow_dag.py`` checks
the DAG; ``test_yarn.py`` checks, on the same run of the DAG on YARN, what
YARN ran (one run of the pipeline on the mini cluster serves both).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from conftest import PIPELINE_OVERRIDES, REPO, TENANT, TENANT_HOME
from hosts import GATEWAY

from tfbs.launch import QUICK_JVM_OPTIONS

DAGS = REPO / "airflow_dags"
DAG_ID = "tfbs_pipeline"
SENSOR = "wait_for_labels"
CHANGES = "detect_changes"
STAGES = ["preprocess", "train", "evaluate", "predict"]
TASKS = [SENSOR, CHANGES, *STAGES]
BIN = Path(sys.executable).parent
#: The ``airflow`` command of the interpreter running the tests.
AIRFLOW = BIN / "airflow"
#: Regions scored by predict: two overlapping bins on chr8, one on chr21.
REGIONS = "chr8\t10000\t10200\nchr8\t10050\t10250\nchr21\t5000\t5200\n"
#: Deployment Variables a developer's shell might set; the tests choose their own.
_DEPLOYMENT_VARIABLES = [
    f"AIRFLOW_VAR_TFBS_{name}"
    for name in ("PROJECT_DIR", "ENV_ARCHIVE", "SPARK_CONF", "HADOOP_CONF_DIR", "PRINCIPAL", "KEYTAB")
]


def connection(host: str, **extra: str) -> str:
    """``spark_default`` in the JSON form of an ``AIRFLOW_CONN_`` variable."""
    return json.dumps({"conn_type": "spark", "host": host, "extra": extra})


def airflow_home(home: Path) -> dict[str, str]:
    """The environment of an Airflow installation in ``home``, its database migrated."""
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        # The DAG's deployment Variable, as a deployment sets it: the
        # environment of this interpreter (its spark-submit and python).
        # tfbs_project_dir keeps its default, the folder above airflow_dags/.
        "AIRFLOW_VAR_TFBS_BIN_DIR": str(BIN),
        # Every stage on local[2]; training runs in the driver (train.placement.strategy=local).
        "AIRFLOW_CONN_SPARK_DEFAULT": connection("local[2]"),
    }
    for name in _DEPLOYMENT_VARIABLES:
        env.pop(name, None)
    # Drivers on the quick JIT and the class archive come from the run's
    # configuration: the DAG submits each stage with its launch profile (tfbs.launch).
    airflow(env, "db", "migrate")
    return env


def airflow(env: dict[str, str], *args: str, timeout: float = 120, check: bool = True, hosts=None):
    """Run ``airflow ARGS`` (from /tmp, so nothing depends on the test's cwd).

    With ``hosts`` (a :class:`hosts.HostCluster`), on its gateway host.
    Returns stdout; with ``check=False`` the completed process instead.
    """
    command = [str(AIRFLOW), *args]
    if hosts is not None:
        command = hosts.command(GATEWAY, command)
    done = subprocess.run(command, env=env, cwd="/tmp", capture_output=True, text=True, timeout=timeout)
    if not check:
        return done
    assert done.returncode == 0, (
        f"airflow {' '.join(args)} exited {done.returncode}\n{done.stdout[-6000:]}\n{done.stderr[-6000:]}"
    )
    return done.stdout


def dags_test(env: dict[str, str], logical_date: str, run_conf: dict, *extra: str, timeout: float = 900, hosts=None):
    """``airflow dags test`` of the DAG (on the gateway of ``hosts``, if given); returns the completed process."""
    args = ["dags", "test", DAG_ID, logical_date, "--conf", json.dumps(run_conf), *extra]
    return airflow(env, *args, timeout=timeout, check=False, hosts=hosts)


def task_states(env: dict[str, str], logical_date: str) -> dict[str, str]:
    """The state of each task instance of the DAG run at ``logical_date``, as Airflow recorded it.

    Read from the run's metadata database itself (SQLite, read-only): the
    ``airflow dags list-runs`` and ``tasks states-for-dag-run`` commands
    print the same rows, at 4-5 s of CPU each to start Airflow.
    """
    database = env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].removeprefix("sqlite:///")
    with closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as db:
        runs = db.execute(
            "SELECT run_id, state FROM dag_run WHERE dag_id = ? AND logical_date LIKE ?", (DAG_ID, f"{logical_date}%")
        ).fetchall()
        ((run_id, run_state),) = runs
        tasks = db.execute(
            "SELECT task_id, state FROM task_instance WHERE dag_id = ? AND run_id = ?", (DAG_ID, run_id)
        ).fetchall()
    return {"dag_run": run_state, **dict(tasks)}


def json_tail(stdout: str):
    """The JSON document an ``-o json`` command prints after any log lines."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(("[", "{")):
            return json.loads(line)
    raise AssertionError(f"no JSON in:\n{stdout[-3000:]}")


@dataclass(frozen=True)
class DagRun:
    """One ``airflow dags test`` of the DAG: what it printed and what Airflow recorded."""

    returncode: int
    output: str
    states: dict[str, str]
    #: The run directory the stages wrote (``hdfs://`` on the mini cluster).
    run_uri: str
    seconds: float


#: The logical date of the run on YARN.
YARN_RUN_DATE = "2026-02-02"


def run_dag_on_yarn(airflow_env: dict[str, str], hosts, yarn_archives: dict[str, str], data_uri: str) -> DagRun:
    """The whole DAG, run by Airflow on the gateway host, with ``spark_default`` on YARN (client mode).

    Deployed as on a Kerberos-secured cluster of separate hosts (the
    tenant's principal and keytab as Variables): the scheduler, its tasks and
    the drivers on ``gateway`` (whose own name maps to 127.0.1.1, as Debian
    maps it), the containers on ``node1..3``, the NameNode and the
    ResourceManager on ``master``. Executors run the packed environment of
    ``make dist`` (``tfbs_env_archive``) with Spark's jars from its zip
    (``spark.yarn.archive``), both on HDFS; data and run directory on HDFS
    (two replicas of every block). Training is TensorFlowOnSpark with a ps,
    two workers and the chief, one single-core executor each, sized by the
    training job itself; predict writes its default submission path.
    """
    from tfbs.storage import write_text

    spark_conf = {
        "spark.yarn.archive": yarn_archives["spark"],
        "spark.executor.memory": "768m",
        "spark.yarn.am.memory": "512m",
        # No Spark UI: attaching its handlers races with YARN adding its proxy
        # filter (a ConcurrentModificationException in Jetty, once in about a dozen applications here).
        "spark.ui.enabled": "false",
        # Small data on two cores: containers start sooner on the JVM's quick
        # compiler and serial collector. The driver and the executors have them
        # from conf/demo.yaml's spark.quick_jvm (the DAG's launch profile); the
        # application master is no JVM of the configuration's.
        "spark.yarn.am.extraJavaOptions": QUICK_JVM_OPTIONS,
    }
    base = f"{hosts.fs_default_fs}{TENANT_HOME}/tfbs"
    write_text(hosts.by_address(f"{base}/regions/regions.bed"), REGIONS)
    env = {
        **hosts.host_env(airflow_env),
        "AIRFLOW_CONN_SPARK_DEFAULT": connection("yarn", **{"deploy-mode": "client"}),
        "AIRFLOW_VAR_TFBS_SPARK_CONF": json.dumps(spark_conf),
        "AIRFLOW_VAR_TFBS_ENV_ARCHIVE": yarn_archives["env"],
        # The secure cluster: each task takes a ticket from the tenant's keytab.
        "AIRFLOW_VAR_TFBS_PRINCIPAL": hosts.kdc.principal(TENANT),
        "AIRFLOW_VAR_TFBS_KEYTAB": str(hosts.keytab(TENANT)),
    }
    run_conf = {
        "config": "conf/demo.yaml",
        "overrides": [f"run_dir={base}/run", f"data.root={data_uri}", *PIPELINE_OVERRIDES],
        "num_ps": 1,
        "num_workers": 2,
        "predict": {"regions": f"{base}/regions/regions.bed", "tf": "CTCF", "cell": "K562"},
    }
    started = time.monotonic()
    done = dags_test(env, YARN_RUN_DATE, run_conf, timeout=1500, hosts=hosts)
    seconds = time.monotonic() - started
    print(f"YARN DAG run across hosts: {seconds:.0f} s")
    states = task_states(env, YARN_RUN_DATE)
    return DagRun(done.returncode, done.stdout + done.stderr, states, f"{base}/run", seconds)
