"""The tfbs-spark pipeline as a scheduled Airflow DAG.

A sensor waits for the label files, a check ends the run early when nothing
is new, then each stage is one ``spark-submit`` of its job file through the
Spark provider's SparkSubmitOperator::

    wait_for_labels >> detect_changes >> preprocess >> train >> evaluate >> predict

``detect_changes`` runs ``jobs/changes.py`` (``tfbs changes``) with the
project's interpreter: it hashes every input preprocessing reads and
compares the digests, and the configuration, with the lineage of the model
version ``<run_dir>/models/LATEST`` names (the one that last passed
evaluation). With nothing new it says so and every later task is skipped:
a weekly run on unchanged data trains nothing. When a version of exactly
these inputs and settings failed its floors, the check fails the run (no
retry), its reason in the task log, every week until an input, a setting,
a floor or the model's code changes: an alarm the deployment routes like any
failed task (``on_failure_callback``, email), not a quiet skip. Anything new (a label, peak,
genome or protein file, or a setting) and the run goes on: preprocessing
rebuilds the shards, training writes a new model version beside the old
ones, and evaluation moves ``LATEST`` to it once it passes its floors.

``wait_for_labels`` waits until every label file exists (``file://``,
``hdfs://`` or any fsspec protocol); by default those of the configuration,
``<data.labels_dir>/<TF>.train.labels.tsv.gz`` for each TF of ``data.tfs``.
Write them with ``tfbs generate`` (the generated data set) or ``tfbs labels``
(your own ChIP-seq peaks), or copy them in (``hdfs dfs -put`` writes under a
temporary name and renames, so a half-copied file is never seen).

Each stage then runs ``spark-submit <project>/jobs/<stage>.py --config
<config> [--set key=value ...]`` in the project directory (relative paths in
the configuration resolve there, as by hand). The master, deploy mode and
queue come from the Airflow connection ``spark_default`` (connection type
``spark``; host ``local[2]``, ``local-cluster[4,1,1024]`` or ``yarn``; extras
``deploy-mode`` and ``queue``); spark-submit's ``--master`` wins over the
configuration's ``spark.master`` (training's too). Only client mode is
supported: the driver runs on the Airflow worker, from the project checkout.
The connection's ``spark-binary`` extra is not used: stages are submitted with
the ``spark-submit`` of the project's own environment, whose pyspark the jobs
import.

The DAG file (and ``tfbs_deployment.py`` beside it, the Variables below)
imports no pipeline code: TensorFlow, Spark and the ``tfbs`` packages load
only in the processes the tasks start, never in the scheduler or the DAG
processor.

Run-time parameters ("Trigger DAG w/ config", or ``airflow dags trigger -c
'{"config": ..., "overrides": [...]}'``):

``config``
    the pipeline YAML, relative to the project directory (default
    ``conf/demo.yaml``).
``overrides``
    a list of ``key=value`` strings, each passed as ``--set key=value``.
``labels``
    the label files (paths or URIs) to wait for; empty (the default): those
    of the configuration, as above.
``labels_poke_interval``, ``labels_timeout``
    seconds between two looks for the label files (the sensor frees its
    worker slot in between), and how long to wait before the run fails.
``num_ps``, ``num_workers``
    the TensorFlowOnSpark cluster of training: passed to the job as
    ``train.placement.num_ps`` / ``train.placement.num_workers`` (they win over the
    configuration); the training job sizes its application itself, ``num_ps +
    num_workers + 1`` executors of one core each (the chief's included; use
    ``num_ps: 0`` for ``train.placement.strategy=multi_worker_mirrored``).
``force``
    run every stage even when nothing is new, or when a version of these
    inputs failed its floors (default false).
``predict``
    ``{"regions": R, "tf": T, "cell": C, "out": O}``: after evaluation, score
    the regions file R (BED of 200 bp regions), or with no R every bin of the
    genome, for TF T in cell C (comma-separated lists for several) as DREAM
    submissions with the model ``<run_dir>/models/LATEST`` names (default
    ``<run_dir>/models/<version>/report/F.<T>.<C>.tab.gz``; O for one TF/cell).
    ``tf`` and ``cell`` go together and are required when ``regions`` is
    given; without them the predict task is skipped.

Deployment settings, as Airflow Variables (or ``AIRFLOW_VAR_<NAME>``
environment variables), read when a task runs, never when the file is parsed:

``tfbs_project_dir``
    the checkout the stages run in (default: the folder above this file's
    ``airflow_dags/``).
``tfbs_bin_dir``
    the bin folder of the project's virtualenv (default
    ``<project>/.venv/bin``): its ``spark-submit`` submits the stages and
    its ``python`` runs the driver, so Airflow may live in another
    environment.
``tfbs_env_archive``
    for YARN: a packed copy of that environment (``make dist``'s standalone
    archive, with its own interpreter; a path or an ``hdfs://`` URI), shipped with
    ``--archives <archive>#environment``; executors then run
    ``./environment/bin/python``. Unset, executors run the driver's
    interpreter path, which must exist on every node (true on one machine,
    or with the virtualenv at the same path on all nodes).
``tfbs_spark_conf``
    a JSON object of Spark settings added to every submission (``--conf
    key=value``), e.g. ``spark.yarn.jars`` or executor memory for a cluster;
    they win over the configuration's launch profile, which each submission
    gets from ``python -m tfbs.launch`` in the project's environment (on YARN
    Spark's authentication and encryption; on a local master
    ``SPARK_LOCAL_IP=127.0.0.1``; the JVM options of ``spark.quick_jvm`` and,
    locally, the driver's class archive).
``tfbs_hadoop_conf_dir``
    ``HADOOP_CONF_DIR`` and ``YARN_CONF_DIR`` for spark-submit and the
    sensor (default: the worker's own, passed through).
``tfbs_principal``, ``tfbs_keytab``
    a Kerberos-secured cluster: each task gets a ticket of its own from the
    keytab (``kinit`` into a cache of the task's, removed after it) for the
    sensor's and the jobs' HDFS clients, and spark-submit is given
    ``--principal``/``--keytab`` (client mode: the keytab stays on the
    worker; containers get delegation tokens).

Every run writes to the configuration's ``run_dir``, so runs never overlap
(``max_active_runs=1``). Training is not retried: a TensorFlowOnSpark cluster
that lost a node cannot be resumed by running the same command again, and a
failed distributed run must surface rather than be hidden by a retry.

Tied to apache-airflow-providers-apache-spark 5.6.0 (the 6.x line installs
``pyspark-client`` over pyspark's files): the stage operator sets the
operator's archives, executor and spark-submit settings, which that version
does not template, when the task runs.
"""

