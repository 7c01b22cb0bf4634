"""One custom training loop for every strategy.

Keras 3 ``model.fit`` supports neither ``ParameterServerStrategy`` nor
``MultiWorkerMirroredStrategy`` on TF 2.21, so training is a custom loop with
Keras layers and optimizer. The same code runs

- ``ParameterServerStrategy``: on the chief, which schedules closures on the
  workers through a ``ClusterCoordinator``; each worker builds its own input
  pipeline from its share of the record files;
- ``MultiWorkerMirroredStrategy``: on every worker, synchronously;
- the default strategy: in one process (tests, benchmarks' baseline).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import keras
import tensorflow as tf

from tf_models.encoding import protein_one_hot
from tf_models.model import TFBSModel
from tf_models.model_dir import ModelDirectory, model_directory
from tf_models.motif_cnn import seed_filters
from tf_models.optimizer import LockedAdam
from tf_models.packed_step import packed_gradient_step
from tf_models.train_progress import (
    EarlyStopping,
    earlier_history,
    log_progress,
    progress_entry,
    validation,
    write_summaries,
)
from tf_models.training_run import TrainingRun, pipeline_batch_size
from tf_models.weight_average import at_averaged_weights
from tfbs import storage
from tfbs.config import TrainConfig
from tfbs.formats.proteins import protein_table

log = logging.getLogger("tfbs.train")

#: How often in one checkpoint's window the workers' streams are built anew
#: after one ended. A training stream never ends, but when a worker's
#: connection is lost while a step reads its batch, TensorFlow cancels the
#: read and leaves that worker's stream ended for good ("End of sequence"
#: on every later step there); a stream that truly ends fails past this.
STREAM_REBUILDS = 3


@dataclass
class TrainingResult:
    """Outcome of :func:`train`."""

    steps: int
    directory: ModelDirectory  # closed: a remote model's temporary mirror is already removed
    history: list[dict] = field(default_factory=list)
    model: TFBSModel | None = None


def _loss(
    model: Callable[..., tf.Tensor], batch: dict[str, tf.Tensor], proteins: tf.Tensor, training: bool
) -> tf.Tensor:
    """Mean loss of ``model`` (the model, or a call on given weights) on ``batch``."""
    logits = model({**batch, "proteins": proteins}, training=training)
    per_example = tf.nn.sigmoid_cross_entropy_with_logits(labels=batch["label"], logits=logits)
    return tf.reduce_mean(per_example)


def _gradient_step(model: TFBSModel, optimizer, batch: dict[str, tf.Tensor], proteins: tf.Tensor, replicas: int):
    """One optimisation step on one replica's batch; returns its loss."""
    with tf.GradientTape() as tape:
        loss = _loss(model, batch, proteins, training=True)
        # Under mirrored replicas, gradients are summed across replicas.
        # scale_loss is a no-op except under mixed precision, where the
        # LossScaleOptimizer scales up (and apply_gradients unscales) so small
        # float16 gradients do not underflow.
        scaled = optimizer.scale_loss(loss / replicas)
    grads = tape.gradient(scaled, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


def training_step(
    model: TFBSModel, optimizer, proteins: tf.Tensor, strategy: tf.distribute.Strategy
) -> Callable[[dict[str, tf.Tensor]], tf.Tensor]:
    """The step :func:`train` runs on one replica's batch under ``strategy``: ``step(batch) -> loss``.

    Under ``ParameterServerStrategy`` each step reads the variables and sends
    the gradients as one tensor per ps and dtype (:mod:`tf_models.packed_step`);
    otherwise the variables are local and the step is the plain one.
    """
    replicas = strategy.num_replicas_in_sync
    if isinstance(strategy, tf.distribute.ParameterServerStrategy):
        return lambda batch: packed_gradient_step(
            model, optimizer, lambda call: _loss(call, batch, proteins, training=True), replicas
        )
    return lambda batch: _gradient_step(model, optimizer, batch, proteins, replicas)


def build_training_step(cfg: TrainConfig, run: TrainingRun):
    """A compiled single-process training step, ``step(batch) -> loss``.

    The same model, loss and optimizer as :func:`train`, without a strategy
    or checkpoints: the baseline for benchmarks.
    """
    model = run.new_model(cfg)
    optimizer = LockedAdam(cfg.learning_rate)
    proteins = protein_one_hot(tf.constant(protein_table(run.proteins, cfg.model.aa_max_length)))
    return tf.function(lambda batch: _gradient_step(model, optimizer, batch, proteins, 1))


def train(
    cfg: TrainConfig,
    model_uri: str,
    run: TrainingRun,
    strategy: tf.distribute.Strategy,
    is_chief: bool = True,
) -> TrainingResult:
    """Train the TFBS model under ``strategy`` for ``train.epochs`` (or ``train.steps``).

    Resumes from the newest checkpoint under the model directory; at every
    checkpoint (once per epoch unless ``train.checkpoint_every_steps``)
    scores the validation records, stops early after
    ``train.early_stopping_patience`` checkpoints without a better auPRC and
    then keeps the best one's weights; writes checkpoints, TensorBoard events
    and ``history.json`` (chief only).

    Parameters
    ----------
    cfg
        The ``train`` section.
    model_uri
        The model directory: checkpoints, best checkpoint, events, history.
    run
        Record files, layout and proteins from the shard manifest.
    strategy
        ``ParameterServerStrategy`` (called on the chief),
        ``MultiWorkerMirroredStrategy`` (called on every worker) or the
        default strategy.
    is_chief
        Whether this process writes checkpoints, events and history.

    Returns
    -------
    TrainingResult
        Steps done, the loss history and the trained model.
    """
    directory = model_directory(model_uri)
    try:
        return _train_in(directory, cfg, run, strategy, is_chief)
    finally:
        # Everything was pushed at each checkpoint: the temporary mirror of a
        # remote model directory goes, even when training fails.
        directory.close()


def _train_in(
    directory: ModelDirectory, cfg: TrainConfig, run: TrainingRun, strategy: tf.distribute.Strategy, is_chief: bool
) -> TrainingResult:
    """:func:`train` in ``directory``, which the caller closes."""
    directory.pull()  # a resumed run restores the remote's newest checkpoint
    model_dir = directory.local
    uses_coordinator = isinstance(strategy, tf.distribute.ParameterServerStrategy)
    schedule = run.schedule(cfg)
    per_replica_batch = pipeline_batch_size(cfg)
    tf.random.set_seed(cfg.seed)
    keras.utils.set_random_seed(cfg.seed)

    model, optimizer, learning_rate = _build_model_and_optimizer(cfg, run, strategy)
    # Steps are counted here, by the process that schedules them: under
    # ParameterServerStrategy, workers update optimizer.iterations on the ps
    # concurrently and increments get lost (measured: 29 of 30).
    step_counter = tf.Variable(0, dtype=tf.int64, trainable=False, name="tfbs_step")
    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, step=step_counter)
    proteins = protein_one_hot(tf.constant(protein_table(run.proteins, cfg.model.aa_max_length)))
    train_steps = _compiled_steps(cfg, strategy, training_step(model, optimizer, proteins, strategy))

    manager = tf.train.CheckpointManager(checkpoint, f"{model_dir}/checkpoints", max_to_keep=3)
    best = tf.train.CheckpointManager(checkpoint, f"{model_dir}/best", max_to_keep=1)
    if manager.latest_checkpoint:
        checkpoint.restore(manager.latest_checkpoint)
        log.info("resumed from %s at step %d", manager.latest_checkpoint, int(step_counter))
    resumed_step = int(step_counter.numpy())
    dataset_fn = _dataset_fn(cfg, run, per_replica_batch, resumed_step, uses_coordinator)
    coordinator, iterator = _distributed_iterator(strategy, dataset_fn, uses_coordinator)

    def streams_from(at_step: int) -> Any:
        """Every worker's stream built anew, each skipping its share of ``at_step``, as on a resume."""
        assert coordinator is not None
        return iter(coordinator.create_per_worker_dataset(_dataset_fn(cfg, run, per_replica_batch, at_step, True)))

    validate = validation(model, run, proteins, cfg)
    if validate is not None:
        validate = at_averaged_weights(validate, model, optimizer)
    writer = tf.summary.create_file_writer(f"{model_dir}/tensorboard") if is_chief else None
    if is_chief:
        tf.io.gfile.makedirs(model_dir)

    step = resumed_step
    history = earlier_history(f"{model_dir}/history.json", step) if step else []
    stopping = EarlyStopping(cfg.early_stopping_patience, history)
    window_start, window_step = time.monotonic(), step
    while step < schedule.total_steps and not stopping.stopped:
        target = min(schedule.total_steps, step + schedule.checkpoint_every)
        if coordinator is None:
            step, losses = _run_steps(train_steps, iterator, step, target, cfg.steps_per_execution)
        else:
            step, losses, iterator = _run_closures(
                train_steps, iterator, coordinator, step, target, cfg.steps_per_execution, streams_from
            )
        step_counter.assign(step)
        elapsed = time.monotonic() - window_start
        rate = (step - window_step) * per_replica_batch * max(1, _num_workers(strategy)) / max(elapsed, 1e-9)
        entry = progress_entry(step, schedule.steps_per_epoch, losses, rate, validate, stopping)
        history.append(entry)
        log_progress(entry, schedule.total_steps, rate, validate is not None)
        if writer is not None:
            write_summaries(writer, entry, rate, learning_rate, validate is not None)
            # Rewritten at every checkpoint: the driver follows it to show
            # progress while the chief runs on an executor. Written before
            # the checkpoint: a chief killed in between leaves an entry past
            # the checkpoint, which a resumed run drops (earlier_history),
            # rather than a checkpoint whose entry is missing for good.
            # Replaced whole (tfbs.storage writes atomically): the driver never reads half of it.
            storage.write_text(f"{model_dir}/history.json", json.dumps(history, indent=2))
        # Only the chief writes: under all-reduce every worker holds the same
        # values, and under ps the chief is the only process here.
        if is_chief:
            log.info("checkpoint %s", manager.save(checkpoint_number=step))
            if entry.get("best"):
                best.save(checkpoint_number=step)
            directory.push()
        window_start, window_step = time.monotonic(), step
    if stopping.enabled and best.latest_checkpoint:
        # Export the weights of the best validation auPRC, not the last ones.
        checkpoint.restore(best.latest_checkpoint)
        log.info("stopped at step %d; keeping step %d (valid auPRC %.4f)", step, stopping.best_step, stopping.best)
    # The weights' moving average, if kept, is what was validated and is what is exported.
    optimizer.finalize_variable_values(model.trainable_variables)
    return TrainingResult(steps=step, directory=directory, history=history, model=model)


