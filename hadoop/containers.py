"""YARN containers of a cluster on this machine: their ids, processes and log folders.

The NodeManager's REST API lists containers but not their pids, so a
container's processes are found in /proc by the ``CONTAINER_ID`` the
NodeManager sets and a working directory under the cluster's own folders.
Standard library only.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from procs import all_pids, argv, proc_read


class ContainerProcess(NamedTuple):
    """A process running inside a YARN container."""

    container_id: str
    pid: int
    argv: list[str]


class ContainerLogs(NamedTuple):
    """Where a container's output lands on disk."""

    directory: Path
    stdout: Path
    stderr: Path


def application_of(container_id: str) -> str:
    """Return the application id of a container id.

    ``container_[e<epoch>_]<cluster>_<app>_<attempt>_<n>`` belongs to
    ``application_<cluster>_<app>``.

    Examples
    --------
    >>> application_of("container_e01_1795724208126_0001_01_000002")
    'application_1795724208126_0001'
    """
    fields = container_id.split("_")[1:]
    if fields[0].startswith("e"):
        fields = fields[1:]
    return f"application_{fields[0]}_{fields[1]}"


def container_of(pid: int, root: Path) -> str | None:
    """The container a process runs in, if it belongs to the cluster under ``root``.

    The NodeManager gives every container process CONTAINER_ID and a working
    directory under its local dirs: both must match, so that neither a shell
    opened in a container dir nor another cluster's container is taken.
    """
    try:
        cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
    except OSError:
        return None
    if not cwd.is_relative_to(root):
        return None
    for entry in (proc_read(pid, "environ") or b"").split(b"\0"):
        if entry.startswith(b"CONTAINER_ID="):
            return entry.partition(b"=")[2].decode()
    return None


def container_processes(root: Path, app_id: str | None = None) -> list[ContainerProcess]:
    """The processes running in YARN containers of the cluster under ``root``, found in /proc.

    Parameters
    ----------
    root
        The folder holding the NodeManagers' local dirs.
    app_id
        Only this application's containers; all when None.
    """
    found = []
    for pid in all_pids():
        container = container_of(pid, root)
        if container and (app_id is None or application_of(container) == app_id):
            found.append(ContainerProcess(container, pid, argv(pid)))
    return sorted(found)


def container_logs(log_dirs: Iterable[Path], app_id: str | None = None) -> dict[str, ContainerLogs]:
    """Where each container's stdout and stderr are, by container id.

    With log aggregation off, a NodeManager keeps each container's logs in
    ``<log dir>/<application>/<container>/``: the files ``yarn logs`` and
    the NodeManager's web UI serve.

    Parameters
    ----------
    log_dirs
        The NodeManagers' log dirs (``yarn.nodemanager.log-dirs``).
    app_id
        Only this application's containers; all when None.
    """
    found = {}
    for log_dir in log_dirs:
        for directory in sorted(log_dir.glob(f"{app_id or 'application_*'}/container_*")):
            found[directory.name] = ContainerLogs(directory, directory / "stdout", directory / "stderr")
    return found
