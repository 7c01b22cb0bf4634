"""Where and how training runs on Spark: its master, what it asks of Spark, and whether a lost worker stops it.

No part of a model's identity (:mod:`tf_models.model_format` hashes the
training code, not this): the same model trains on one machine or a
cluster. Spark's settings themselves are written by :mod:`tfbs.launch`
from the :class:`~tfbs.launch.StageNeeds` stated here.
"""

from __future__ import annotations

from tfbs.config import PipelineConfig
from tfbs.launch import StageNeeds


def elastic_workers(config: PipelineConfig) -> bool:
    """Whether a lost worker leaves the run going (``train.placement.on_worker_loss``): under the ps strategy
    only, whose coordinator runs a lost worker's steps on the others; all-reduce needs every member."""
    placement = config.train.placement
    return placement.strategy == "parameter_server" and placement.on_worker_loss == "continue"


def training_needs(config: PipelineConfig) -> StageNeeds:
    """What training asks of Spark: one executor per TF node, one task each, its GPUs, and the retries.

    ``train.placement.spark_conf`` may set ``spark.executor.cores`` (a node's
    TensorFlow then has that many); a node task takes them all. Training in
    one process (strategy ``local``) runs in the driver: no executors, no GPUs.
    """
    placement = config.train.placement
    distributed = placement.strategy != "local"
    return StageNeeds(
        executors=placement.num_nodes if distributed else None,
        cores_per_executor=placement.executor_cores,
        fixed_executors=True,
        # A retried TF node cannot rejoin its cluster (tf_models.tfos.tfos_patches.NodeTaskGuard): without
        # elastic workers, fail at once. With them, one retry: YARN may report a lost worker's container as
        # killed by a signal, which Spark counts against its task, and the retry returns at once.
        task_attempts=2 if elastic_workers(config) else 1,
        gpus_per_executor=placement.gpus_per_worker if distributed else 0,
        gpu_discovery_script=placement.gpu_discovery_script,
        conf=placement.spark_conf,
    )


def training_master(config: PipelineConfig) -> str | None:
    """The master of the training session: ``spark.master``, or a ``local-cluster`` of its own for a
    distributed training on a local master (:meth:`~tfbs.config.PlacementConfig.training_master`);
    None (the configuration's) for a training in one process."""
    placement = config.train.placement
    return placement.training_master(config.spark.master) if placement.strategy != "local" else None
