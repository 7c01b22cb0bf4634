"""Rename the training placement settings to their section, ``train.placement`` (issue 34).

A one-off, re-runnable rewrite of the tracked files (code, tests, bench,
the DAG, docs, scripts): ``train.<key>`` becomes ``train.placement.<key>``
for every key that moved, and ``train.master`` goes, since training runs on
``spark.master`` (a local master gives it a ``local-cluster`` sized from the
placement). An override line that only asked for the ``local-cluster`` the
placement now derives (``"train.master=local-cluster[N,1,1024]",``) is
removed; any other ``train.master=`` becomes ``spark.master=`` (an explicit
``local-cluster``, ``yarn`` or ``spark://`` master is used as it is). Lines
with " moved: " name the old keys on purpose and are left alone. Lines
with " moved: " name the old keys on purpose and are left alone.

Idempotent: run it again after a merge to rename what the merge brought
in, then review ``git diff``. YAML files (``conf/``) nest keys under a new
section and are edited by hand. Recorded results (``bench/results/``) keep
the overrides they ran with.

Usage: ``python scripts/dev/rename_placement.py`` from the repository root.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

#: The ``train`` keys now in ``train.placement``.
MOVED = (
    "strategy",
    "num_ps",
    "num_workers",
    "spark_conf",
    "record_cache_dir",
    "worker_wait_timeout_s",
    "executors_timeout_s",
    "tf_network",
    "timeout_s",
    "gpus_per_worker",
    "gpu_discovery_script",
    "node_cpus",
)
SKIPPED_PREFIXES = ("bench/results/", "conf/", "scripts/dev/rename_placement.py", "tfbs/config/")
SUFFIXES = (".py", ".md", ".sh", ".cfg", ".toml", ".txt", ".rst")

DERIVED_MASTER_LINE = re.compile(r'^[ \t]*"train\.master=local-cluster\[\d+,1,1024\]",[ \t]*\n')
#: The same as the last item of a one-line tuple, which stays a tuple.
DERIVED_MASTER_ITEM = re.compile(r', "train\.master=local-cluster\[\d+,1,1024\]"(?=\))')
OTHER_MASTER = re.compile(r"\btrain\.master=")
MOVED_KEY = re.compile(r"\btrain\.(" + "|".join(MOVED) + r")\b")


#: A line naming old keys on purpose (the message of a moved key, and its tests).
KEEPS_OLD_KEYS = " moved: "


def rename_line(line: str) -> str:
    """``line`` with every moved key under ``train.placement`` and ``train.master`` gone."""
    if KEEPS_OLD_KEYS in line:
        return line
    line = DERIVED_MASTER_LINE.sub("", line)
    line = DERIVED_MASTER_ITEM.sub(",", line)
    line = OTHER_MASTER.sub("spark.master=", line)
    return MOVED_KEY.sub(r"train.placement.\1", line)


def rename(text: str) -> str:
    """``text`` renamed line by line (:func:`rename_line`)."""
    return "".join(rename_line(line) for line in text.splitlines(keepends=True))


def main() -> int:
    files = subprocess.run(["git", "ls-files"], check=True, capture_output=True, text=True).stdout.split()
    changed = 0
    for name in files:
        if name.startswith(SKIPPED_PREFIXES) or not name.endswith(SUFFIXES):
            continue
        path = Path(name)
        text = path.read_text(encoding="utf-8")
        new = rename(text)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed += 1
    print(f"{changed} files renamed", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