def _build_model_and_optimizer(
    cfg: TrainConfig, run: TrainingRun, strategy: tf.distribute.Strategy
) -> tuple[TFBSModel, keras.optimizers.Optimizer, keras.optimizers.schedules.LearningRateSchedule]:
    """The model (motif-seeded if the run has seeds) and its built optimizer, made in ``strategy``'s scope.

    Returns
    -------
    tuple
        ``(model, optimizer, learning_rate)``: the optimizer is wrapped in a
        ``LossScaleOptimizer`` under mixed precision; ``learning_rate`` is its schedule.
    """
    with strategy.scope():
        model = run.new_model(cfg, mixed_precision=cfg.mixed_precision)
        if run.motif_seeds is not None:
            seed_filters(model, run.motif_seeds)
        learning_rate = keras.optimizers.schedules.ExponentialDecay(
            cfg.learning_rate, cfg.decay_steps, cfg.decay_rate, staircase=True
        )
        # Fused, locked updates: Keras 3's Adam races between ps workers.
        averaged = {"use_ema": True, "ema_momentum": cfg.weight_average} if cfg.weight_average else {}
        optimizer = LockedAdam(learning_rate, **averaged)
        if cfg.mixed_precision:
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
        optimizer.build(model.trainable_variables)
    return model, optimizer, learning_rate


