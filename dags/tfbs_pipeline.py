"""The tfbs-spark pipeline as a scheduled Airflow DAG.

Four tasks, in the order ``tfbs demo`` runs them::

    generate >> preprocess >> train >> evaluate

Each task is a BashOperator running the stage's own command,
``<bin>/tfbs <stage> --config <config> [--set key=value ...]``, in the
project directory, so every stage runs exactly as it does by hand: its Spark
session (``local[2]``, a ``local-cluster`` for TensorFlowOnSpark training, or
YARN) comes from the configuration file. ``tfbs labels`` is not a task: the
generated data set carries its labels; for your own ChIP-seq peaks run it once
before the first run.

Run-time parameters (change them in "Trigger DAG w/ config", or with
``airflow dags trigger -c '{"config": ..., "overrides": [...]}'``):

``config``
    the pipeline YAML, relative to the project directory (default
    ``conf/demo.yaml``).
``overrides``
    a list of ``key=value`` strings, each passed as ``--set key=value``.

Deployment settings, as Airflow Variables (or ``AIRFLOW_VAR_<NAME>``
environment variables), read when a task runs, never when the file is parsed:

``tfbs_project_dir``
    the checkout the stages run in (default: the folder above this file's
    ``dags/``).
``tfbs_bin_dir``
    the folder holding the project's ``tfbs`` command, i.e. the bin folder of
    the virtualenv it is installed in (default: ``<project>/.venv/bin``), so
    Airflow itself may live in another environment.

Every run writes to the configuration's ``run_dir``, so runs never overlap
(``max_active_runs=1``). Training is not retried: a TensorFlowOnSpark cluster
that lost a node cannot be resumed by running the same command again, and a
failed distributed run must surface rather than be hidden by a retry.
"""

from __future__ import annotations

import shlex
from datetime import timedelta
from pathlib import Path

import pendulum
from airflow.providers.standard.operators.bash import BashOperator
from airflow.sdk import DAG, Param

DAG_ID = "tfbs_pipeline"

#: The stages in pipeline order (``jobs/demo.py`` runs the same four).
STAGES = ("generate", "preprocess", "train", "evaluate")

#: Retries per stage: none for training (see above).
RETRIES = {"generate": 2, "preprocess": 2, "train": 0, "evaluate": 2}

#: Upper bounds on one attempt of each stage.
TIMEOUTS = {
    "generate": timedelta(hours=1),
    "preprocess": timedelta(hours=6),
    "train": timedelta(hours=24),
    "evaluate": timedelta(hours=6),
}

_PROJECT_DIR = Path(__file__).resolve().parents[1]

#: ``<bin>/tfbs <stage> --config <config> --set ...``, rendered at run time.
_BIN = "{{ var.value.get('tfbs_bin_dir', default_bin_dir) | shquote }}/tfbs"
_ARGS = (
    " --config {{ params.config | shquote }}"
    "{% for item in params.overrides %} --set {{ item | shquote }}{% endfor %}"
)
_CWD = "{{ var.value.get('tfbs_project_dir', default_project_dir) }}"


with DAG(
    dag_id=DAG_ID,
    description="ENCODE-DREAM TFBS pipeline: generate, preprocess, train (TensorFlowOnSpark), evaluate",
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
    },
    user_defined_filters={"shquote": shlex.quote},
    user_defined_macros={
        "default_project_dir": str(_PROJECT_DIR),
        "default_bin_dir": str(_PROJECT_DIR / ".venv" / "bin"),
    },
    default_args={
        "owner": "tfbs",
        "retry_delay": timedelta(minutes=5),
    },
) as dag:
    tasks = [
        BashOperator(
            task_id=stage,
            bash_command=f"{_BIN} {stage}{_ARGS}",
            cwd=_CWD,
            retries=RETRIES[stage],
            execution_timeout=TIMEOUTS[stage],
        )
        for stage in STAGES
    ]
    for upstream, downstream in zip(tasks, tasks[1:]):
        upstream >> downstream


if __name__ == "__main__":
    dag.test()
