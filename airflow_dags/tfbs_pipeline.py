"""The tfbs-spark pipeline as a scheduled Airflow DAG.

A sensor waits for the label files, a check ends the run early when nothing
is new, then each stage is one ``spark-submit`` of its job file through the
Spark provider::

    wait_for_labels >> detect_changes >> preprocess >> train >> evaluate >> predict

The params are the run's (the configuration, its overrides, training's
size, what to predict); the ``tfbs_*`` Airflow Variables the deployment's
(where the project and its environment are, the cluster's configuration
and Kerberos principal). The tasks live in ``tfbs_tasks.py``; each param
and Variable is described in docs/airflow.md. Nothing here imports
pipeline code, and nothing is read when the file is parsed.

Training is not retried: a TensorFlowOnSpark cluster that lost a node
cannot be resumed by running the same command again, and a failed
distributed run must surface rather than be hidden by a retry.
"""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path

import pendulum
from airflow.sdk import DAG, Param, chain

# Airflow 3 puts a DAG folder on sys.path only for bundles: the tasks' modules lie beside this file.
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.append(str(Path(__file__).resolve().parent))

from tfbs_tasks import InputChangesOperator, LabelFilesSensor, StageSubmitOperator

DAG_ID = "tfbs_pipeline"

#: The sensor's task id.
SENSOR = "wait_for_labels"

#: The task that ends a run early when nothing is new.
CHANGES = "detect_changes"

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
    stages = [StageSubmitOperator(stage=s, retries=RETRIES[s], execution_timeout=TIMEOUTS[s]) for s in STAGES]
    chain(wait_for_labels, detect_changes, *stages)


if __name__ == "__main__":
    dag.test()
