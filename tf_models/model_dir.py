"""Where TensorFlow writes a run's model directory when the run lives on HDFS or a bucket.

TensorFlow 2.21 has no ``hdfs://`` file system (and tensorflow-io, which
had one, stops at TF 2.16). So TensorFlow always works on a local directory:
for a local model URI that is the directory itself; for a remote one
(``hdfs://``, ``gs://``) a temporary local mirror that
:meth:`ModelDirectory.pull` fills from the remote (to resume) and
:meth:`ModelDirectory.push` copies back after each checkpoint, through
:mod:`tfbs.storage`, and that :meth:`ModelDirectory.close` removes.

The remote follows the mirror's checkpoint folders exactly: checkpoint data
and index files go first, then TensorFlow's ``checkpoint`` state file
(each replaced whole), then the checkpoints ``CheckpointManager`` let go
(``max_to_keep``) are removed. So the remote never names a checkpoint
whose files are not there, and holds no more checkpoints than the mirror.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import pyarrow.fs as pafs

from tfbs import storage
from tfbs.lineage import DamagedExportError
from tfbs.storage import owned_dirs
from tfbs.storage.content_keys import DIGESTS_NAME, content_key, unlike_record
from tfbs.storage.private_dirs import user_temp_dir

log = logging.getLogger("tfbs.train")

#: TensorFlow's checkpoint state files: they name the newest checkpoint.
STATE_FILES = ("checkpoint",)
#: Temporary mirrors are made under ``<tmp>/tfbs-<user>/mirrors`` with this prefix.
MIRROR_PREFIX = "tfbs-model-"
#: Copies of remote exports, shared by a user's processes on a node: ``<tmp>/tfbs-<user>/exports``.
EXPORT_CACHE = "exports"


@dataclass
class ModelDirectory:
    """A model URI and the local directory TensorFlow reads and writes for it.

    A context manager: leaving the ``with`` block calls :meth:`close`.

    Attributes
    ----------
    uri
        The model directory (``file://``, ``hdfs://``, ``gs://``).
    local
        Where TensorFlow works: the directory itself when ``uri`` is local,
        else a mirror.
    temporary
        Whether ``local`` is a temporary mirror that :meth:`close` removes
        (also removed when the object is garbage-collected or the
        interpreter exits, should nobody call :meth:`close`). The mirror is
        claimed meanwhile (:func:`tfbs.storage.owned_dirs.claim`): should this
        process be killed, the next :func:`model_directory` of the user on
        this node removes it.
    """

    uri: str
    local: str
    temporary: bool = False
    _uploaded: dict = field(default_factory=dict, repr=False)
    _cleanup: weakref.finalize | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.temporary:
            self._cleanup = weakref.finalize(self, _remove_mirror, self.local, owned_dirs.claim(self.local))

    @property
    def mirrored(self) -> bool:
        """Whether ``local`` is a copy (not the model directory itself)."""
        if storage.is_remote(self.uri):
            return True
        return os.path.realpath(storage.local_path(self.uri)) != os.path.realpath(self.local)

    def pull(self, subdir: str = "") -> None:
        """Copy what the remote holds (under ``subdir``) into the (fresh) mirror.

        What the mirror then holds counts as on the remote: :meth:`push`
        uploads only what changes afterwards.
        """
        if self.mirrored:
            target = f"{self.local}/{subdir}" if subdir else self.local
            source = f"{self.uri}/{subdir}" if subdir else self.uri
            copied = storage.download_tree(source, target)
            if copied:
                log.info("pulled %d files from %s", copied, source)
            # What came from the remote need not go back: a resumed run would
            # otherwise upload every checkpoint it pulled at its first push.
            for path in Path(target).rglob("*"):
                if path.is_file() and str(path) not in self._uploaded:
                    info = path.stat()
                    self._uploaded[str(path)] = (info.st_size, info.st_mtime_ns)

    def push(self) -> None:
        """Make the remote match the mirror: new and changed files, state files last, then deletions.

        Deletions are mirrored only in checkpoint folders (sub-folders of
        the mirror holding a state file), whose files belong to TensorFlow's
        ``CheckpointManager``; what others write next to them in the model
        directory (markers, plots, node files) is left alone.
        """
        if not self.mirrored:
            return
        copied = storage.upload_tree(self.local, self.uri, last=STATE_FILES, uploaded=self._uploaded)
        removed = sum(self._remove_dropped(folder) for folder in self._checkpoint_folders())
        log.debug("pushed %d files to %s, removed %d", copied, self.uri, removed)

    def _checkpoint_folders(self) -> list[Path]:
        root = Path(self.local)
        states = (state for name in STATE_FILES for state in root.rglob(name) if state.is_file())
        return sorted({state.parent for state in states if state.parent != root})

    def _remove_dropped(self, folder: Path) -> int:
        """Remove remote files directly in ``folder`` that the mirror no longer has; returns how many."""
        remote = f"{self.uri.rstrip('/')}/{folder.relative_to(self.local).as_posix()}"
        if not storage.exists(remote):
            return 0
        removed = 0
        for uri in storage.list_files(remote):
            name = uri[len(remote) + 1 :]
            if "/" in name or (folder / name).exists():
                continue
            removed += storage.delete_file(uri)
            self._uploaded.pop(str(folder / name), None)
        return removed

    def close(self) -> None:
        """Remove the temporary mirror (it does not push: call :meth:`push` first).

        Idempotent, and a no-op when TensorFlow works on the model directory
        itself. The mirror may be filled again afterwards (the export step
        writes under ``local``): it is then removed again when this object
        goes away or the interpreter exits.
        """
        if self.temporary:
            shutil.rmtree(self.local, ignore_errors=True)

    def __enter__(self) -> ModelDirectory:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()


def _remove_mirror(local: str, claim: int) -> None:
    shutil.rmtree(local, ignore_errors=True)
    owned_dirs.release(claim)


def model_directory(uri: str) -> ModelDirectory:
    """The model directory of ``uri``: itself if local, else a fresh temporary mirror (close it when done).

    Mirrors that processes killed on this node left are removed first
    (:func:`tfbs.storage.owned_dirs.sweep`).
    """
    if not storage.is_remote(uri):
        return ModelDirectory(uri, storage.local_path(uri))
    mirrors = user_temp_dir("mirrors")
    for stale in owned_dirs.sweep(mirrors, lambda name: name.startswith(MIRROR_PREFIX)):
        log.info("removed %s, the model mirror of a process that is gone", stale)
    return ModelDirectory(uri, tempfile.mkdtemp(prefix=MIRROR_PREFIX, dir=mirrors), temporary=True)


def local_export(export_uri: str) -> str:
    """A local path of an exported SavedModel, copied once per node and version if remote.

    ``tf.saved_model.load`` needs a path TensorFlow can read; Spark tasks
    scoring with a model on HDFS call this first. Spark's Python workers end
    with ``os._exit`` (no ``atexit``), so rather than a copy per process that
    nobody removes, the processes of a node share one copy per export and
    version under :func:`export_cache`: named by the export's URI and a
    digest of its files' contents (:func:`_export_version`: a model
    retrained at the same URI gets a new copy and the old one is removed),
    installed by a rename so a process never loads a half-copied model.
    """
    if not storage.is_remote(export_uri):
        return storage.local_path(export_uri)
    cache = export_cache()
    for stale in owned_dirs.sweep(cache, storage.is_temporary):
        log.info("removed %s, an export copy a process that is gone left unfinished", stale)
    name = _digest(export_uri.rstrip("/").encode())
    copy = cache / f"{name}-{_export_version(export_uri)}"
    if copy.is_dir() and (copy / DIGESTS_NAME).is_file() and unlike_record(pafs.LocalFileSystem(), str(copy)):
        # A copy damaged since it was installed (a full disk, a stray write) is fetched again, not loaded.
        log.warning("%s: damaged since it was copied from %s; copying it again", copy, export_uri)
        shutil.rmtree(copy, ignore_errors=True)
    if not copy.is_dir():
        _install(export_uri, copy)
        _remove_other_versions(cache, name, keep=copy)
    return str(copy)


def export_cache() -> Path:
    """This user's directory of export copies on this node, ``<tmp>/tfbs-<user>/exports`` (mode 700).

    Raises
    ------
    PermissionError
        If the directory exists but is not this user's alone: a model loaded
        from it would run whatever graph another user put there.
    """
    return user_temp_dir(EXPORT_CACHE)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _export_version(export_uri: str) -> str:
    """A digest of the export's file names and content keys (:mod:`tfbs.storage.content_keys`).

    Sizes say nothing: a model retrained at the same URI has files of the
    same sizes. The keys come from the export's record of its own files
    (:data:`~tfbs.storage.content_keys.DIGESTS_NAME`, written at export) where it
    has one, so only that file is read; files it does not name are keyed
    by the store's checksum (GCS's MD5) or, without one, by their bytes.
    """
    base = export_uri.rstrip("/") + "/"
    names = [uri[len(base) :] for uri in storage.list_files(export_uri)]
    recorded = json.loads(storage.read_text(base + DIGESTS_NAME)) if DIGESTS_NAME in names else {}
    listing = [(name, recorded.get(name) or content_key(*storage.filesystem(base + name))) for name in names]
    return _digest(json.dumps(listing).encode())


def _install(export_uri: str, copy: Path) -> None:
    """Download the export next to ``copy`` under a temporary name, check it, and rename it into place.

    Raises
    ------
    DamagedExportError
        If a file copied is missing or not the one the export's record
        names: the export was rewritten while it was being copied (try
        again), or is damaged (train again). One line naming the file.
    """
    copy.parent.mkdir(parents=True, exist_ok=True)
    partial = copy.with_name(storage.temporary_name(copy.name))
    partial.mkdir()
    # Claimed while it fills: another process's sweep (owned_dirs.sweep) leaves it alone.
    claim = owned_dirs.claim(partial)
    try:
        if not storage.download_tree(export_uri, partial):
            raise FileNotFoundError(f"{export_uri}: no exported model there")
        _check_recorded(export_uri, partial)
        os.rename(partial, copy)
    except (OSError, DamagedExportError):
        shutil.rmtree(partial, ignore_errors=True)
        if not copy.is_dir():  # else another process installed the same version first
            raise
    finally:
        owned_dirs.release(claim)


def _check_recorded(export_uri: str, copy: Path) -> None:
    """Raise DamagedExportError if a file of ``copy`` is not what the export's record (if any) says it holds."""
    if not (copy / DIGESTS_NAME).is_file():
        return
    found = unlike_record(pafs.LocalFileSystem(), str(copy))
    if found is not None:
        name, reason = found
        raise DamagedExportError(
            f"{export_uri.rstrip('/')}/{name}: {reason} (the export changed while it was copied: run again;"
            " or it is damaged: run `tfbs train`, which trains and exports it again)"
        )


def _remove_other_versions(cache: Path, name: str, keep: Path) -> None:
    """Remove older copies of the same export (unfinished ones are :func:`tfbs.storage.owned_dirs.sweep`'s)."""
    for other in cache.iterdir():
        if other != keep and other.name.startswith(f"{name}-"):
            shutil.rmtree(other, ignore_errors=True)