from __future__ import annotations

import functools
import os
import socket
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pendulum
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import DAG, BaseOperator, BaseSensorOperator, Param, PokeReturnValue
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSkipException

# Airflow 3 puts a DAG folder on sys.path only for bundles: the deployment module lies beside this file.
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.append(str(Path(__file__).resolve().parent))

from tfbs_deployment import (
    ARCHIVE_ALIAS,
    GPU_DISCOVERY_SCRIPT,
    PROJECT_DIR,
    Deployment,
    environ,
    hadoop_env,
    kerberos_ticket,
    launch_profile,
)

DAG_ID = "tfbs_pipeline"

#: The sensor's task id.
SENSOR = "wait_for_labels"

#: The task that ends a run early when nothing is new.
CHANGES = "detect_changes"

#: ``jobs/changes.py``'s exit code when nothing is new (Airflow's own skip code).
NOTHING_NEW = 99
#: ``jobs/changes.py``'s exit code when a version of exactly these inputs failed
#: its floors: the run fails (no retry) with the reason, every week until fixed.
FLOORS_FAILED = 3

#: The spark-submitted stages in pipeline order (``jobs/<stage>.py``).
STAGES = ("preprocess", "train", "evaluate", "predict")

#: Retries per task: none for training (see above).
RETRIES = {SENSOR: 2, CHANGES: 2, "preprocess": 2, "train": 0, "evaluate": 2, "predict": 2}

#: Upper bounds on one attempt of each task (for the sensor: one look).
TIMEOUTS = {
    SENSOR: timedelta(minutes=10),
    CHANGES: timedelta(hours=1),
    "preprocess": timedelta(hours=6),
    "train": timedelta(hours=24),
    "evaluate": timedelta(hours=6),
    "predict": timedelta(hours=6),
}

#: Name node port of an ``hdfs://host/`` URI that names none.
_HDFS_DEFAULT_PORT = 8020


# --------------------------------------------------------------------------
# The label files
# --------------------------------------------------------------------------


