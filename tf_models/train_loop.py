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

import dataclasses
import hashlib
import json
import logging
import math
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import keras
import numpy as np
import tensorflow as tf
from blake3 import blake3

from tf_models.encoding import protein_one_hot
from tf_models.input_pipeline import make_dataset, positives_per_batch
from tf_models.model import TFBSModel, build_model
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
from tfbs import storage
from tfbs.config import ModelConfig, TrainConfig
from tfbs.errors import BadInputError
from tfbs.manifest import Manifest
from tfbs.proteins import protein_table
from tfbs.records import RecordLayout
from tfbs.storage import HASH_BLOCK_BYTES, blake3_of

log = logging.getLogger("tfbs.train")


def batches_per_step(cfg: TrainConfig) -> int:
    """Input pipelines that each give a batch to one training step.

    Under ps a step is one worker's batch (workers take steps in turn);
    under all-reduce every replica (the chief and each worker) gives a
    share of the step's batch.
    """
    placement = cfg.placement
    return placement.num_workers + 1 if placement.strategy == "multi_worker_mirrored" else 1


def pipeline_batch_size(cfg: TrainConfig) -> int:
    """Examples one input pipeline gives a step, so that every strategy takes
    ``train.batch_size`` examples per step: the same steps, learning rate and
    schedule for the same examples.

    Examples
    --------
    >>> from tfbs.config import PlacementConfig, TrainConfig
    >>> all_reduce = PlacementConfig(strategy="multi_worker_mirrored", num_workers=2)
    >>> pipeline_batch_size(TrainConfig(batch_size=64)), pipeline_batch_size(
    ...     TrainConfig(batch_size=64, placement=all_reduce))
    (64, 21)
    """
    return max(2, round(cfg.batch_size / batches_per_step(cfg)))


@dataclass(frozen=True)
class Schedule:
    """How long training runs, in steps, whole closures of ``steps_per_execution``."""

    steps_per_epoch: int
    total_steps: int
    checkpoint_every: int


def _whole_closures(steps: int, steps_per_execution: int) -> int:
    return steps_per_execution * math.ceil(steps / steps_per_execution)


