"""Pieces every section shares: the frozen, strict base model and the CPU-list parser."""

from __future__ import annotations

import types
import typing
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.fields import FieldInfo

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


class Identity(Enum):
    """What a setting is to the identity of what the pipeline makes: the shards and a model version.

    The shards are named by the ``data`` and ``preprocess`` sections, a
    model version by the ``train`` section (and the shards); each field of
    those sections, nested sections' fields included, is one of these. A
    field is :attr:`CONTENT` unless its type is annotated with another
    (``root: Annotated[str, Identity.LOCATION]``), and a nested section not
    left out is read field by field the same way (:func:`identity_settings`).
    """

    #: Decides what is made: its value is part of the identity.
    CONTENT = "content"
    #: Where an input is: only whether it is set counts (null turns an input off);
    #: the input fingerprint holds the files' bytes, so moving them changes nothing.
    LOCATION = "location"
    #: A file whose bytes the identity holds under another key: its path reads as null.
    DIGESTED = "digested"
    #: How shards are laid out in files or inputs read, not which rows they hold: left out.
    LAYOUT = "layout"
    #: Where and how a stage runs, and how long it may wait: left out.
    PLACEMENT = "placement"
    #: A name given to what is made, not a recipe: left out.
    NAME = "name"


def field_identity(field: FieldInfo) -> Identity:
    """The :class:`Identity` a field's type is annotated with; :attr:`Identity.CONTENT` when none."""
    return next((marker for marker in field.metadata if isinstance(marker, Identity)), Identity.CONTENT)


def nested_section(field: FieldInfo) -> type[Section] | None:
    """The section a field holds (``ModelConfig``, or ``GenerateConfig`` of ``GenerateConfig | None``), if any."""
    annotation = field.annotation
    candidates = typing.get_args(annotation) if isinstance(annotation, types.UnionType) else (annotation,)
    return next((kind for kind in candidates if isinstance(kind, type) and issubclass(kind, Section)), None)


def identity_settings(section: type[Section], tree: dict[str, Any]) -> dict[str, Any]:
    """``tree``, a JSON dump of a ``section``, as the identity of what it makes holds it (see :class:`Identity`)."""
    kept: dict[str, Any] = {}
    for name, value in tree.items():
        field = section.model_fields[name]
        identity = field_identity(field)
        if identity is Identity.LOCATION:
            kept[name] = value is not None
        elif identity is Identity.DIGESTED:
            kept[name] = None
        elif identity is Identity.CONTENT:
            inner = nested_section(field)
            kept[name] = identity_settings(inner, value) if inner is not None and isinstance(value, dict) else value
    return kept
