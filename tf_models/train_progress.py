"""What training records at each checkpoint: validation auPRC, early stopping, the history, TensorBoard.

Used by :mod:`tf_models.train_loop`, in the process that drives the loop (the
chief under ps, every worker under all-reduce).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import tensorflow as tf

from tf_models.input_pipeline import make_dataset
from tf_models.model import TFBSModel
from tfbs.config import TrainConfig
from tfbs.formats.metrics import auprc_davis_goadrich

if TYPE_CHECKING:
    from tf_models.training_run import TrainingRun

log = logging.getLogger("tfbs.train")


class EarlyStopping:
    """Tracks validation auPRC across checkpoints, a resumed run's included."""

    def __init__(self, patience: int | None, history: list[dict]) -> None:
        self.enabled = patience is not None
        self.patience = patience
        self.best, self.best_step, self.waited, self.stopped = -1.0, 0, 0, False
        for entry in history:
            if "valid_auprc" in entry:
                self.update(entry["step"], entry["valid_auprc"])

    def update(self, step: int, auprc: float) -> dict:
        """Record one checkpoint's auPRC; returns the history fields to add."""
        if auprc > self.best:
            self.best, self.best_step, self.waited = auprc, step, 0
            return {"best": True}
        self.waited += 1
        self.stopped = self.patience is not None and self.waited >= self.patience
        return {"stopped_early": True} if self.stopped else {}


def validation(model: TFBSModel, run: TrainingRun, proteins: tf.Tensor, cfg: TrainConfig):
    """A function scoring the validation records, or None without any.

    The score is the mean over TF/cells of each one's auPRC, the figure the
    report leads with (DREAM scores each TF/cell on its own). Pooled over
    TF/cells, the auPRC follows the TF with the most or the most confident
    positives: in one run on YARN it stayed flat while FOXA1 went from test
    auPRC 0.36 to 0.64, and early stopping kept the weights of before.

    It runs in the process that drives the loop (the chief under ps, every
    worker under all-reduce, where each computes the same number from the
    same weights and so takes the same stopping decision).
    """
    if not run.valid_files:
        return None

    batch_size = 512
    dataset = make_dataset(run.valid_files, run.layout, batch_size, seed=cfg.seed, training=False)
    dataset = dataset.take(-(-cfg.validation_examples // batch_size))
    logits_of = tf.function(lambda batch: model({**batch, "proteins": proteins}, training=False))

    def validate() -> float:
        labels, scores, groups = [], [], []
        for batch in dataset:
            labels.append(batch["label"].numpy().astype(int))
            scores.append(tf.cast(logits_of(batch), tf.float32).numpy().reshape(-1))
            groups.append(batch["tf_index"].numpy() * run.n_cells + batch["cell_index"].numpy())
        return mean_group_auprc(np.concatenate(labels), np.concatenate(scores), np.concatenate(groups))

    return validate


def mean_group_auprc(labels: np.ndarray, scores: np.ndarray, groups: np.ndarray) -> float:
    """The mean auPRC over ``groups`` holding both classes (0.0 if none does).

    Examples
    --------
    Each group ranks its positive first, so each scores 1.0, though the
    second group's positive scores below the first's negative; the third
    group has no positive and is left out:

    >>> import numpy as np
    >>> labels = np.array([1, 0, 1, 0, 0, 0])
    >>> scores = np.array([0.9, 0.8, 0.3, 0.1, 0.5, 0.5])
    >>> mean_group_auprc(labels, scores, np.array([0, 0, 1, 1, 2, 2]))
    1.0
    """
    values = []
    for group in np.unique(groups):
        picked = groups == group
        if 0 < labels[picked].sum() < picked.sum():
            values.append(auprc_davis_goadrich(labels[picked], scores[picked]))
    return float(np.mean(values)) if values else 0.0


def earlier_history(history_path: str, step: int) -> list[dict]:
    """The history of the run being resumed, up to its checkpoint."""
    if not tf.io.gfile.exists(history_path):
        return []
    with tf.io.gfile.GFile(history_path) as handle:
        return [entry for entry in json.loads(handle.read()) if entry["step"] <= step]


def progress_entry(
    step: int,
    steps_per_epoch: int,
    losses: list[float],
    rate: float,
    validate: Callable[[], float] | None,
    stopping: EarlyStopping,
) -> dict:
    """The history entry of the checkpoint at ``step``: epoch, mean loss, speed, validation auPRC if any.

    Scoring the validation records also updates ``stopping``, whose fields
    (``best``, ``stopped_early``) join the entry.
    """
    entry = {
        "step": step,
        "epoch": round(step / steps_per_epoch, 3),
        "loss": sum(losses) / len(losses),
        "examples_per_s": rate,
    }
    if validate is not None:
        entry["valid_auprc"] = validate()
        entry.update(stopping.update(step, entry["valid_auprc"]))
    return entry


def log_progress(entry: dict, total_steps: int, rate: float, validated: bool) -> None:
    """Log one checkpoint's history entry."""
    log.info(
        "step %d/%d (epoch %.2f) loss %.4f %.0f examples/s%s",
        entry["step"],
        total_steps,
        entry["epoch"],
        entry["loss"],
        rate,
        f" valid auPRC {entry['valid_auprc']:.4f}" if validated else "",
    )


def write_summaries(
    writer: tf.summary.SummaryWriter,
    entry: dict,
    rate: float,
    learning_rate: Callable[[int], tf.Tensor],
    validated: bool,
) -> None:
    """Write one checkpoint's loss, validation auPRC, speed and learning rate as TensorBoard scalars."""
    step = entry["step"]
    with writer.as_default(step=step):
        tf.summary.scalar("loss", entry["loss"])
        if validated:
            tf.summary.scalar("valid_auprc", entry["valid_auprc"])
        tf.summary.scalar("examples_per_second", rate)
        tf.summary.scalar("learning_rate", learning_rate(step))
    writer.flush()