def configured_labels(deployment: Deployment, config: str, overrides: list[str]) -> list[str]:
    """The label file of every TF of the configuration, after the overrides.

    Reads the YAML directly (the DAG imports no pipeline code) and follows the
    configuration's rules: ``data.labels_dir`` defaults to
    ``<data.root>/labels``, relative paths resolve against the project
    directory, an override's value is YAML.

    Raises
    ------
    AirflowFailException
        If the file is missing or names no TFs or labels folder: a waiting
        sensor could never succeed, and a retry would not help.
    """
    import yaml

    source = deployment.resolve(config)
    try:
        tree = yaml.safe_load(Path(source).read_text()) or {}
    except (OSError, yaml.YAMLError) as err:
        raise AirflowFailException(f"{source}: cannot read the configuration: {err}") from None
    for assignment in overrides:
        dotted, _, raw = assignment.partition("=")
        *parents, last = dotted.strip().split(".")
        node = tree
        for key in parents:
            node = node.setdefault(key, {})
            if not isinstance(node, dict):
                raise AirflowFailException(f"override {assignment!r}: {key} is not a section")
        node[last] = yaml.safe_load(raw)
    data = tree.get("data") or {}
    tfs = data.get("tfs") or []
    labels_dir = data.get("labels_dir") or (f"{str(data['root']).rstrip('/')}/labels" if data.get("root") else "")
    if not tfs or not labels_dir:
        raise AirflowFailException(f"{source}: data.tfs and data.root (or data.labels_dir) are needed to find labels")
    return [f"{deployment.resolve(str(labels_dir)).rstrip('/')}/{tf}.train.labels.tsv.gz" for tf in tfs]


def file_exists(uri: str) -> bool:
    """Whether a file exists, for a local path or any fsspec URI.

    ``hdfs://`` goes to ``hdfs-native`` (HDFS's RPC protocol, no Hadoop
    install; ``hdfs:///path`` finds the name node through
    ``HADOOP_CONF_DIR``). Its client retries an unreachable name node without
    end, so one that does not answer fails the look in seconds instead.
    """
    import fsspec

    parsed = urlparse(uri)
    if parsed.scheme == "hdfs" and parsed.hostname:
        port = parsed.port or _HDFS_DEFAULT_PORT
        try:
            socket.create_connection((parsed.hostname, port), timeout=10).close()
        except OSError as err:
            raise OSError(f"{uri}: cannot reach the HDFS name node at {parsed.hostname}:{port} ({err})") from None
    fs, path = fsspec.core.url_to_fs(uri)
    return bool(fs.isfile(path))


class LabelFilesSensor(BaseSensorOperator):
    """Waits until every label file exists; returns their list as its XCom.

    The files are the ``labels`` param, else those of the configuration
    (:func:`configured_labels`); the time between looks and the time limit
    are the ``labels_poke_interval`` and ``labels_timeout`` params.
    """

    def execute(self, context: Any) -> Any:
        params = context["params"]
        self.poke_interval = float(params["labels_poke_interval"])
        self.timeout = float(params["labels_timeout"])
        return super().execute(context)

    def poke(self, context: Any) -> PokeReturnValue:
        params = context["params"]
        deployment = Deployment.from_variables()
        if params["labels"]:
            uris = [deployment.resolve(uri) for uri in params["labels"]]
        else:
            uris = configured_labels(deployment, params["config"], list(params["overrides"]))
        with hadoop_env(deployment.hadoop_conf_dir), kerberos_ticket(deployment) as ticket, environ(ticket):
            missing = [uri for uri in uris if not file_exists(uri)]
        if missing:
            self.log.info("waiting for %d of %d label files: %s", len(missing), len(uris), ", ".join(missing))
        else:
            self.log.info("all %d label files are there: %s", len(uris), ", ".join(uris))
        return PokeReturnValue(is_done=not missing, xcom_value=uris)


# --------------------------------------------------------------------------
# Anything new?
# --------------------------------------------------------------------------


