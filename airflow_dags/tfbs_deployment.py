"""Where the DAG's tasks find the project, its environment and the cluster: the ``tfbs_*`` Airflow Variables.

Read when a task runs, never when the DAG file is parsed (see the DAG's
docstring in ``tfbs_pipeline.py`` for each Variable). Like the DAG file, this
module imports no pipeline code: what the project decides about a launch
(Spark's network policy, the JVM options of a configuration) comes from the
project's own ``python -m tfbs.launch`` (:func:`launch_profile`), run in the
project's environment when a stage is submitted.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from airflow.sdk import Variable
from airflow.sdk.exceptions import AirflowFailException

#: The executors' interpreter inside the archive of ``tfbs_env_archive``.
ARCHIVE_ALIAS = "environment"

#: The GPU discovery script under ``<project>/scripts``, shipped with training.
GPU_DISCOVERY_SCRIPT = "get_gpus_resources.sh"

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
    def python(self) -> str:
        """The project environment's interpreter: the driver's, and spark-submit's launcher's."""
        return str(self.bin_dir / "python")

    def resolve(self, path_or_uri: str) -> str:
        """A URI as given; a local path made absolute against the project directory."""
        if "://" in path_or_uri:
            return path_or_uri
        return str(self.project_dir / Path(path_or_uri).expanduser())


def launch_profile(
    deployment: Deployment, config: str, overrides: list[str], master: str, environment: str | None
) -> tuple[dict[str, str], dict[str, str]]:
    """The Spark settings and environment a submission of ``config`` to ``master`` needs (``tfbs.launch``,
    which classifies the master), with the interpreters of the driver and, from the packed environment
    shipped as ``environment`` (None: none), of the executors.

    Runs ``python -m tfbs.launch --json`` with the project's interpreter in
    the project directory, so the scheduler never imports pipeline code.

    Returns
    -------
    tuple of dict
        ``spark-submit``'s ``--conf`` settings, and its environment's additions.

    Raises
    ------
    AirflowFailException
        If the configuration cannot be read: no retry would help.
    """
    command = [deployment.python, "-m", "tfbs.launch", "--json", "--master", master, "--python", deployment.python]
    if environment:
        command += ["--environment", environment]
    command += ["--config", deployment.resolve(config)]
    for assignment in overrides:
        command += ["--set", assignment]
    done = subprocess.run(command, cwd=deployment.project_dir, capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [""])[-1]
        raise AirflowFailException(f"the launch profile of {config} ({' '.join(command)}): {last}")
    profile = json.loads(done.stdout.strip().splitlines()[-1])
    return dict(profile["conf"]), dict(profile["env"])


@contextlib.contextmanager
def hadoop_env(conf_dir: str) -> Iterator[None]:
    """``HADOOP_CONF_DIR`` set to ``conf_dir`` (if any) for the duration."""
    if not conf_dir:
        yield
        return
    with environ({"HADOOP_CONF_DIR": conf_dir}):
        yield


@contextlib.contextmanager
def kerberos_ticket(deployment: Deployment) -> Iterator[dict[str, str]]:
    """A ticket of the deployment's principal in a cache of this task's own; its ``KRB5CCNAME``.

    Nothing (an empty dict) when no principal is configured. The cache is
    made from the keytab (``kinit -kt``), in a private folder, and removed
    when the block ends.

    Raises
    ------
    AirflowFailException
        If ``kinit`` fails (a wrong keytab or principal: no retry helps).
    """
    if not deployment.principal:
        yield {}
        return
    if not deployment.keytab:
        raise AirflowFailException("Variable tfbs_principal is set: set tfbs_keytab beside it")
    folder = tempfile.mkdtemp(prefix="tfbs-krb5cc-")
    env = {"KRB5CCNAME": f"FILE:{folder}/cc"}
    try:
        done = subprocess.run(
            ["kinit", "-kt", deployment.keytab, deployment.principal],
            env={**os.environ, **env}, capture_output=True, text=True,
        )  # fmt: skip
        if done.returncode != 0:
            raise AirflowFailException(f"kinit {deployment.principal}: {done.stderr.strip()}")
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
