"""Pieces every section shares: the frozen, strict base model and the CPU-list parser."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

#: Spark settings that are counts: Spark reads them as integers (and so does
#: training's sizing), so a value such as "2.5" is refused on load, naming
#: the key, instead of failing as a Java or Python traceback once Spark runs.
SPARK_COUNT_KEYS = (
    "spark.executor.cores",
    "spark.task.cpus",
    "spark.cores.max",
    "spark.driver.cores",
)

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


def spark_counts(conf: dict[str, str]) -> dict[str, str]:
    """``conf`` itself, after checking that each of :data:`SPARK_COUNT_KEYS` in it is a positive whole number.

    Examples
    --------
    >>> spark_counts({"spark.executor.cores": "2"})
    {'spark.executor.cores': '2'}
    >>> spark_counts({"spark.executor.cores": "2.5"})
    Traceback (most recent call last):
    ...
    ValueError: spark.executor.cores: '2.5' is not a positive whole number
    """
    for key in SPARK_COUNT_KEYS:
        value = conf.get(key)
        if value is not None and not (str(value).strip().isdigit() and int(value) > 0):
            raise ValueError(f"{key}: {value!r} is not a positive whole number")
    return conf


class Section(BaseModel):
    """Base for every section: unknown keys are errors, objects are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)