@dataclass
class TrainingRun:
    """What the loop needs besides the configuration, taken from the manifest."""

    positive_files: list[str]
    negative_files: list[list[str]]  # one list per negative draw
    valid_files: list[str]  # validation positives and the first negative draw
    natural_positive_fraction: float
    layout: RecordLayout
    proteins: list[str]
    n_cells: int
    n_positive: int
    has_dnase: bool = True
    #: BLAKE3 of each record file, by URI, from the manifest: what a node's copy must hold.
    checksums: dict[str, str] = field(default_factory=dict)
    #: Known motifs the first filters start as (tf_models.distributed.known_motif_seeds), or None.
    motif_seeds: tuple[np.ndarray, np.ndarray] | None = None

    @classmethod
    def from_manifest(cls, manifest: Manifest) -> TrainingRun:
        """What the loop reads from the shard manifest."""
        train, valid = manifest.records["train"], manifest.records["valid"]
        positives = [f.path for f in train.positives]
        negatives = [[f.path for f in files] for files in train.negatives]
        if not positives or not all(negatives):
            raise ValueError("the manifest lists no training positives, or a negative draw without files")
        n_positive = sum(f.rows for f in train.positives)
        n_negative = sum(f.rows for files in train.negatives for f in files) / len(negatives)
        entries = [f for split in (train, valid) for f in (*split.positives, *(f for d in split.negatives for f in d))]
        return cls(
            positive_files=positives,
            negative_files=negatives,
            valid_files=[f.path for f in valid.positives + (valid.negatives or [[]])[0]],
            natural_positive_fraction=n_positive / (n_positive + n_negative),
            layout=RecordLayout(manifest.window),
            proteins=[manifest.proteins[tf] for tf in manifest.tfs],
            n_cells=len(manifest.cells),
            n_positive=n_positive,
            has_dnase=manifest.dnase,
            checksums={f.path: f.blake3 for f in entries},
        )

    def readable_by_tensorflow(self, cache_dir: str, download: tuple[str, ...] = ()) -> TrainingRun:
        """This run with record files TensorFlow can open, copying remote ones.

        TensorFlow 2.21 reads no ``hdfs://``, and under ps the input graph
        runs on the workers, so remote record files are read from local
        copies under ``cache_dir``: the same path on every node, because the
        chief builds the graph the workers run. Each node copies only what it
        reads (``download``: ``"train"`` on workers, ``"valid"`` on the
        chief).

        Copies go to ``<cache_dir>/<shards>/<content>/``, where ``<content>``
        digests every record file's URI and BLAKE3 from the manifest, so
        shards rebuilt at the same URI get a folder of their own; once they
        are in place, this node's folders of other contents of the same
        shards are removed. A copy
        already there is used only if its BLAKE3 is the manifest's; anything
        else is fetched again, under a temporary name then renamed, so a
        half-fetched file is never read.

        Raises
        ------
        BadInputError
            A fetched file's BLAKE3 is not the manifest's: the shards were
            rebuilt after this manifest was read, and training them against
            it would mix two builds.
        """
        files = [*self.positive_files, *(f for files in self.negative_files for f in files), *self.valid_files]
        content = _short_digest(json.dumps(sorted((uri, self.checksums.get(uri)) for uri in files)))

        def shards_folder(uri: str) -> str:
            return f"{cache_dir}/{_short_digest(uri.partition('/records/')[0])}"

        def local(uri: str) -> str:
            if not storage.is_remote(uri):
                return uri
            return f"{shards_folder(uri)}/{content}/{uri.partition('/records/')[2]}"

        wanted = {
            "train": [*self.positive_files, *(f for files in self.negative_files for f in files)],
            "valid": self.valid_files,
        }
        remote = [uri for split in download for uri in wanted[split] if storage.is_remote(uri)]
        if remote:
            started = time.monotonic()
            fetched = sum(_verified_copy(uri, Path(local(uri)), self.checksums.get(uri)) for uri in remote)
            # Only once this content is in place: a run of a stale manifest fails above, leaving the copies alone.
            for folder in sorted({shards_folder(uri) for uri in remote}):
                _remove_other_contents(Path(folder), keep=content)
            log.info(
                "record files under %s/%s: %d fetched, %d cached copies verified, in %.1f s",
                cache_dir,
                content,
                fetched,
                len(remote) - fetched,
                time.monotonic() - started,
            )
        return dataclasses.replace(
            self,
            positive_files=[local(f) for f in self.positive_files],
            negative_files=[[local(f) for f in files] for files in self.negative_files],
            valid_files=[local(f) for f in self.valid_files],
        )

    def model_config(self, cfg: TrainConfig) -> ModelConfig:
        """The model section, its DNase input switched off when the shards have no DNase."""
        return cfg.model if self.has_dnase else cfg.model.model_copy(update={"use_dnase": False})

    def positive_fraction(self, cfg: TrainConfig) -> float:
        """Share of positives per batch: configured, or as preprocessing drew them."""
        return cfg.positive_fraction or self.natural_positive_fraction

    def schedule(self, cfg: TrainConfig) -> Schedule:
        """Steps per epoch (one pass over the positives), in all, and between checkpoints.

        Examples
        --------
        >>> from tfbs.config import TrainConfig
        >>> run = TrainingRun([], [], [], 0.25, RecordLayout(1000), [], 1, n_positive=1000)
        >>> run.schedule(TrainConfig(batch_size=64, epochs=3, steps_per_execution=20))
        Schedule(steps_per_epoch=80, total_steps=240, checkpoint_every=80)
        """
        per_step = positives_per_batch(self.positive_fraction(cfg), pipeline_batch_size(cfg)) * batches_per_step(cfg)
        per_epoch = _whole_closures(math.ceil(self.n_positive / per_step), cfg.steps_per_execution)
        total = _whole_closures(cfg.steps or cfg.epochs * per_epoch, cfg.steps_per_execution)
        return Schedule(per_epoch, total, cfg.checkpoint_every_steps or per_epoch)

    def dataset(self, cfg: TrainConfig, batch_size: int, skip_batches: int = 0, **sharding) -> tf.data.Dataset:
        """The training stream: positives repeated, negatives redrawn per epoch."""
        return make_dataset(
            self.positive_files,
            self.layout,
            batch_size,
            seed=cfg.seed,
            shuffle_buffer=cfg.shuffle_buffer,
            negatives=self.negative_files,
            positive_fraction=self.positive_fraction(cfg),
            skip_batches=skip_batches,
            **sharding,
        )