def _compiled_steps(
    cfg: TrainConfig, strategy: tf.distribute.Strategy, step_fn: Callable[[dict[str, tf.Tensor]], tf.Tensor]
) -> Callable:
    """``train_steps(iterator) -> loss``: ``train.steps_per_execution`` steps of ``step_fn`` in one ``tf.function``.

    Returns the mean loss over replicas of its last step.
    """

    @tf.function
    def train_steps(iterator) -> tf.Tensor:
        loss = tf.constant(0.0)
        for _ in tf.range(cfg.steps_per_execution):
            per_replica = strategy.run(step_fn, args=(next(iterator),))
            loss = strategy.reduce(tf.distribute.ReduceOp.MEAN, per_replica, axis=None)
        return loss

    return train_steps


def _dataset_fn(
    cfg: TrainConfig, run: TrainingRun, per_replica_batch: int, resumed_step: int, uses_coordinator: bool
) -> Callable[..., tf.data.Dataset]:
    """The input function each worker (under ps) or the strategy calls for its training stream.

    Parameters
    ----------
    resumed_step
        The step training resumes at (0 for a fresh run): each stream skips what it already read.
    uses_coordinator
        Whether ``ParameterServerStrategy`` schedules the steps; each worker then reads its share of the files.
    """

    def dataset_fn(input_context: tf.distribute.InputContext | None = None) -> tf.data.Dataset:
        shard = None
        if uses_coordinator:
            # Runs on the worker: its index picks its share of the files.
            worker_index = tf.distribute.coordinator.experimental_get_current_worker_index()
            shard = (cfg.placement.num_workers, worker_index)
        # A resumed run continues each stream where it stopped. Under ps,
        # closures go to whichever worker is free, so each worker is taken
        # to have done an equal share.
        done = resumed_step // cfg.placement.num_workers if uses_coordinator else resumed_step
        return run.dataset(cfg, per_replica_batch, done, input_context=input_context, shard=shard)

    return dataset_fn


