"""The Unix users a secure cluster's Hadoop daemons run as, and the files each may read.

Standard library only. Each Hadoop daemon runs as a user of its own
(:attr:`host_daemons.Role.unix_user`: ``tfbs-nn``, ``tfbs-dn``, ``tfbs-rm``,
``tfbs-nm``), all in :data:`SERVICE_GROUP`, each with a home under
``/var/lib``. They are made once on this machine (``groupadd`` and
``useradd``, as root) and reused after. A daemon starts as its user through
``setpriv``, after ``ip netns exec`` put it on its host (only root may
enter a namespace).

What each daemon reads or writes is given to it by :func:`give`: its
keytab and key store (600, its own), its folders of data (its own), the
host's configuration (640, the group's). Every folder above them must be
searchable by others (:func:`check_searchable`): a work dir under a
mode-700 home is not, and starting there fails naming the folder.
"""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import stat
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from jvm import ClusterError

#: The group of the service users: it reads each host's configuration (which names the key stores' password).
SERVICE_GROUP = "tfbs-hadoop"
#: Where the service users' homes are made (``<here>/<user>``): what a container of YARN's user has as ``$HOME``.
HOMES = Path("/var/lib")


@dataclass(frozen=True)
class ServiceUser:
    """A daemon's Unix user: name, ids and home."""

    name: str
    uid: int
    gid: int
    home: Path


def ensure_service_users(names: Sequence[str]) -> dict[str, ServiceUser]:
    """The users ``names`` in :data:`SERVICE_GROUP`, made (system users, a home each, no login shell) if missing.

    Raises
    ------
    ClusterError
        If ``groupadd`` or ``useradd`` is missing or fails (with its message).
    """
    try:
        grp.getgrnam(SERVICE_GROUP)
    except KeyError:
        _run(["groupadd", "--system", SERVICE_GROUP])
    for name in names:
        try:
            pwd.getpwnam(name)
        except KeyError:
            _run(["useradd", "--system", "--gid", SERVICE_GROUP, "--home-dir", str(HOMES / name), "--create-home",
                  "--shell", "/usr/sbin/nologin", "--comment", "tfbs-spark hosts' Hadoop daemons", name])  # fmt: skip
    return {name: service_user(name) for name in names}


def service_user(name: str) -> ServiceUser:
    """The service user ``name`` as the password database has it.

    Raises
    ------
    ClusterError
        If there is no such user (:func:`ensure_service_users` makes them).
    """
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        raise ClusterError(f"no Unix user {name}: a secure cluster's start makes it (as root)") from None
    return ServiceUser(name, entry.pw_uid, entry.pw_gid, Path(entry.pw_dir))


def run_as(user: ServiceUser, argv: Sequence[str]) -> list[str]:
    """``argv`` as ``user``: its uid, its group and its supplementary groups, no capability kept."""
    return ["setpriv", f"--reuid={user.uid}", f"--regid={user.gid}", "--init-groups", "--inh-caps=-all", "--",
            *argv]  # fmt: skip


def give(path: Path, user: ServiceUser | None, mode: int, *, group: bool = False) -> None:
    """Make ``path`` ``user``'s (None: stays this process's) with ``mode``; ``group``: owned by the service group.

    The mode is set before the owner changes, so the file is never
    readable by more than it will be.
    """
    os.chmod(path, mode)
    gid = grp.getgrnam(SERVICE_GROUP).gr_gid if group else -1
    os.chown(path, user.uid if user is not None else -1, gid)


def check_searchable(folder: Path) -> None:
    """Raise unless every folder above ``folder`` lets others through (``o+x``): the daemons' users reach it.

    Raises
    ------
    ClusterError
        Naming the first folder that does not, and its mode.
    """
    for parent in reversed(folder.resolve().parents):
        mode = parent.stat().st_mode
        if not mode & stat.S_IXOTH:
            raise ClusterError(
                f"the secure cluster's daemons run as their own users and cannot reach {folder}: {parent} is mode "
                f"{stat.S_IMODE(mode):o}; put the work dir where others may pass through (e.g. under /tmp)"
            )


def _run(argv: list[str]) -> None:
    if shutil.which(argv[0]) is None:
        raise ClusterError(f"{argv[0]} not found: a secure cluster makes its daemons' users (apt-get install passwd)")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise ClusterError(f"{' '.join(argv[:2])} ... {argv[-1]}: {done.stderr.strip()}")