class InputChangesOperator(BaseOperator):
    """Runs ``jobs/changes.py``; skips the rest of the run when nothing is new.

    The job runs in the project's environment (``tfbs_bin_dir``), in the
    project directory, with the deployment's Hadoop configuration: it reads
    the inputs to hash them, so it needs the same storage clients as the
    stages. Its last line, what changed or that nothing did, is the task's
    XCom or the skip's reason.
    """

    def execute(self, context: Any) -> str:
        params = context["params"]
        deployment = Deployment.from_variables()
        command = [deployment.python, str(deployment.project_dir / "jobs" / "changes.py")]
        command += ["--config", deployment.resolve(params["config"])]
        for assignment in params["overrides"]:
            command += ["--set", assignment]
        env = dict(os.environ)
        if deployment.hadoop_conf_dir:
            env |= {"HADOOP_CONF_DIR": deployment.hadoop_conf_dir, "YARN_CONF_DIR": deployment.hadoop_conf_dir}
        self.log.info("running %s", " ".join(command))
        with kerberos_ticket(deployment) as ticket:
            done = subprocess.run(
                command, cwd=deployment.project_dir, env={**env, **ticket}, capture_output=True, text=True
            )
        for line in (done.stderr + done.stdout).splitlines():
            self.log.info("%s", line)
        said = (done.stdout.strip().splitlines() or [""])[-1]
        if done.returncode == NOTHING_NEW:
            if params["force"]:
                self.log.info("%s; running anyway (force)", said)
                return said
            raise AirflowSkipException(said)
        if done.returncode == FLOORS_FAILED:
            if params["force"]:
                self.log.info("%s; running anyway (force)", said)
                return said
            # A failure, not a skip: a skipped run looks healthy, and this one repeats weekly until
            # someone acts. Not retried: the answer will be the same in five minutes.
            raise AirflowFailException(said)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or [""])[-1]
            raise AirflowException(f"{CHANGES} exited {done.returncode}: {last}")
        return said


# --------------------------------------------------------------------------
# The stages
# --------------------------------------------------------------------------


class StageSubmitOperator(SparkSubmitOperator):
    """``spark-submit <project>/jobs/<stage>.py --config ... --set ...`` on ``conn_id``.

    Everything that depends on the run (params) or the deployment (Variables)
    is set in :meth:`prepare` when the task runs: application, arguments,
    environment, Spark settings and the packed environment (training sizes
    its own executors, one per TensorFlow node).
    """

    def __init__(self, *, stage: str, **kwargs: Any) -> None:
        super().__init__(task_id=stage, name=f"{DAG_ID}.{stage}", **kwargs)
        self.stage = stage
        self.project_dir = str(PROJECT_DIR)
        #: ``KRB5CCNAME`` of the task's own ticket while it runs (see :func:`kerberos_ticket`).
        self._ticket_env: dict[str, str] = {}
        #: The deployment, configuration, overrides and packed environment's alias :meth:`prepare` was given, for the launch profile.
        self._launch: tuple[Deployment, str, list[str], str | None] | None = None

    def prepare(self, deployment: Deployment, params: dict[str, Any]) -> None:
        """Set the submission from the run's params and the deployment."""
        self.project_dir = str(deployment.project_dir)
        environment = None
        if deployment.env_archive:
            archive, _, alias = deployment.env_archive.partition("#")
            environment = alias or ARCHIVE_ALIAS
            self._archives = f"{archive}#{environment}"
        self._launch = (deployment, params["config"], list(params["overrides"]), environment)
        self.application = str(deployment.project_dir / "jobs" / f"{self.stage}.py")
        args = ["--config", deployment.resolve(params["config"])]
        for assignment in params["overrides"]:
            args += ["--set", assignment]

        # The provider runs the spark-submit it is given; the connection's
        # spark-binary extra may only name one on the worker's PATH.
        self._spark_binary = str(deployment.bin_dir / "spark-submit")
        # spark-submit's launcher finds pyspark with $PYSPARK_PYTHON; the
        # driver runs spark.pyspark.driver.python (client mode), executors
        # spark.pyspark.python.
        self.env_vars = {"PYSPARK_PYTHON": deployment.python}
        if deployment.hadoop_conf_dir:
            self.env_vars |= {
                "HADOOP_CONF_DIR": deployment.hadoop_conf_dir,
                "YARN_CONF_DIR": deployment.hadoop_conf_dir,
            }
        # The interpreters (the packed environment's for executors) come with the launch profile.
        self.conf = dict(deployment.spark_conf or {})
        if deployment.principal:
            self.principal, self.keytab = deployment.principal, deployment.keytab

        if self.stage == "train":
            num_ps, num_workers = int(params["num_ps"]), int(params["num_workers"])
            args += ["--set", f"train.placement.num_ps={num_ps}", "--set", f"train.placement.num_workers={num_workers}"]
            # Spark runs it on GPU nodes from the container's working directory
            # (train.placement.gpu_discovery_script: ./get_gpus_resources.sh).
            self.files = str(deployment.project_dir / "scripts" / GPU_DISCOVERY_SCRIPT)
        if self.stage == "predict":
            predict = params["predict"]
            if predict.get("regions"):
                args += ["--regions", predict["regions"]]
            args += ["--tf", predict["tf"], "--cell", predict["cell"]]
            if predict.get("out"):
                args += ["--out", predict["out"]]
        self.application_args = args

    def execute(self, context: Any) -> None:
        params = context["params"]
        if self.stage == "predict" and not params["predict"].get("tf"):
            raise AirflowSkipException("no predict.tf and predict.cell given: nothing to score")
        deployment = Deployment.from_variables()
        self.prepare(deployment, params)
        with kerberos_ticket(deployment) as ticket:
            # The driver's own HDFS client reads the ticket; Spark's JVM logs in from the keytab.
            self._ticket_env = ticket
            super().execute(context)

    def _get_hook(self):
        # The stage runs in the project directory, as it does by hand.
        hook = super()._get_hook()
        hook.submit = functools.partial(hook.submit, cwd=self.project_dir)
        # Only the hook knows the connection's master, which decides the launch
        # profile (tfbs.launch); the deployment's tfbs_spark_conf still wins.
        if self._launch is not None:
            deployment, config, overrides, environment = self._launch
            conf, env = launch_profile(deployment, config, overrides, hook._connection["master"], environment)
            hook._conf = {**conf, **hook._conf}
            hook._env_vars = {**env, **(hook._env_vars or {})}
        # The ticket goes to spark-submit's own process only: on YARN the provider
        # hands env_vars to the application master too, which has tokens.
        build_command = hook._build_spark_submit_command

        def build_with_ticket(application: str) -> list[str]:
            command = build_command(application)
            hook._env = {**(hook._env or {}), **self._ticket_env}
            return command

        hook._build_spark_submit_command = build_with_ticket
        return hook


