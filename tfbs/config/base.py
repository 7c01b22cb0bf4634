"""Pieces every section shares: the frozen, strict base model and the CPU-list parser."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

#: The GPU discovery script shipped in the repository (``scripts/``). Spark
#: runs it on each executor, so this absolute path suits clusters where the
#: repository sits at the same place on every node; on YARN ship the script
#: with ``--files`` and use ``./get_gpus_resources.sh`` (conf/yarn_gpu.yaml).
DEFAULT_GPU_DISCOVERY_SCRIPT = str(Path(__file__).resolve().parents[2] / "scripts" / "get_gpus_resources.sh")


def cpu_set(cpus: str) -> set[int]:
    """The CPUs of a Linux CPU list (``taskset -c``'s form).

    Examples
    --------
    >>> sorted(cpu_set("0-2,5"))
    [0, 1, 2, 5]
    """
    found: set[int] = set()
    for part in cpus.split(","):
        low, dash, high = part.strip().partition("-")
        if not low.isdigit() or (dash and not high.isdigit()) or int(high or low) < int(low):
            raise ValueError(f"{cpus!r} is not a CPU list such as '0' or '0-2,5'")
        found.update(range(int(low), int(high or low) + 1))
    return found


class Section(BaseModel):
    """Base for every section: unknown keys are errors, objects are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)
