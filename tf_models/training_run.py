"""What one training run reads and how long it runs: the record files, their checks and the schedule.

:class:`TrainingRun` is taken from the shard manifest; :func:`pipeline_batch_size`
and :class:`Schedule` make every strategy take ``train.batch_size`` examples a
step, for the same schedule. Used by :mod:`tf_models.train_loop` and, for
validation, :mod:`tf_models.train_progress`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import tensorflow as tf
from blake3 import blake3

from tf_models.input_pipeline import make_dataset, positives_per_batch
from tfbs import storage
from tfbs.config import ModelConfig, TrainConfig
from tfbs.errors import BadInputError
from tfbs.formats.manifest import Manifest
from tfbs.formats.records import RecordLayout
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
    #: Known motifs the first filters start as (tf_models.node_inputs.known_motif_seeds), or None.
    motif_seeds: tuple[np.ndarray, np.ndarray] | None = None
    #: (n_cells, n_genes) log2(1 + TPM) by ``cell_index`` (tf_models.train.cell_expression_table), or None.
    cell_features: np.ndarray | None = None

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
        half-fetched file is never read; those a killed run left are swept
        (:func:`tfbs.storage.remove_leftovers`).

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
            # Half-fetched files of this node's killed runs (a live fetch is younger than the sweep's age).
            storage.remove_leftovers(storage.to_uri(cache_dir))
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

    def new_model(self, cfg: TrainConfig, mixed_precision: bool = False):
        """A new model of this run (:func:`tf_models.model.build_model`), with its expression table."""
        from tf_models.model import build_model

        return build_model(
            self.model_config(cfg),
            self.n_cells,
            self.layout.window,
            mixed_precision=mixed_precision,
            cell_features=self.cell_features,
        )

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
            shuffle_labels=cfg.shuffle_labels,
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
    partial = target.with_name(storage.temporary_name(target.name))
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
