"""Local folders a process works in, claimed while it lives, and swept once it is gone.

A model mirror, or an export copy being filled, under ``<tmp>/tfbs-<user>/``
is removed by its process when done; a process killed with SIGKILL (an
executor YARN preempted, a node the OOM killer chose) cannot. The next run
of the same user on the node sweeps what such processes left.

Whether the owner is gone is asked of the kernel, not of process ids: the
owner holds an exclusive ``flock`` on the folder itself while it uses it
(:func:`claim`), which the kernel drops when the process ends, however it
ends. A sweeper that can take the lock knows nobody holds it. Process ids
would mislead: they are reused, and a pid from another pid namespace (a
container) names another process or none. The lock is on the folder, not
on a file in it, so nothing extra is uploaded from a mirror.

A folder is swept only if it is also older than ``stale_after`` (last
modified): that covers the moment between creating a folder and claiming
it, and folders made by versions that claimed none.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

#: An unclaimed folder untouched for this long was left by a process that is gone.
STALE_AFTER = timedelta(hours=1)


def claim(folder: str | os.PathLike[str]) -> int:
    """Lock ``folder`` for this process's use; returns the descriptor to keep open (:func:`release`).

    The descriptor is not inherited by programs this process starts
    (Python's descriptors are close-on-exec), only by its forks, which then
    keep the folder claimed while they live.

    Raises
    ------
    BlockingIOError
        If another process holds it.
    """
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise
    return fd


def release(fd: int) -> None:
    """Give up a claim (idempotent in effect: a closed descriptor is ignored)."""
    with contextlib.suppress(OSError):
        os.close(fd)


def sweep(parent: Path, selects: Callable[[str], bool], stale_after: timedelta = STALE_AFTER) -> list[Path]:
    """Remove the folders in ``parent`` whose name ``selects`` and that nobody claims, if stale.

    Parameters
    ----------
    parent
        A private folder of this user (:func:`tfbs.storage.private_dirs.user_temp_dir`).
    selects
        Which names to consider (a mirror's prefix, a temporary name).
    stale_after
        Folders modified more recently stay even when unclaimed.

    Returns
    -------
    list of Path
        The folders removed.
    """
    cutoff = time.time() - stale_after.total_seconds()
    removed = []
    for folder in sorted(parent.iterdir()):
        if not selects(folder.name) or folder.is_symlink() or not folder.is_dir():
            continue
        with contextlib.suppress(FileNotFoundError):  # removed meanwhile by another sweep
            if folder.stat().st_mtime < cutoff and _remove_unclaimed(folder):
                removed.append(folder)
    return removed


def _remove_unclaimed(folder: Path) -> bool:
    """Remove ``folder`` if no process claims it, holding the claim meanwhile; returns whether it did."""
    try:
        fd = claim(folder)
    except BlockingIOError:
        return False
    try:
        shutil.rmtree(folder, ignore_errors=True)
    finally:
        release(fd)
    return not folder.exists()