def _short_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _remove_other_contents(shards_folder: Path, keep: str) -> None:
    """Remove this node's copies of other builds of the same shards: they can never be read again."""
    if shards_folder.is_dir():
        for child in shards_folder.iterdir():
            if child.name == keep:
                continue
            if child.is_dir():
                shutil.rmtree(child, ignore_errors=True)
            else:
                child.unlink(missing_ok=True)


def _verified_copy(uri: str, target: Path, checksum: str | None) -> bool:
    """Make ``target`` a copy of ``uri`` whose BLAKE3 is ``checksum``; returns whether it was fetched.

    A copy already at ``target`` is kept only if its bytes hash to
    ``checksum`` (without one, it is always fetched again).

    Raises
    ------
    BadInputError
        If the bytes fetched do not hash to ``checksum``.
    """
    if checksum is not None and target.is_file() and blake3_of(str(target))[0] == checksum:
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    # A name of this call's own: processes of one node may fetch the same file at once.
    partial = target.with_name(f"{target.name}.part-{uuid.uuid4().hex[:12]}")
    digest = blake3()
    try:
        with storage.open_input(uri, compression=None) as stream, open(partial, "wb") as out:
            while chunk := stream.read(HASH_BLOCK_BYTES):
                digest.update(chunk)
                out.write(chunk)
        if checksum is not None and digest.hexdigest() != checksum:
            raise BadInputError(
                uri,
                0,
                f"BLAKE3 {digest.hexdigest()[:16]}... is not the manifest's {checksum[:16]}...: "
                "the shards were rebuilt after this manifest was read; train again",
            )
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)
    return True


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
    model = build_model(run.model_config(cfg), run.n_cells, run.layout.window)
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
    validate = validation(model, run, proteins, cfg)
    writer = tf.summary.create_file_writer(f"{model_dir}/tensorboard") if is_chief else None
    if is_chief:
        tf.io.gfile.makedirs(model_dir)

    step = resumed_step
    history = earlier_history(f"{model_dir}/history.json", step) if step else []
    stopping = EarlyStopping(cfg.early_stopping_patience, history)
    window_start, window_step = time.monotonic(), step
    while step < schedule.total_steps and not stopping.stopped:
        target = min(schedule.total_steps, step + schedule.checkpoint_every)
        step, losses = _run_closures(train_steps, iterator, coordinator, step, target, cfg.steps_per_execution)
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
        model = build_model(run.model_config(cfg), run.n_cells, run.layout.window, mixed_precision=cfg.mixed_precision)
        if run.motif_seeds is not None:
            seed_filters(model, run.motif_seeds)
        learning_rate = keras.optimizers.schedules.ExponentialDecay(
            cfg.learning_rate, cfg.decay_steps, cfg.decay_rate, staircase=True
        )
        # Fused, locked updates: Keras 3's Adam races between ps workers.
        optimizer = LockedAdam(learning_rate)
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


def _run_closures(
    train_steps: Callable,
    iterator: Any,
    coordinator: tf.distribute.coordinator.ClusterCoordinator | None,
    step: int,
    target: int,
    steps_per_execution: int,
) -> tuple[int, list[float]]:
    """Run ``train_steps`` from ``step`` until ``target`` (on the workers when there is a coordinator).

    Returns
    -------
    tuple
        The step reached and the loss of each closure.
    """
    pending = []
    while step < target:
        if coordinator is not None:
            pending.append(coordinator.schedule(train_steps, args=(iterator,)))
        else:
            pending.append(train_steps(iterator))
        step += steps_per_execution
    if coordinator is not None:
        coordinator.join()
        losses = [float(p.fetch()) for p in pending]
    else:
        losses = [float(p) for p in pending]
    return step, losses


def _num_workers(strategy: tf.distribute.Strategy) -> int:
    """Input pipelines feeding one step (workers under ps, else 1 per step)."""
    if isinstance(strategy, tf.distribute.ParameterServerStrategy):
        return 1  # each closure is one worker's step; steps count all workers
    return strategy.num_replicas_in_sync