# --------------------------------------------------------------------------
# The DAG
# --------------------------------------------------------------------------

_PREDICT_SCHEMA = {
    "type": "object",
    "properties": {key: {"type": "string"} for key in ("regions", "tf", "cell", "out")},
    "additionalProperties": False,
    # A regions file needs the TF and the cell to score it for, and a TF its cell (and back).
    "allOf": [
        {
            "if": {"properties": {key: {"minLength": 1}}, "required": [key]},
            "then": {"properties": {"tf": {"minLength": 1}, "cell": {"minLength": 1}}, "required": ["tf", "cell"]},
        }
        for key in ("regions", "tf", "cell")
    ],
}

with DAG(
    dag_id=DAG_ID,
    description="ENCODE-DREAM TFBS pipeline: wait for labels, skip if nothing is new, preprocess, train (TensorFlowOnSpark), evaluate, predict",
    doc_md=__doc__,
    schedule="@weekly",
    start_date=pendulum.datetime(2025, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["tfbs", "spark", "tensorflow"],
    params={
        "config": Param("conf/demo.yaml", type="string", description="pipeline YAML, relative to the project"),
        "overrides": Param(
            [],
            type="array",
            items={"type": "string", "pattern": "^[^=]+=.*$"},
            description="configuration overrides, each passed as --set key=value",
        ),
        "labels": Param(
            [],
            type="array",
            items={"type": "string", "minLength": 1},
            description="label files to wait for (paths or URIs); empty: every TF's of the configuration",
        ),
        "labels_poke_interval": Param(600, type="integer", minimum=1, description="seconds between looks"),
        "labels_timeout": Param(
            6 * 24 * 3600, type="integer", minimum=0, description="seconds to wait for the labels before failing"
        ),
        "force": Param(False, type="boolean", description="run every stage even when nothing is new"),
        "num_ps": Param(1, type="integer", minimum=0, description="training: parameter servers"),
        "num_workers": Param(2, type="integer", minimum=1, description="training: workers besides the chief"),
        "predict": Param(
            {"regions": "", "tf": "", "cell": "", "out": ""},
            description="regions file (none: the whole genome), TF(s), cell(s) and output of the DREAM "
            "submissions; no TF: no predict",
            **_PREDICT_SCHEMA,
        ),
    },
    default_args={
        "owner": "tfbs",
        "retry_delay": timedelta(minutes=5),
    },
) as dag:
    wait_for_labels = LabelFilesSensor(
        task_id=SENSOR,
        mode="reschedule",
        retries=RETRIES[SENSOR],
        execution_timeout=TIMEOUTS[SENSOR],
    )
    detect_changes = InputChangesOperator(
        task_id=CHANGES, retries=RETRIES[CHANGES], execution_timeout=TIMEOUTS[CHANGES]
    )
    stages = [
        StageSubmitOperator(
            stage=stage,
            conn_id="spark_default",
            retries=RETRIES[stage],
            execution_timeout=TIMEOUTS[stage],
        )
        for stage in STAGES
    ]
    wait_for_labels >> detect_changes
    previous = detect_changes
    for task in stages:
        previous >> task
        previous = task


if __name__ == "__main__":
    dag.test()
