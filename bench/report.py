"""Writing a benchmark's result: printed, and saved as JSON beside the command, settings and machine that made it.

Every benchmark writes ``bench/results/<benchmark>.json`` by default
(:func:`result_path`); docs/benchmarks.md's tables are read from those files.
Standard library only: ``bench/petastorm_reader.py`` runs it in Petastorm's
own environment too.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Where results are kept (tracked): one JSON file per benchmark or named run of one.
RESULTS = ROOT / "bench" / "results"


def result_path(name: str) -> str:
    """The default ``--out`` of benchmark ``name``: ``bench/results/<name>.json``."""
    return str(RESULTS / f"{name}.json")


def as_given(value: str) -> str:
    """``value`` relative to the checkout when it is a path inside it: results name no machine's folders."""
    path = Path(value.removeprefix("file://"))
    return str(path.relative_to(ROOT)) if path.is_absolute() and path.is_relative_to(ROOT) else value


def _cpu_model() -> str:
    # platform.processor() is empty on most Linux builds; /proc/cpuinfo names the model.
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _commit() -> str | None:
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


def machine() -> dict:
    """The machine a result was measured on: cores, CPU model, load, date (UTC)."""
    return {
        "cores": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def provenance(args: argparse.Namespace | None) -> dict:
    """The command as run, its parsed options (the configuration) and the code's commit."""
    python = as_given(sys.executable)
    script = as_given(str(Path(sys.argv[0]).resolve()))
    command = [python if python != sys.executable else Path(python).name, script, *map(as_given, sys.argv[1:])]
    options = {key: _portable(value) for key, value in vars(args).items()} if args is not None else {}
    return {"command": shlex.join(command), "configuration": options, "commit": _commit()}


def _portable(value: object) -> object:
    if isinstance(value, Path):
        value = str(value)
    if isinstance(value, str):
        return as_given(value)
    if isinstance(value, list | tuple):
        return [_portable(item) for item in value]
    return value


def write_summary(summary: dict, out: str, args: argparse.Namespace | None = None, echo: bool = True) -> None:
    """Write ``summary`` with its provenance and machine to ``out`` as JSON (parents created); print it if ``echo``.

    The figures come first as given; ``command``, ``configuration``,
    ``commit`` and ``machine`` are added after them (``summary``'s own keys
    of those names are kept).
    """
    record = {**summary, **{k: v for k, v in provenance(args).items() if k not in summary}}
    record.setdefault("machine", machine())
    text = json.dumps(record, indent=2, default=str)
    if echo:
        print(text)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(text + "\n")