def _distributed_iterator(
    strategy: tf.distribute.Strategy, dataset_fn: Callable[..., tf.data.Dataset], uses_coordinator: bool
) -> tuple[tf.distribute.coordinator.ClusterCoordinator | None, Any]:
    """The coordinator (under ps, else None) and an iterator over ``dataset_fn``'s distributed batches."""
    if uses_coordinator:
        coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
        iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))
    else:
        coordinator = None
        iterator = iter(strategy.distribute_datasets_from_function(dataset_fn))
    return coordinator, iterator


def _run_steps(
    train_steps: Callable, iterator: Any, step: int, target: int, steps_per_execution: int
) -> tuple[int, list[float]]:
    """Run ``train_steps`` from ``step`` until ``target`` in this process (all-reduce or one process).

    Returns
    -------
    tuple
        The step reached and the loss of each call.
    """
    pending = []
    while step < target:
        pending.append(train_steps(iterator))
        step += steps_per_execution
    return step, [float(loss) for loss in pending]


def _run_closures(
    train_steps: Callable,
    iterator: Any,
    coordinator: tf.distribute.coordinator.ClusterCoordinator,
    step: int,
    target: int,
    steps_per_execution: int,
    streams_from: Callable[[int], Any],
) -> tuple[int, list[float], Any]:
    """Run ``train_steps`` on the workers from ``step`` until ``target``.

    A worker's stream found ended (:data:`STREAM_REBUILDS`) is not the end
    of training: the steps that ran count, every worker's stream is built
    anew from there, and the steps left are scheduled again. A step cut
    short may have applied some of its ``steps_per_execution`` updates
    uncounted: a few more updates than the schedule's, never fewer.

    Returns
    -------
    tuple
        The step reached, the loss of each closure that ran, and the iterator now in use.
    """
    losses: list[float] = []
    rebuilds = 0
    while step < target:
        pending: list[Any] = []
        ended: tf.errors.OutOfRangeError | None = None
        try:
            while step + len(pending) * steps_per_execution < target:
                pending.append(coordinator.schedule(train_steps, args=(iterator,)))
            coordinator.join()
        except tf.errors.OutOfRangeError as error:
            if rebuilds == STREAM_REBUILDS:
                raise
            rebuilds, ended = rebuilds + 1, error
        for closure in pending:
            try:
                losses.append(float(closure.fetch()))
                step += steps_per_execution
            except (tf.errors.OutOfRangeError, tf.errors.CancelledError):
                if ended is None:
                    raise
        if ended is not None:
            reason = ended.message.splitlines()[0] if ended.message else type(ended).__name__
            log.warning("a worker's stream ended at step %d (%s): every worker's stream built anew", step, reason)
            iterator = streams_from(step)
    return step, losses, iterator


def _num_workers(strategy: tf.distribute.Strategy) -> int:
    """Input pipelines feeding one step (workers under ps, else 1 per step)."""
    if isinstance(strategy, tf.distribute.ParameterServerStrategy):
        return 1  # each closure is one worker's step; steps count all workers
    return strategy.num_replicas_in_sync
