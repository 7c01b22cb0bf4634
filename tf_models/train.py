"""Training on Spark executors, as the driver runs it: the stage's entry, :func:`train_on_spark`.

The driver claims the model version (:mod:`tf_models.versions`), reads
what the nodes start from (:mod:`tf_models.node_inputs`), then either runs
the loop itself (``train.placement.strategy: local``, for debugging and
baselines) or starts a TF cluster of Spark executors through
:mod:`tf_models.tfos` (the only package that knows TensorFlowOnSpark), each
running :func:`tf_models.node.node_main`, and follows the chief's progress
(:mod:`tf_models.driver_progress`).
"""

from __future__ import annotations

import logging
import time

from tf_models.driver_progress import (
    ProgressFollower,
    checkpoint_step,
    log_resume_point,
    read_history,
    write_history_plot,
)
from tf_models.node import NodeJob, train_and_export
from tf_models.node_inputs import NodeInputs, node_inputs, readable_run
from tf_models.training_launch import elastic_workers
from tf_models.versions import prepare_version, up_to_date_summary
from tfbs import lineage
from tfbs.config import PipelineConfig
from tfbs.formats.manifest import Manifest
from tfbs.lineage import Lineage

log = logging.getLogger("tfbs.train")

#: Under the model directory: one file per node with the pid of its TF process.
NODE_DIR = "_nodes"


def _train_on_cluster(
    spark, config: PipelineConfig, version_lineage: Lineage, manifest: Manifest, inputs: NodeInputs
) -> None:
    """Train on a TF cluster of Spark executors, one per node (ps or all-reduce), following the chief's progress."""
    from tf_models.node import node_main
    from tf_models.tfos import PRIVATE_FOLDERS_ARG, ClusterFailed, run_cluster
    from tf_models.tfos.failures import ClusterSetupError
    from tf_models.training_run import TrainingRun

    cfg, placement = config.train, config.train.placement
    model_uri = lineage.model_uri(config.run_dir, version_lineage.version)
    num_ps = placement.num_ps if placement.strategy == "parameter_server" else 0
    schedule = TrainingRun.from_manifest(manifest).schedule(cfg)
    log.info(
        "training %d steps, %d per epoch (%s)",
        schedule.total_steps,
        schedule.steps_per_epoch,
        f"train.steps={cfg.steps}" if cfg.steps else f"train.epochs={cfg.epochs}",
    )
    log_resume_point(model_uri, schedule.total_steps)
    follower = ProgressFollower(f"{model_uri}/history.json", schedule.total_steps)
    follower.start()
    try:
        run_cluster(
            spark.sparkContext,
            node_main,
            # The record cache among the folders each node keeps (PRIVATE_FOLDERS_ARG).
            {
                **NodeJob(config, manifest, version_lineage, inputs).node_args(),
                PRIVATE_FOLDERS_ARG: [inputs.records_cache],
            },
            num_ps=num_ps,
            num_workers=placement.num_workers,
            shutdown_timeout=placement.timeout_s,
            executors_timeout=placement.executors_timeout_s,
            reservation_timeout=placement.reservation_timeout_s,
            private_network=placement.tf_network == "private",
            elastic_workers=elastic_workers(config),
            # Each node records the pid of its TF process here, and the
            # driver logs it: which OS process is worker:1.
            node_dir=f"{model_uri}/{NODE_DIR}",
        )
    except ClusterSetupError:
        raise  # nothing ran: the one-line error says it all
    except ClusterFailed as err:
        step = checkpoint_step(model_uri)
        log.error(
            "training stopped: %s. %s",
            err,
            f"Run the same command again to resume from the checkpoint at step {step}."
            if step
            else "No checkpoint was written yet.",
        )
        raise
    finally:
        follower.stop()


def train_on_spark(spark, config: PipelineConfig, manifest: Manifest, claimed: Lineage | None = None) -> dict:
    """Train as configured and export the model under ``<run_dir>/models/<version>/export``.

    A version already trained and exported from these shards and this
    training configuration is not trained again (``"up_to_date": True``).

    Parameters
    ----------
    spark
        The session; for ps/all-reduce it must have exactly
        ``num_ps + num_workers + 1`` single-core executors.
    config
        The pipeline configuration.
    manifest
        The shard manifest (record files, layout, proteins).
    claimed
        The version the caller claimed and found unfinished
        (:func:`tf_models.versions.prepare_version`, as ``tfbs train`` does
        before Spark starts); None: claimed here.

    Returns
    -------
    dict
        ``{"strategy", "seconds", "history", "version", "model_uri", "up_to_date"}``.

    Raises
    ------
    tfbs.lineage.LineageError
        If the version folder holds a model of other shards or another
        training configuration.
    """
    started = time.monotonic()
    placement = config.train.placement
    version_lineage = claimed
    if version_lineage is None:
        version_lineage, up_to_date = prepare_version(config, manifest)
        if up_to_date:
            return up_to_date_summary(config, version_lineage)
    model_uri = lineage.model_uri(config.run_dir, version_lineage.version)
    log.info("training model version %s in %s", version_lineage.version, model_uri)
    inputs = node_inputs(config, manifest)
    if placement.strategy == "local":
        import tensorflow as tf

        run = readable_run(manifest, ("train", "valid"), inputs)
        job = NodeJob(config, manifest, version_lineage, inputs)
        train_and_export(job, run, tf.distribute.get_strategy(), is_chief=True)
    else:
        _train_on_cluster(spark, config, version_lineage, manifest, inputs)
    write_history_plot(model_uri)
    seconds = time.monotonic() - started
    log.info("training (%s) of version %s finished in %.1f s", placement.strategy, version_lineage.version, seconds)
    return {
        "strategy": placement.strategy,
        "seconds": seconds,
        "history": read_history(model_uri),
        "version": version_lineage.version,
        "model_uri": model_uri,
        "up_to_date": False,
    }
