"""Where the DAG's tasks find the project, its environment and the cluster: the ``tfbs_*`` Airflow Variables.

Read when a task runs, never when the DAG file is parsed (docs/airflow.md
lists each Variable). Like the DAG file, this module imports no pipeline
code: what the project knows it says itself, in the project's environment,
when a task runs: its checks' answers (:func:`ask_project`, ``jobs/ready.py``
and ``jobs/changes.py`` with ``--verdict``) and a submission's Spark settings
(:func:`launch_profile`, ``python -m tfbs.launch``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airflow.sdk import Variable
from airflow.sdk.exceptions import AirflowException, AirflowFailException

#: A job's exit code when the user's configuration or input is wrong (``jobs.common.run_stage``).
USER_ERROR = 2

#: The checkout this DAG folder belongs to: ``tfbs_project_dir``'s default.
PROJECT_DIR = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Deployment:
    """Where the project and its environment are, from the Airflow Variables."""

    project_dir: Path
    bin_dir: Path
    env_archive: str = ""
    spark_conf: dict[str, str] | None = None
    hadoop_conf_dir: str = ""
    principal: str = ""
    keytab: str = ""

    @classmethod
    def from_variables(cls) -> Deployment:
        """Read the ``tfbs_*`` Variables (see the DAG's docstring)."""
        project = Path(Variable.get("tfbs_project_dir", default=str(PROJECT_DIR)))
        spark_conf = Variable.get("tfbs_spark_conf", default={}, deserialize_json=True)
        if not isinstance(spark_conf, dict):
            raise AirflowFailException(f"Variable tfbs_spark_conf: expected a JSON object, got {spark_conf!r}")
        return cls(
            project_dir=project,
            bin_dir=Path(Variable.get("tfbs_bin_dir", default=str(project / ".venv" / "bin"))),
            env_archive=Variable.get("tfbs_env_archive", default=""),
            spark_conf={str(key): str(value) for key, value in spark_conf.items()},
            hadoop_conf_dir=Variable.get("tfbs_hadoop_conf_dir", default=""),
            principal=Variable.get("tfbs_principal", default=""),
            keytab=Variable.get("tfbs_keytab", default=""),
        )

    @property
    def hadoop_env(self) -> dict[str, str]:
        """``HADOOP_CONF_DIR`` and ``YARN_CONF_DIR`` of ``tfbs_hadoop_conf_dir``, if set."""
        if not self.hadoop_conf_dir:
            return {}
        return {"HADOOP_CONF_DIR": self.hadoop_conf_dir, "YARN_CONF_DIR": self.hadoop_conf_dir}

    @property
    def python(self) -> str:
        """The project environment's interpreter: the driver's, and spark-submit's launcher's."""
        return str(self.bin_dir / "python")

    def resolve(self, path_or_uri: str) -> str:
        """A URI as given; a local path made absolute against the project directory."""
        if "://" in path_or_uri:
            return path_or_uri
        return str(self.project_dir / Path(path_or_uri).expanduser())


def config_arguments(deployment: Deployment, config: str, overrides: list[str]) -> list[str]:
    """``--config <config> --set <override> ...``, as every job and ``tfbs.launch`` take them."""
    arguments = ["--config", deployment.resolve(config)]
    for assignment in overrides:
        arguments += ["--set", assignment]
    return arguments


def ask_project(deployment: Deployment, job: str, arguments: list[str], log: logging.Logger) -> dict[str, Any]:
    """Run the check ``jobs/<job>.py <arguments> --verdict`` in the project; its answer.

    The check runs with the project's interpreter in the project directory,
    with the deployment's Hadoop configuration and a ticket of its own, and
    its output goes to ``log``. Its last line is the answer
    (``jobs.common.print_verdict``): ``{"verdict": ..., "reason": ...}``.

    Raises
    ------
    AirflowFailException
        If the check stops on a user error (exit 2: the configuration or an
        input is wrong; no retry helps).
    AirflowException
        If it ends without an answer (a crash: the task's retries apply).
    """
    command = [deployment.python, str(deployment.project_dir / "jobs" / f"{job}.py"), *arguments, "--verdict"]
    log.info("running %s", " ".join(command))
    with kerberos_ticket(deployment) as ticket:
        env = {**os.environ, **deployment.hadoop_env, **ticket}
        done = subprocess.run(command, cwd=deployment.project_dir, env=env, capture_output=True, text=True)
    for line in (done.stderr + done.stdout).splitlines():
        log.info("%s", line)
    last = (done.stdout.strip().splitlines() or [""])[-1]
    with contextlib.suppress(ValueError):
        answer = json.loads(last)
        if isinstance(answer, dict) and "verdict" in answer:
            return answer
    error = (done.stderr.strip().splitlines() or [""])[-1]
    if done.returncode == USER_ERROR:
        raise AirflowFailException(f"{job}: {error}")
    raise AirflowException(f"{job} exited {done.returncode} without an answer: {error}")


def launch_profile(deployment: Deployment, config: str, overrides: list[str], master: str) -> dict[str, Any]:
    """What a submission of ``config`` to ``master`` needs (``tfbs.launch``, which classifies the master):
    its settings, the interpreters of the driver and, from ``tfbs_env_archive``, of the executors, and
    the archives and files it ships.

    Runs ``python -m tfbs.launch --json`` with the project's interpreter in
    the project directory, so the scheduler never imports pipeline code.

    Returns
    -------
    dict
        ``conf`` (``spark-submit``'s ``--conf`` settings), ``env`` (its
        environment's additions), ``archives`` (or None) and ``files``.

    Raises
    ------
    AirflowFailException
        If the configuration cannot be read: no retry would help.
    """
    command = [deployment.python, "-m", "tfbs.launch", "--json", "--master", master, "--python", deployment.python]
    if deployment.env_archive:
        command += ["--env-archive", deployment.env_archive]
    command += config_arguments(deployment, config, overrides)
    done = subprocess.run(command, cwd=deployment.project_dir, capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [""])[-1]
        raise AirflowFailException(f"the launch profile of {config} ({' '.join(command)}): {last}")
    return json.loads(done.stdout.strip().splitlines()[-1])


@contextlib.contextmanager
def kerberos_ticket(deployment: Deployment) -> Iterator[dict[str, str]]:
    """A ticket of the deployment's principal in a cache of this task's own; its ``KRB5CCNAME``.

    Nothing (an empty dict) when no principal is configured. The project
    writes the ticket from the keytab (``python -m tfbs.launch.kerberos --cache``)
    to a cache in a private folder of the task's, removed when the block ends.

    Raises
    ------
    AirflowFailException
        If the login fails (a wrong keytab or principal: no retry helps).
    """
    if not deployment.principal:
        yield {}
        return
    if not deployment.keytab:
        raise AirflowFailException("Variable tfbs_principal is set: set tfbs_keytab beside it")
    folder = tempfile.mkdtemp(prefix="tfbs-krb5cc-")
    env = {"KRB5CCNAME": f"FILE:{folder}/cc"}
    command = [deployment.python, "-m", "tfbs.launch.kerberos", "--principal", deployment.principal]
    command += ["--keytab", deployment.keytab, "--cache", env["KRB5CCNAME"]]
    try:
        done = subprocess.run(command, cwd=deployment.project_dir, capture_output=True, text=True)
        if done.returncode != 0:
            raise AirflowFailException(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else str(command))
        yield env
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def environ(extra: dict[str, str]) -> Iterator[None]:
    """``os.environ`` with ``extra`` for the duration (the sensor's in-process HDFS client reads it)."""
    saved = {key: os.environ.get(key) for key in extra}
    os.environ.update(extra)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
