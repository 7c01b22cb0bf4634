"""What the driver shows of a training it does not run itself.

The chief trains on an executor, whose log the driver's console does not
show: the driver follows the chief's ``history.json`` as it is rewritten at
each checkpoint (:class:`ProgressFollower`), says which checkpoint a run
resumes from, and plots the history when training ends.
"""

from __future__ import annotations

import json
import logging
import threading

from tfbs import storage

log = logging.getLogger("tfbs.train")


class ProgressFollower(threading.Thread):
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


def checkpoint_step(model_uri: str) -> int | None:
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


def log_resume_point(model_uri: str, total_steps: int) -> None:
    """Say in the driver's log whether this run resumes, and from which step.

    The chief restores the checkpoint on an executor, whose log the driver's
    console does not show.
    """
    step = checkpoint_step(model_uri)
    if step:
        log.info("resuming from the checkpoint at step %d of %d (%s/checkpoints)", step, total_steps, model_uri)


def write_history_plot(model_uri: str) -> None:
    """Plot the loss, validation auPRC and throughput history next to ``history.json``."""
    from tf_models.curves_plot import plot_history

    history_uri = f"{model_uri}/history.json"
    if storage.exists(history_uri):
        history = json.loads(storage.read_text(history_uri))
        storage.write_through_local(f"{model_uri}/history.png", lambda path: plot_history(history, path))


def read_history(model_uri: str) -> list[dict]:
    """The chief's training history under ``model_uri`` (empty before its first checkpoint)."""
    history_uri = f"{model_uri}/history.json"
    return json.loads(storage.read_text(history_uri)) if storage.exists(history_uri) else []
