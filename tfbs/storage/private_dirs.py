"""Folders of one user on a shared machine: a node's caches and mirrors, out of other tenants' reach.

Every local cache of a run lives under ``/tmp/tfbs-<user>/`` (records) or
``<tmp>/tfbs-<user>/`` (export copies, model mirrors), created mode 700 and
checked before use: it must be a directory (not a link), owned by this
process's user, open to no one else. The user is the process's uid, never
``$USER``, which anyone may set. A shared parent (``/tmp``: sticky) is
trusted only when root owns it: the owner of a sticky folder may still
replace what is in it.

``<tmp>/tfbs-<user>`` is a predictable name: another user may create it
first. Such a folder (any mode, sticky or not) is never used and does not
stop the run: :func:`user_root` falls back to a folder under the user's
home (:func:`user_cache_home`), which no one else can take. A folder of the
user's own that was loosened is refused with its path: whoever can write in
it could swap a record file or a model between its check and its use.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import os
import pwd
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path

#: Where a run's record copies go on every node: one path on all of them
#: (the chief builds the input graph the workers run), one folder per user,
#: named with a key only that user can compute (:func:`records_cache_location`).
RECORDS_ROOT = "/tmp/tfbs-{user}-{key}/records"
#: The record cache of a user with no home to keep the key's secret in (``nobody``): a name others can take first.
PREDICTABLE_RECORDS_ROOT = "/tmp/tfbs-{user}/records"
#: In ``<home>/.cache/tfbs/node/keys``: the secret the user's unguessable folder names are keyed with.
NAME_KEY_FILE = "name-key"


log = logging.getLogger("tfbs.storage.private_dirs")


def user_name() -> str:
    """This process's user, from its uid (the password database), as the per-user folders name it.

    Never ``$USER`` or ``$LOGNAME``: another user's name there would point
    this process at that user's folders. A uid with no entry (a container's)
    is named by its number.
    """
    uid = os.getuid()
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def user_cache_home() -> Path:
    """``<home>/.cache/tfbs``, the home from the password database (not ``$HOME``): a place only this user owns."""
    try:
        home = pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        home = str(Path.home())
    return Path(home) / ".cache" / "tfbs"


def is_own_file(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a regular file (not a link) of this user that no one else may write, in such a folder.

    What a cache of code or models (a jar, a class archive, an exported
    model) must be before a JVM or TensorFlow loads it: a file another user
    could replace runs that user's code in this user's process.
    """
    file = Path(path)
    try:
        info, folder = file.lstat(), file.parent.lstat()
    except OSError:
        return False
    uid = os.geteuid()
    return (
        stat.S_ISREG(info.st_mode)
        and info.st_uid == uid
        and not info.st_mode & 0o022
        and stat.S_ISDIR(folder.st_mode)
        and folder.st_uid == uid
        and not folder.st_mode & 0o022
    )


#: Root's folders above this user's per-node folders, by (device, inode), noted by :func:`note_root_folders`
#: in this process or the one it was forked from: in a user namespace of a process not run by root (a TF
#: node's private network) root's folders, like every other user's, show as owned by the overflow uid.
_ROOT_FOLDERS: set[tuple[int, int]] = set()


def note_root_folders(locations: Iterable[str]) -> None:
    """Remember which folders above this user's per-node folders are root's, before entering a user namespace.

    The folders above the temporary folder, the user's cache home and
    each of ``locations`` (``{user}`` this process's user; those that
    exist), up to ``/``. Inside the namespace :func:`private_dir` knows
    them by device and inode, which it keeps: a sticky ``/tmp`` is then
    still root's, while another user's folder stays untrusted.
    """
    own = [Path(location.format(user=user_name())) for location in locations]
    for path in [Path(tempfile.gettempdir()), user_cache_home(), *own]:
        for level in [path, *path.parents]:
            with contextlib.suppress(OSError):
                info = level.stat()
                if info.st_uid == 0:
                    _ROOT_FOLDERS.add((info.st_dev, info.st_ino))


def _is_root_s(info: os.stat_result) -> bool:
    return info.st_uid == 0 or (info.st_dev, info.st_ino) in _ROOT_FOLDERS


def private_dir(path: str | os.PathLike[str]) -> Path:
    """``path``, created if missing (each new level mode 700), checked to be this user's alone.

    Root's folders are those root owns, or those :func:`note_root_folders`
    noted before this process entered a user namespace.

    Raises
    ------
    PermissionError
        If ``path`` is a link, not a directory, owned by another user, or
        open to the group or others (a sticky parent counts as shared only
        when root owns it).
    """
    folder = Path(path)
    missing = [level for level in [folder, *folder.parents] if not level.exists()]
    for level in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made meanwhile by another process: checked below
            level.mkdir(mode=0o700)
    # The folder and each parent up to the shared one (/tmp: sticky, root's) must be this user's alone.
    for level in [folder, *folder.parents]:
        info = level.lstat()
        if stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX and _is_root_s(info):
            break
        if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
            raise PermissionError(f"{level}: not a directory of its own (a link or a file); remove it")
        if info.st_uid != os.geteuid():
            raise PermissionError(f"{level}: owned by uid {info.st_uid}, not this user ({os.geteuid()}); remove it")
        if info.st_mode & 0o077:
            raise PermissionError(f"{level}: open to others (mode {stat.S_IMODE(info.st_mode):o}); chmod 700 it")
        if level == folder.parent and (level.name.startswith("tfbs-") or level == user_cache_home() / "node"):
            # The user's own root: what is above it (a home, a scratch disk) is the user's business,
            # but whoever owns the folder it is in could rename it away and put another in its place.
            _check_container(level.parent)
            break
    return folder


