"""Folders of one user on a shared machine: a node's caches and mirrors, out of other tenants' reach.

Every local cache of a run lives under ``/tmp/tfbs-<user>/`` (records) or
``<tmp>/tfbs-<user>/`` (export copies, model mirrors), created mode 700 and
checked before use: it must be a directory (not a link), owned by this
process's user, open to no one else. A folder another user made first, or
loosened, is refused with its path, never used: whoever can write in it
could swap a record file or a model between its check and its use.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import stat
import tempfile
from pathlib import Path

#: Where a run's record copies go on every node: one path on all of them
#: (the chief builds the input graph the workers run), one folder per user.
RECORDS_ROOT = "/tmp/tfbs-{user}/records"


def user_name() -> str:
    """This process's user, as the per-user folders name it."""
    return getpass.getuser()


def private_dir(path: str | os.PathLike[str]) -> Path:
    """``path``, created if missing (each new level mode 700), checked to be this user's alone.

    Raises
    ------
    PermissionError
        If ``path`` is a link, not a directory, owned by another user, or
        open to the group or others.
    """
    folder = Path(path)
    missing = [level for level in [folder, *folder.parents] if not level.exists()]
    for level in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made meanwhile by another process: checked below
            level.mkdir(mode=0o700)
    # The folder and each parent up to the shared one (/tmp: sticky) must be this user's alone.
    for level in [folder, *folder.parents]:
        info = level.lstat()
        if stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX:
            break
        if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
            raise PermissionError(f"{level}: not a directory of its own (a link or a file); remove it")
        if info.st_uid != os.geteuid():
            raise PermissionError(f"{level}: owned by uid {info.st_uid}, not this user ({os.geteuid()}); remove it")
        if info.st_mode & 0o077:
            raise PermissionError(f"{level}: open to others (mode {stat.S_IMODE(info.st_mode):o}); chmod 700 it")
        if level == folder.parent and level.name.startswith("tfbs-"):
            break  # the user's own root: what is above it (a home, a scratch disk) is the user's business
    return folder


def records_cache(configured: str | None = None) -> Path:
    """This user's folder of record copies on this node (``train.placement.record_cache_dir``, default :data:`RECORDS_ROOT`)."""
    return private_dir((configured or RECORDS_ROOT).format(user=user_name()))


def user_temp_path(kind: str) -> Path:
    """``<tmp>/tfbs-<user>/<kind>``, neither created nor checked (:func:`user_temp_dir` does both)."""
    return Path(tempfile.gettempdir()) / f"tfbs-{user_name()}" / kind


def user_temp_dir(kind: str) -> Path:
    """:func:`user_temp_path`: this user's private folder of ``kind`` (``exports``, ``mirrors``) on this node."""
    return private_dir(user_temp_path(kind))
