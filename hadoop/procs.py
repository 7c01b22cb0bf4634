"""The processes of a cluster on this machine, read from /proc (standard library only)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path


def proc_read(pid: int, name: str) -> bytes | None:
    """``/proc/<pid>/<name>``, or None once the process is gone (or not ours)."""
    try:
        return Path(f"/proc/{pid}/{name}").read_bytes()
    except OSError:  # gone, or not ours
        return None


def _stat_fields(stat: bytes) -> list[bytes]:
    """Fields 3... of /proc/<pid>/stat (state, ppid, ...).

    The command name in field 2 may hold spaces and parentheses: split after the last ")".
    """
    return stat[stat.rindex(b")") + 2 :].split()


def _parent_pid(stat: bytes) -> int:
    return int(_stat_fields(stat)[1])


def start_ticks(pid: int) -> int | None:
    """Return when ``pid`` started (clock ticks since boot), None once it is gone.

    Together with the pid it names one process: a pid may be reused later.
    """
    stat = proc_read(pid, "stat")
    return None if stat is None else int(_stat_fields(stat)[19])


def all_pids() -> list[int]:
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def descendants(pid: int) -> list[int]:
    """Return the live descendants of ``pid``, parents before children."""
    children: dict[int, list[int]] = {}
    for child in all_pids():
        stat = proc_read(child, "stat")
        if stat is not None:
            children.setdefault(_parent_pid(stat), []).append(child)
    found: list[int] = []
    pending = [pid]
    while pending:
        for child in children.get(pending.pop(0), []):
            found.append(child)
            pending.append(child)
    return found


def is_alive(pid: int) -> bool:
    """Return whether any thread of ``pid`` still runs.

    A JVM whose main thread has ended shows as a zombie while its other
    threads still run and hold its ports, so the leader's state is not enough.
    """
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for thread in threads:
        stat = proc_read(pid, f"task/{thread}/stat")
        if stat is not None and _stat_fields(stat)[0] not in (b"Z", b"X"):
            return True
    return False


def argv(pid: int) -> list[str]:
    """Return the command line of ``pid`` (empty once it is gone)."""
    raw = proc_read(pid, "cmdline") or b""
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def terminate(pids: Sequence[int], grace: float) -> list[int]:
    """Send SIGTERM to ``pids``, SIGKILL to those alive after ``grace`` seconds.

    Returns
    -------
    list[int]
        The processes still alive 5 s after SIGKILL (none, normally).
    """
    survivors = list(pids)
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        for pid in survivors:
            with suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while survivors and time.monotonic() < deadline:
            time.sleep(0.1)
            survivors = [pid for pid in survivors if is_alive(pid)]
        if not survivors:
            break
    return survivors


def rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` in MB (0 once it is gone)."""
    for line in (proc_read(pid, "status") or b"").decode().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0