def _check_container(folder: Path) -> None:
    """Refuse ``folder`` as the place of a user's root when someone else could replace what is in it.

    This user's or root's, and if others may write in it, sticky (``/tmp``).
    """
    info = folder.stat()
    if not (_is_root_s(info) or info.st_uid == os.geteuid()):
        raise PermissionError(
            f"{folder}: owned by uid {info.st_uid}, who could replace the folders in it; keep the caches elsewhere"
        )
    if info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
        raise PermissionError(
            f"{folder}: anyone may replace the folders in it (mode {stat.S_IMODE(info.st_mode):o}, not sticky)"
        )


def user_key(purpose: str) -> str:
    """16 hex digits no other user can compute: an HMAC of ``purpose`` under this user's secret.

    The secret is 32 random bytes in ``<home>/.cache/tfbs/node/keys/name-key``,
    made once (mode 600, in a folder of mode 700) and refused when anyone
    else could read or replace it. The same user on the same home gets the same
    key every time, so the folder it names is reused run after run.

    Raises
    ------
    PermissionError
        If the secret is not this user's own file, or others may read it.
    """
    secret_file = private_dir(user_cache_home() / "node" / "keys") / NAME_KEY_FILE
    with contextlib.suppress(FileExistsError):  # made before, or meanwhile by another process
        descriptor = os.open(secret_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as out:
            out.write(os.urandom(32))
    if not is_own_file(secret_file) or secret_file.stat().st_mode & 0o077:
        raise PermissionError(f"{secret_file}: not this user's alone (mode 600, owned by this user); remove it")
    return hmac.new(secret_file.read_bytes(), purpose.encode(), hashlib.sha256).hexdigest()[:16]


def records_cache_location(configured: str | None = None) -> str:
    """Where every node of a run keeps its copies of remote record files, chosen once on the driver.

    ``train.placement.record_cache_dir``, or by default :data:`RECORDS_ROOT`
    named with the driver's :func:`user_key`: a name no other user can take
    first, so none can stop the run or feed it records by making the folder
    before it (a predictable ``/tmp/tfbs-<user>`` could be). ``{user}`` is
    left for each node to fill in with its own user (:func:`records_cache`):
    a container may run as another user than the driver.
    """
    if configured is not None:
        return configured
    home = user_cache_home().parent.parent
    if not user_cache_home().is_dir() and not (home.is_dir() and os.access(home, os.W_OK)):
        log.warning(
            "%s: no home to keep a secret in, so the record cache is %s, a name another user could take first "
            "(set train.placement.record_cache_dir to a folder of your own)",
            home,
            PREDICTABLE_RECORDS_ROOT.format(user=user_name()),
        )
        return PREDICTABLE_RECORDS_ROOT
    return RECORDS_ROOT.replace("{key}", user_key("records"))


def records_cache(location: str) -> Path:
    """This node's folder of record copies at ``location`` (:func:`records_cache_location`), ``{user}`` this
    process's user, made and checked."""
    return private_dir(location.format(user=user_name()))


def _taken_by_another(folder: Path) -> bool:
    """True when ``folder`` exists and is not a directory of this user's (a link, a file, another's folder)."""
    try:
        info = folder.lstat()
    except FileNotFoundError:
        return False
    return stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid()


def user_root(temp_dir: str | os.PathLike[str] | None = None) -> Path:
    """This user's root of per-node folders: ``<tmp>/tfbs-<user>``, or ``<home>/.cache/tfbs/node`` when that is taken.

    Neither created nor checked (:func:`private_dir` does both); the same
    answer for every call of a process while nothing changes the folders.

    Parameters
    ----------
    temp_dir
        The shared temporary folder; default :func:`tempfile.gettempdir`.
    """
    predictable = Path(temp_dir or tempfile.gettempdir()) / f"tfbs-{user_name()}"
    if not _taken_by_another(predictable):
        return predictable
    fallback = user_cache_home() / "node"
    log.warning("%s is not this user's (another user made it first): using %s instead", predictable, fallback)
    return fallback


def user_temp_path(kind: str) -> Path:
    """``<tmp>/tfbs-<user>/<kind>`` (see :func:`user_root`), neither created nor checked (:func:`user_temp_dir` does both)."""
    return user_root() / kind


def user_temp_dir(kind: str) -> Path:
    """:func:`user_temp_path`: this user's private folder of ``kind`` (``exports``, ``mirrors``) on this node."""
    return private_dir(user_temp_path(kind))
