"""Where TensorFlow writes a run's model directory when the run lives on HDFS or a bucket.

TensorFlow 2.21 has no ``hdfs://`` file system (and tensorflow-io, which
had one, stops at TF 2.16). So TensorFlow always works on a local directory:
for a local model URI that is the directory itself; for a remote one
(``hdfs://``, ``gs://``) a local mirror that :meth:`ModelDirectory.pull`
fills from the remote (to resume) and :meth:`ModelDirectory.push` copies
back after each checkpoint, through :mod:`tfbs.uri`. Checkpoint data and
index files go before TensorFlow's ``checkpoint`` state files, so the remote
never names a checkpoint whose files are not there yet.
"""

from __future__ import annotations

import logging
import tempfile
from dataclasses import dataclass, field

from tfbs import uri as storage

log = logging.getLogger("tfbs.train")

#: TensorFlow's checkpoint state files: they name the newest checkpoint.
STATE_FILES = ("checkpoint",)


@dataclass
class ModelDirectory:
    """A model URI and the local directory TensorFlow reads and writes for it."""

    uri: str
    local: str
    _uploaded: dict = field(default_factory=dict, repr=False)

    @property
    def mirrored(self) -> bool:
        """Whether ``local`` is a copy (the model URI is remote)."""
        return storage.is_remote(self.uri)

    def pull(self, subdir: str = "") -> None:
        """Copy what the remote holds (under ``subdir``) into the mirror."""
        if self.mirrored:
            target = f"{self.local}/{subdir}" if subdir else self.local
            source = f"{self.uri}/{subdir}" if subdir else self.uri
            copied = storage.download_tree(source, target)
            if copied:
                log.info("pulled %d files from %s", copied, source)

    def push(self) -> None:
        """Copy new and changed files of the mirror to the remote, state files last."""
        if self.mirrored:
            copied = storage.upload_tree(self.local, self.uri, last=STATE_FILES, uploaded=self._uploaded)
            log.debug("pushed %d files to %s", copied, self.uri)


def model_directory(uri: str) -> ModelDirectory:
    """The model directory of ``uri``: itself if local, else a fresh local mirror."""
    if not storage.is_remote(uri):
        return ModelDirectory(uri, storage.local_path(uri))
    return ModelDirectory(uri, tempfile.mkdtemp(prefix="tfbs-model-"))


def local_export(export_uri: str) -> str:
    """A local path of an exported SavedModel, copied once per process if remote.

    ``tf.saved_model.load`` needs a path TensorFlow can read; Spark tasks
    scoring with a model on HDFS call this first.
    """
    if not storage.is_remote(export_uri):
        return storage.local_path(export_uri)
    cached = _EXPORTS.get(export_uri)
    if cached is None:
        cached = tempfile.mkdtemp(prefix="tfbs-export-")
        storage.download_tree(export_uri, cached)
        _EXPORTS[export_uri] = cached
    return cached


#: Exports already copied into this process: a task of an executor's Python
#: worker reuses the copy of an earlier task.
_EXPORTS: dict[str, str] = {}
