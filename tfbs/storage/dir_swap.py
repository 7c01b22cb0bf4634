"""Putting a whole directory in the place of another, in one step where the file system can.

:func:`tfbs.storage.replace_dir` uses this on file systems with
directories (local, HDFS, and either through the storage gateway); object
stores, which have no rename, copy object by object there instead.

- Local, on Linux: ``renameat2(RENAME_EXCHANGE)`` swaps the two names in one
  step (ext4, xfs, btrfs, tmpfs...), so a reader finds the old directory or
  the new one, whole, at every moment; the old one, now under the staging
  name, is deleted afterwards.
- Elsewhere (HDFS, whose rename cannot replace a non-empty directory, and
  local file systems without the exchange): the old directory is renamed
  aside to a hidden name, the new one renamed in, then the old one deleted.
  Each rename is atomic, so a reader finds the old directory whole, then
  for a moment none, then the new one whole: never one partly deleted, as
  deleting the old one in place would leave it.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
from functools import cache

import pyarrow.fs as pafs

#: ``renameat2`` flag: swap the two names (Linux 3.15+).
_RENAME_EXCHANGE = 2
#: ``renameat2``'s "relative to the working directory" (paths here are absolute anyway).
_AT_FDCWD = -100
#: What ``renameat2`` says when the kernel or the file system cannot exchange.
_NO_EXCHANGE = (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP)


@cache
def _renameat2() -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    """The C library's ``renameat2``, or None (not glibc 2.28+, not Linux)."""
    try:
        return getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    except OSError:
        return None


def exchange(first: str, second: str) -> bool:
    """Swap two existing local paths in one step; False where this system cannot.

    Raises
    ------
    OSError
        For any other failure (a path missing, not the same file system).
    """
    function = _renameat2()
    if function is None:
        return False
    if function(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in _NO_EXCHANGE:
        return False
    raise OSError(code, os.strerror(code), first, None, second)


def swap_in(fs: pafs.FileSystem, staging: str, final: str, aside: str) -> None:
    """Put the directory ``staging`` at ``final`` (same file system), removing what ``final`` held.

    Parameters
    ----------
    fs
        The file system of both paths (one with directories and rename).
    staging
        The fully written directory.
    final
        Its name once in place; may not exist yet.
    aside
        A free hidden sibling name of ``final`` for the old directory, where
        the system cannot exchange the two in one step.
    """
    if fs.get_file_info(final).type == pafs.FileType.NotFound:
        fs.move(staging, final)  # one rename: nothing to replace
        return
    if isinstance(fs, pafs.LocalFileSystem) and exchange(staging, final):
        shutil.rmtree(staging)  # the old directory, now under the staging name
        return
    fs.move(final, aside)
    try:
        fs.move(staging, final)
    except BaseException:
        fs.move(aside, final)  # the old directory back: the staging one stays for a retry
        raise
    fs.delete_dir(aside)
