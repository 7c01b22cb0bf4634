"""Training on Spark executors: what each TensorFlow node does.

``train_on_spark`` starts the cluster through :mod:`tf_models.tfos`
(the only package that knows TensorFlowOnSpark) and runs :func:`node_main`
on every node:

``parameter_server`` (default)
    ps and workers serve gRPC; the chief builds the model under
    ``ParameterServerStrategy`` and schedules training steps on the workers,
    each of which reads its own share of the record files.
``multi_worker_mirrored``
    chief and workers all run the training loop in lock-step (all-reduce).
``local``
    no cluster: the loop runs in the driver (for debugging and baselines).

The model goes to its version's folder, ``<run_dir>/models/<version>/``
(:mod:`tfbs.lineage`). Before any cluster starts, the driver claims it
(:func:`prepare_version`): a version of other shards or another training
configuration is refused, a finished one is left as it is, and a new one
gets its ``lineage.json`` first. Training resumes only within its version.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
from pathlib import Path

import numpy as np

from tf_models import MODEL_FORMAT
from tf_models.model_format import recorded_model_code
from tf_models.training_launch import elastic_workers
from tfbs import lineage, storage
from tfbs.config import PipelineConfig
from tfbs.errors import ConfigError
from tfbs.lineage import Lineage
from tfbs.manifest import Manifest

log = logging.getLogger("tfbs.train")

DONE_MARKER = "_TRAINING_DONE"
#: Under the model directory: one file per node with the pid of its TF process.
NODE_DIR = "_nodes"


def prepare_version(config: PipelineConfig, manifest: Manifest) -> tuple[Lineage, bool]:
    """Claim the model version of these shards and this configuration, on the driver.

    Returns
    -------
    tuple
        The version's lineage, and whether it already holds a finished
        export of that lineage (then there is nothing to train).

    Raises
    ------
    tfbs.lineage.LineageError
        If the version folder holds a model of other shards or another
        training configuration (possible when ``train.version`` names it).
    """
    version_lineage = lineage.claim_version(
        config.run_dir, Lineage.of(config, manifest, MODEL_FORMAT, recorded_model_code())
    )
    return version_lineage, finished_export(
        lineage.export_uri(config.run_dir, version_lineage.version), version_lineage
    )


def finished_export(export_uri: str, version_lineage: Lineage) -> bool:
    """Whether ``export_uri`` holds a whole export of the model of ``version_lineage`` (:func:`tfbs.lineage.export_problem`).

    The export's metadata is written last (:func:`_export`); a SavedModel
    file deleted since makes the export unfinished too, so it is trained again.
    """
    return lineage.export_problem(export_uri, version_lineage) is None


def _export(config: PipelineConfig, version_lineage: Lineage, run, manifest: Manifest, result) -> str:
    from tf_models.export import export_model

    model_config = run.model_config(config.train)
    metadata = {
        "tfs": manifest.tfs,
        "cells": manifest.cells,
        "window": manifest.window,
        "uses_dnase": model_config.use_dnase,
        "uses_cell_type": model_config.use_cell_type,
        # The expression table is by cell_index: only these cells can be scored.
        "uses_expression": model_config.use_expression,
        "steps": result.steps,
        "strategy": config.train.placement.strategy,
        "config_digest": config.digest(),
        "version": version_lineage.version,
        "manifest_digest": version_lineage.manifest_digest,
        "training_config_digest": version_lineage.training_config_digest,
    }
    from tf_models.model_dir import model_directory

    target = lineage.export_uri(config.run_dir, version_lineage.version)
    storage.delete_dir(target)  # a partial export of a killed run goes; this one replaces it whole
    # Training closed its mirror: the export gets one of its own (or, for a
    # local model URI, writes in place).
    with model_directory(lineage.model_uri(config.run_dir, version_lineage.version)) as directory:
        local = export_model(
            result.model,
            model_config,
            len(manifest.cells),
            manifest.window,
            [manifest.proteins[tf] for tf in manifest.tfs],
            metadata,
            f"{directory.local}/export",
            cell_features=run.cell_features,
        )
        if directory.mirrored:
            # The metadata marks a whole export (finished_export): it goes up
            # after the SavedModel's files, never before.
            written = Path(local, lineage.EXPORT_METADATA)
            text = written.read_text()
            written.unlink()
            directory.push()
            storage.write_text(f"{target}/{lineage.EXPORT_METADATA}", text)
    return target


def _readable_run(config: PipelineConfig, manifest: Manifest, download: tuple[str, ...], inputs: dict):
    """The manifest's training run, its remote record files copied where this node reads them.

    ``inputs``: what the driver chose and read for the nodes, :func:`driver_inputs`.
    """
    from tf_models.training_run import TrainingRun
    from tfbs.private_dirs import records_cache

    model_inputs = dict(inputs)
    cache = str(records_cache(model_inputs.pop("records_cache")))
    run = TrainingRun.from_manifest(manifest).readable_by_tensorflow(cache, download)
    return dataclasses.replace(run, **model_inputs)


def driver_inputs(config: PipelineConfig, manifest: Manifest) -> dict:
    """What the nodes start from besides the records, chosen or read once on the driver:
    ``{"records_cache": records_cache_location(...), "motif_seeds": known_motif_seeds(...),
    "cell_features": cell_expression_table(...)}``."""
    from tfbs.private_dirs import records_cache_location

    return {
        "records_cache": records_cache_location(config.train.placement.record_cache_dir),
        "motif_seeds": known_motif_seeds(config, manifest.tfs),
        "cell_features": cell_expression_table(config, manifest.cells),
    }


def cell_expression_table(config: PipelineConfig, cells: list[str]) -> np.ndarray | None:
    """``(len(cells), genes)`` log2(1 + TPM) of the run's genes by ``cell_index`` when the model reads
    expression (``train.model.use_expression``), else None.

    Raises
    ------
    ConfigError
        If the model reads expression and a cell of the shards has no RNA-seq.
    """
    from tfbs.expression import run_expression

    if not config.train.model.use_expression:
        return None
    levels = run_expression(config, cells)
    if not levels:
        raise ConfigError(
            f"train.model.use_expression: needs RNA-seq of every cell of the shards ({', '.join(cells)}) in "
            f"data.rnaseq_dir ({config.data.rnaseq_dir}): gene_expression.<CELL>.biorep1.tsv and biorep2.tsv"
        )
    return np.stack([levels[cell] for cell in cells]).astype(np.float32)


def known_motif_seeds(config: PipelineConfig, tfs: list[str]) -> tuple[np.ndarray, np.ndarray] | None:
    """The first filters of a ``motif_cnn`` as known motifs (:func:`tf_models.motif_cnn.motif_seeds`).

    Read once, on the driver: every motif of ``motif_cnn.seed_motif_db`` in
    file order (up to the filters) when it is set, else one filter per
    distinct motif of ``evaluate.motifs`` among ``tfs`` from
    ``evaluate.motif_db``. None when the architecture is another,
    ``motif_cnn.seed_motifs`` is off or no motif is configured; the log says
    which filters start as which motifs, or why none do.
    """
    from tf_models.baselines import GENOME_BACKGROUND, motif_log_odds
    from tf_models.motif_cnn import motif_seeds
    from tfbs.motifs import log_odds, read_meme

    model = config.train.model
    if model.architecture != "motif_cnn":
        return None
    scan = model.motif_cnn
    if not scan.seed_motifs:
        log.info("motif filters start at random: train.model.motif_cnn.seed_motifs is false")
        return None
    if scan.seed_motif_db is not None:
        matrices = read_meme(scan.seed_motif_db)
        chosen = dict(list(matrices.items())[: scan.filters])
        log.info(
            "motif filters start as the motifs of train.model.motif_cnn.seed_motif_db %s: %s",
            scan.seed_motif_db,
            ", ".join(chosen),
        )
        return motif_seeds([log_odds(m, GENOME_BACKGROUND) for m in chosen.values()], scan.kernel)
    motifs = {tf: config.evaluate.motifs[tf] for tf in tfs if tf in config.evaluate.motifs}
    if not motifs or not config.evaluate.motif_db:
        log.warning(
            "motif filters start at random although train.model.motif_cnn.seed_motifs is true: "
            "no motif of %s is configured (evaluate.motifs, evaluate.motif_db)",
            ", ".join(tfs),
        )
        return None
    without = [tf for tf in tfs if tf not in motifs]
    if without:
        log.info("no known motif for %s (evaluate.motifs): no filter starts as theirs", ", ".join(without))
    matrices = motif_log_odds(config.evaluate.motif_db, motifs)
    distinct = {motifs[tf]: matrices[tf] for tf in sorted(motifs)}
    log.info(
        "motif filters start as the known motifs of the run's TFs, from evaluate.motif_db %s: %s "
        "(train.model.motif_cnn.seed_motifs)",
        config.evaluate.motif_db,
        ", ".join(distinct),
    )
    return motif_seeds(list(distinct.values()), scan.kernel)


def _train_and_export(
    config: PipelineConfig, version_lineage: Lineage, manifest: Manifest, run, strategy, is_chief: bool
) -> None:
    from tf_models.train_loop import train

    result = train(
        config.train, lineage.model_uri(config.run_dir, version_lineage.version), run, strategy, is_chief=is_chief
    )
    if is_chief:
        _export(config, version_lineage, run, manifest, result)


def node_main(args: dict, info) -> None:
    """Run one TensorFlow node (called by TensorFlowOnSpark on an executor).

    Parameters
    ----------
    args
        ``{"config": PipelineConfig, "manifest": Manifest, "lineage": Lineage, "num_gpus": int,
        "inputs": driver_inputs(...), "run_id": str}``.
    info
        :class:`tf_models.tfos.NodeInfo` of this node.
    """
    from tf_models.gpus import apply_visible_devices
    from tf_models.tfos import CpuPlan

    config: PipelineConfig = args["config"]
    placement = config.train.placement
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

    manifest: Manifest = args["manifest"]
    version_lineage: Lineage = args["lineage"]
    marker = f"{lineage.model_uri(config.run_dir, version_lineage.version)}/{DONE_MARKER}"
    timeout = placement.worker_wait_timeout_s

    if placement.strategy == "multi_worker_mirrored":
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
        cpus.after_server_is_up()
        run = _readable_run(config, manifest, ("train", "valid"), args["inputs"])
        _train_and_export(config, version_lineage, manifest, run, strategy, is_chief=info.is_chief)
        return
    if info.job_name in ("ps", "worker"):
        # Workers run the input graph the chief builds: their record files first.
        if info.job_name == "worker":
            _readable_run(config, manifest, ("train",), args["inputs"])
        # The ps waits like a worker instead of server.join(), which never
        # returns and would keep the process alive until the application ends.
        start_server(info)
        cpus.after_server_is_up()
        status = wait_for_chief(marker, timeout_seconds=timeout, run_id=args["run_id"])
        if status != "ok":
            raise RuntimeError(f"{info.job_name}:{info.task_index} released by a failed chief: {status}")
        return
    status = "failed: see the chief's log"
    try:
        resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
        strategy = tf.distribute.ParameterServerStrategy(resolver)
        cpus.after_server_is_up()
        run = _readable_run(config, manifest, ("valid",), args["inputs"])
        _train_and_export(config, version_lineage, manifest, run, strategy, is_chief=True)
        status = "ok"
    finally:
        # Release the ps and workers whether training worked or not, so the
        # cluster shuts down now instead of at TFoS's timeout.
        mark_chief_done(marker, args["run_id"], status)


class _ProgressFollower(threading.Thread):
    """Logs the chief's training history in the driver as it is written.

    The chief runs on an executor, whose log the driver's console does not
    show; ``history.json`` is rewritten at every checkpoint.
    """

    def __init__(self, history_uri: str, total_steps: int, poll_seconds: float = 5.0) -> None:
        super().__init__(name="tfbs-progress", daemon=True)
        self.history_uri = history_uri
        self.total_steps = total_steps
        self.poll_seconds = poll_seconds
        self.stopped = threading.Event()
        self.seen = 0

    def poll(self) -> None:
        try:
            history = json.loads(storage.read_text(self.history_uri))
        except (OSError, ValueError):
            return  # not written yet, or being rewritten
        for entry in history[self.seen :]:
            log.info(
                "chief: step %d/%d (epoch %.2f) loss %.4f %.0f examples/s%s",
                entry["step"],
                self.total_steps,
                entry.get("epoch", 0.0),
                entry["loss"],
                entry["examples_per_s"],
                f" valid auPRC {entry['valid_auprc']:.4f}" if "valid_auprc" in entry else "",
            )
        self.seen = max(self.seen, len(history))

    def run(self) -> None:
        while not self.stopped.wait(self.poll_seconds):
            self.poll()

    def stop(self) -> None:
        self.stopped.set()
        self.poll()


def _checkpoint_step(model_uri: str) -> int | None:
    """The step of the newest checkpoint under the model directory, or ``None``.

    Read from the checkpoint's own ``step`` variable (the coordinator-counted
    step that :func:`tf_models.train_loop.train` restores), not its file name.
    """
    import tensorflow as tf

    from tf_models.model_dir import model_directory

    with model_directory(model_uri) as directory:
        directory.pull("checkpoints")
        latest = tf.train.latest_checkpoint(f"{directory.local}/checkpoints")
        if latest is None:
            return None
        try:
            return int(tf.train.load_variable(latest, "step/.ATTRIBUTES/VARIABLE_VALUE"))
        except (tf.errors.OpError, ValueError) as exc:
            # Diagnostics only: it must not hide the error being reported.
            log.warning("cannot read the step of %s: %s", latest, exc)
            return None


def _log_resume_point(model_uri: str, total_steps: int) -> None:
    """Say in the driver's log whether this run resumes, and from which step.

    The chief restores the checkpoint on an executor, whose log the driver's
    console does not show.
    """
    step = _checkpoint_step(model_uri)
    if step:
        log.info("resuming from the checkpoint at step %d of %d (%s/checkpoints)", step, total_steps, model_uri)


def _write_history_plot(model_uri: str) -> None:
    """Plot the loss, validation auPRC and throughput history next to ``history.json``."""
    from tf_models.curves_plot import plot_history

    history_uri = f"{model_uri}/history.json"
    if storage.exists(history_uri):
        history = json.loads(storage.read_text(history_uri))
        storage.write_through_local(f"{model_uri}/history.png", lambda path: plot_history(history, path))


def _read_history(model_uri: str) -> list[dict]:
    history_uri = f"{model_uri}/history.json"
    return json.loads(storage.read_text(history_uri)) if storage.exists(history_uri) else []


def up_to_date_summary(config: PipelineConfig, version_lineage: Lineage) -> dict:
    """What :func:`train_on_spark` returns for a version already trained and exported."""
    model_uri = lineage.model_uri(config.run_dir, version_lineage.version)
    log.info(
        "model %s is up to date (shards manifest %s, train config %s): not retrained; %s",
        version_lineage.version,
        version_lineage.manifest_digest[:12],
        version_lineage.training_config_digest[:12],
        f"{model_uri}/export",
    )
    return {
        "strategy": config.train.placement.strategy,
        "seconds": 0.0,
        "history": _read_history(model_uri),
        "version": version_lineage.version,
        "model_uri": model_uri,
        "up_to_date": True,
    }


def _train_on_cluster(
    spark, config: PipelineConfig, version_lineage: Lineage, manifest: Manifest, inputs: dict
) -> None:
    """Train on a TF cluster of Spark executors, one per node (ps or all-reduce), following the chief's progress."""
    from tf_models.tfos import ClusterFailed, run_cluster
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
    _log_resume_point(model_uri, schedule.total_steps)
    follower = _ProgressFollower(f"{model_uri}/history.json", schedule.total_steps)
    follower.start()
    try:
        run_cluster(
            spark.sparkContext,
            node_main,
            # num_gpus: TFoS then takes GPUs only from Spark's task
            # resources, never from its own nvidia-smi probe (tf_models.gpus).
            {
                "config": config,
                "manifest": manifest,
                "lineage": version_lineage,
                "num_gpus": placement.gpus_per_worker,
                "inputs": inputs,
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
        step = _checkpoint_step(model_uri)
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


def train_on_spark(spark, config: PipelineConfig, manifest: Manifest) -> dict:
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
    version_lineage, up_to_date = prepare_version(config, manifest)
    if up_to_date:
        return up_to_date_summary(config, version_lineage)
    model_uri = lineage.model_uri(config.run_dir, version_lineage.version)
    log.info("training model version %s in %s", version_lineage.version, model_uri)
    inputs = driver_inputs(config, manifest)
    if placement.strategy == "local":
        import tensorflow as tf

        run = _readable_run(config, manifest, ("train", "valid"), inputs)
        _train_and_export(config, version_lineage, manifest, run, tf.distribute.get_strategy(), is_chief=True)
    else:
        _train_on_cluster(spark, config, version_lineage, manifest, inputs)
    _write_history_plot(model_uri)
    seconds = time.monotonic() - started
    log.info("training (%s) of version %s finished in %.1f s", placement.strategy, version_lineage.version, seconds)
    return {
        "strategy": placement.strategy,
        "seconds": seconds,
        "history": _read_history(model_uri),
        "version": version_lineage.version,
        "model_uri": model_uri,
        "up_to_date": False,
    }
