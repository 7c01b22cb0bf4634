"""Timing a command: wall time and peak memory of its whole process tree (sampled)."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil


def measure(command: str | Sequence[str], log: Path | None = None, every_s: float = 0.5, **popen: Any) -> dict:
    """Run ``command`` (a shell line, or an argument list); its wall time and peak RSS summed over its process tree.

    Parameters
    ----------
    command
        A string runs under ``bash -o pipefail -c``; a list runs as it is.
    log
        Where its output goes (inherited when None).
    every_s
        Seconds between samples of the tree's memory.
    popen
        More arguments of :class:`subprocess.Popen` (``env``, ``cwd``).

    Raises
    ------
    SystemExit
        If the command exits with an error (naming it, and the log).
    """
    argv = ["bash", "-o", "pipefail", "-c", command] if isinstance(command, str) else list(command)
    output = open(log, "w") if log else None  # noqa: SIM115 (closed below, after the child ends)
    started = time.monotonic()
    process = subprocess.Popen(argv, stdout=output, stderr=subprocess.STDOUT if output else None, **popen)
    peak, done = 0, threading.Event()

    def sample() -> None:
        nonlocal peak
        root = psutil.Process(process.pid)
        while not done.is_set():
            try:
                tree = [root, *root.children(recursive=True)]
                peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
            except psutil.Error:
                pass
            done.wait(every_s)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    code = process.wait()
    done.set()
    sampler.join()
    if output:
        output.close()
    if code != 0:
        where = f", see {log}" if log else ""
        raise SystemExit(f"benchmark step failed (exit {code}): {command}{where}")
    return {"wall_s": round(time.monotonic() - started, 1), "peak_rss_gb": round(peak / 2**30, 2)}


def bytes_under(path: Path) -> int:
    """Bytes of the files under ``path`` (0 when it does not exist)."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.exists() else 0
