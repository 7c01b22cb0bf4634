"""What each TensorFlow node does on its executor (TensorFlowOnSpark calls :func:`node_main`).

``parameter_server`` (default)
    ps and workers serve gRPC; the chief builds the model under
    ``ParameterServerStrategy`` and schedules training steps on the workers,
    each of which reads its own share of the record files.
``multi_worker_mirrored``
    chief and workers all run the training loop in lock-step (all-reduce).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tf_models.node_inputs import NodeInputs, readable_run
from tfbs import lineage
from tfbs.config import PipelineConfig
from tfbs.formats.manifest import Manifest
from tfbs.lineage import Lineage

#: Written by the chief when training ends (its status inside); the ps and workers wait for it.
DONE_MARKER = "_TRAINING_DONE"


@dataclasses.dataclass(frozen=True)
class NodeJob:
    """What every node of one training is given, pickled once by the driver."""

    config: PipelineConfig
    manifest: Manifest
    lineage: Lineage
    inputs: NodeInputs

    def node_args(self) -> dict[str, Any]:
        """The arguments :func:`tf_models.tfos.run_cluster` hands :func:`node_main`.

        ``num_gpus``: TensorFlowOnSpark then takes GPUs only from Spark's
        task resources, never from its own nvidia-smi probe (tf_models.gpus);
        ``run_cluster`` adds the run's ``run_id``.
        """
        return {"job": self, "num_gpus": self.config.train.placement.gpus_per_worker}

    @property
    def model_uri(self) -> str:
        return lineage.model_uri(self.config.run_dir, self.lineage.version)


def train_and_export(job: NodeJob, run, strategy, is_chief: bool) -> None:
    """Run the training loop under ``strategy``; the chief then exports the model."""
    from tf_models.export import export_version
    from tf_models.train_loop import train

    result = train(job.config.train, job.model_uri, run, strategy, is_chief=is_chief)
    if is_chief:
        export_version(job.config, job.lineage, run, job.manifest, result)


def node_main(args: dict[str, Any], info) -> None:
    """Run one TensorFlow node (called by TensorFlowOnSpark on an executor).

    Parameters
    ----------
    args
        :meth:`NodeJob.node_args` and the ``run_id`` of the run.
    info
        :class:`tf_models.tfos.NodeInfo` of this node.
    """
    from tf_models.gpus import apply_visible_devices
    from tf_models.tfos import CpuPlan

    job: NodeJob = args["job"]
    placement = job.config.train.placement
    # First, before any TF server or strategy initialises devices: this
    # process sees only the GPUs Spark gave its task (a ps none).
    apply_visible_devices(info.job_name, placement.gpus_per_worker)
    # Each branch below pins once its server or strategy is up (CpuPlan's order).
    cpus = CpuPlan.of(info, placement.node_cpus, placement.strategy)
    cpus.before_tensorflow_starts()

    import tensorflow as tf

    from tf_models.gpus import log_devices
    from tf_models.tfos import mark_chief_done, start_server, wait_for_chief

    log_devices(info.job_name, info.task_index, placement.gpus_per_worker)
    marker = f"{job.model_uri}/{DONE_MARKER}"

    if placement.strategy == "multi_worker_mirrored":
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
        cpus.after_server_is_up()
        run = readable_run(job.manifest, ("train", "valid"), job.inputs)
        train_and_export(job, run, strategy, is_chief=info.is_chief)
        return
    if info.job_name in ("ps", "worker"):
        # Workers run the input graph the chief builds: their record files first.
        if info.job_name == "worker":
            readable_run(job.manifest, ("train",), job.inputs)
        # The ps waits like a worker instead of server.join(), which never
        # returns and would keep the process alive until the application ends.
        start_server(info)
        cpus.after_server_is_up()
        status = wait_for_chief(marker, timeout_seconds=placement.worker_wait_timeout_s, run_id=args["run_id"])
        if status != "ok":
            raise RuntimeError(f"{info.job_name}:{info.task_index} released by a failed chief: {status}")
        return
    status = "failed: see the chief's log"
    try:
        resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
        strategy = tf.distribute.ParameterServerStrategy(resolver)
        cpus.after_server_is_up()
        run = readable_run(job.manifest, ("valid",), job.inputs)
        train_and_export(job, run, strategy, is_chief=True)
        status = "ok"
    finally:
        # Release the ps and workers whether training worked or not, so the
        # cluster shuts down now instead of at TFoS's timeout.
        mark_chief_done(marker, args["run_id"], status)
