"""The DAG's tasks: two checks that ask the project, and a stage submitted through the Spark provider's hook.

Each task reads the deployment (:class:`tfbs_deployment.Deployment`) and
the run's params when it runs. What the project knows, it says itself in
its own environment: which label files are missing (``jobs/ready.py``),
whether anything is new (``jobs/changes.py``), and a submission's Spark
settings (``python -m tfbs.launch``). Only the provider's public API is
used: its hook is built with the whole submission, its ``submit`` given the
project directory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.sdk import BaseHook, BaseOperator, BaseSensorOperator, PokeReturnValue
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException
from tfbs_deployment import (
    Deployment,
    ask_project,
    config_arguments,
    environ,
    kerberos_ticket,
    launch_profile,
)


def _config_of(deployment: Deployment, params: dict[str, Any]) -> list[str]:
    """The run's ``--config`` and ``--set`` arguments."""
    return config_arguments(deployment, params["config"], list(params["overrides"]))


class LabelFilesSensor(BaseSensorOperator):
    """Waits until every label file exists (``jobs/ready.py``); returns their list as its XCom.

    The files are the ``labels`` param, else those of the configuration; the
    time between looks and the time limit are the ``labels_poke_interval``
    and ``labels_timeout`` params.
    """

    def execute(self, context: Any) -> Any:
        params = context["params"]
        self.poke_interval = float(params["labels_poke_interval"])
        self.timeout = float(params["labels_timeout"])
        return super().execute(context)

    def poke(self, context: Any) -> PokeReturnValue:
        params = context["params"]
        deployment = Deployment.from_variables()
        arguments = _config_of(deployment, params)
        if params["labels"]:
            arguments += ["--labels", *(deployment.resolve(uri) for uri in params["labels"])]
        answer = ask_project(deployment, "ready", arguments, self.log)
        return PokeReturnValue(is_done=answer["verdict"] == "go", xcom_value=answer["labels"])


class InputChangesOperator(BaseOperator):
    """Runs ``jobs/changes.py``: skips the rest of the run when nothing is new, fails it when a version of
    exactly these inputs failed its floors (no retry: the answer would be the same), unless ``force``.

    Its reason, what changed or that nothing did, is the task's XCom or the
    skip's or failure's message.
    """

    def execute(self, context: Any) -> str:
        params = context["params"]
        deployment = Deployment.from_variables()
        answer = ask_project(deployment, "changes", _config_of(deployment, params), self.log)
        verdict, reason = answer["verdict"], answer["reason"]
        if verdict != "go" and params["force"]:
            self.log.info("%s; running anyway (force)", reason)
        elif verdict == "skip":
            raise AirflowSkipException(reason)
        elif verdict == "fail":
            # A failure, not a skip: a skipped run looks healthy, and this one repeats weekly until someone acts.
            raise AirflowFailException(reason)
        return reason


def connection_master(conn_id: str) -> str:
    """The master the Spark provider's hook submits to for the connection ``conn_id``.

    Read from the public connection as the hook reads it: a ``spark``
    connection's host is the whole master (``yarn``, ``local[2]``,
    ``spark://host``, its port added), any other type is ``<type>://<host>[:<port>]``.
    """
    connection = BaseHook.get_connection(conn_id)
    host = connection.host or ""
    if connection.conn_type == "spark" and host and ("://" in host or not connection.port):
        master = host
    else:
        master = f"{connection.conn_type}://{host}"
    return f"{master}:{connection.port}" if connection.port else master


@dataclass(frozen=True)
class Submission:
    """What one stage's ``spark-submit`` is given, besides the connection's master, deploy mode and queue."""

    application: str
    arguments: list[str]
    conf: dict[str, str]
    env: dict[str, str]
    archives: str | None = None
    files: str | None = None


class StageSubmitOperator(BaseOperator):
    """``spark-submit <project>/jobs/<stage>.py --config ... --set ...`` on the Spark connection ``conn_id``.

    The submission (:meth:`submission`) is made when the task runs, from the
    run's params, the deployment and the project's launch profile for the
    connection's master; the deployment's ``tfbs_spark_conf`` wins over the
    profile. spark-submit runs in the project directory, with the task's own
    Kerberos ticket in its process only (on YARN the submission's
    environment also goes to the application master, which has tokens).
    """

    def __init__(self, *, stage: str, conn_id: str = "spark_default", **kwargs: Any) -> None:
        super().__init__(task_id=stage, **kwargs)
        self.stage = stage
        self.conn_id = conn_id
        self._hook: SparkSubmitHook | None = None

    def submission(self, deployment: Deployment, params: dict[str, Any], master: str) -> Submission:
        """The stage's submission to ``master`` for the run's params."""
        arguments = _config_of(deployment, params)
        if self.stage == "train":
            arguments += ["--set", f"train.placement.num_ps={int(params['num_ps'])}"]
            arguments += ["--set", f"train.placement.num_workers={int(params['num_workers'])}"]
        if self.stage == "predict":
            predict = params["predict"]
            for option in ("regions", "tf", "cell", "out"):
                if predict.get(option):
                    arguments += [f"--{option}", predict[option]]
        profile = launch_profile(deployment, params["config"], list(params["overrides"]), master)
        # spark-submit's launcher finds pyspark with $PYSPARK_PYTHON; the profile gives the driver's and executors'.
        env = {**profile["env"], "PYSPARK_PYTHON": deployment.python, **deployment.hadoop_env}
        return Submission(
            application=str(deployment.project_dir / "jobs" / f"{self.stage}.py"),
            arguments=arguments,
            conf={**profile["conf"], **(deployment.spark_conf or {})},
            env=env,
            archives=profile["archives"],
            files=",".join(profile["files"]) or None,
        )

    def hook(self, deployment: Deployment, params: dict[str, Any]) -> tuple[SparkSubmitHook, Submission]:
        """The provider's hook for this run's submission, and the submission."""
        submission = self.submission(deployment, params, connection_master(self.conn_id))
        hook = SparkSubmitHook(
            conf=submission.conf,
            conn_id=self.conn_id,
            files=submission.files,
            archives=submission.archives,
            principal=deployment.principal or None,
            keytab=deployment.keytab or None,
            name=f"{self.dag_id}.{self.stage}",
            application_args=submission.arguments,
            env_vars=submission.env,
            # The project environment's spark-submit: the connection's spark-binary extra may only name one on PATH.
            spark_binary=str(deployment.bin_dir / "spark-submit"),
        )
        return hook, submission

    def execute(self, context: Any) -> None:
        params = context["params"]
        if self.stage == "predict" and not params["predict"].get("tf"):
            raise AirflowSkipException("no predict.tf and predict.cell given: nothing to score")
        deployment = Deployment.from_variables()
        self._hook, submission = self.hook(deployment, params)
        with kerberos_ticket(deployment) as ticket, environ(ticket):
            # The driver's own HDFS client reads the ticket; Spark's JVM logs in from the keytab.
            self._hook.submit(submission.application, cwd=str(deployment.project_dir))

    def on_kill(self) -> None:
        if self._hook is not None:
            self._hook.on_kill()
