"""Reading a configuration: YAML, dotted overrides, validation, one-line errors."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from tfbs.config.pipeline import PipelineConfig
from tfbs.config.placement import PlacementConfig
from tfbs.errors import ConfigError


def _apply_override(tree: dict[str, Any], assignment: str) -> None:
    """Set ``a.b.c=value`` in a nested dict; the value is parsed as YAML."""
    if "=" not in assignment:
        raise ConfigError(f"override {assignment!r}: expected key=value")
    dotted, raw = assignment.split("=", 1)
    keys = dotted.strip().split(".")
    node = tree
    for key in keys[:-1]:
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            raise ConfigError(f"override {assignment!r}: {key} is not a section")
        node = child
    try:
        node[keys[-1]] = yaml.safe_load(raw)
    except yaml.YAMLError as err:
        raise ConfigError(f"{dotted.strip()}: --set value {raw!r} is not valid YAML: {_yaml_problem(err)}") from None


def _yaml_problem(err: yaml.YAMLError) -> str:
    """What YAML found wrong, in one line (PyYAML's own text spans several, with a caret)."""
    problem = getattr(err, "problem", None) or str(err).splitlines()[0]
    mark = getattr(err, "problem_mark", None)
    return f"{problem} at column {mark.column + 1}" if mark is not None else problem


def _moved(loc: tuple[int | str, ...]) -> str | None:
    """Where an unknown key of an older configuration went, or None if it is no such key."""
    if len(loc) != 2 or loc[0] != "train":
        return None
    if loc[1] == "master":
        return (
            "training runs on spark.master; a local one (local, local[n]) gives training a local-cluster of one "
            "executor per TF node, train.placement.local_executor_memory_mb MiB each"
        )
    if loc[1] in PlacementConfig.model_fields:
        return f"now train.placement.{loc[1]}"
    return None


def _format_errors(source: str, error: ValidationError) -> str:
    lines = []
    for item in error.errors():
        key = ".".join(str(part) for part in item["loc"]) or "(top level)"
        # pydantic prefixes the message of a validator's ValueError; the key says where already.
        message = "unknown key" if item["type"] == "extra_forbidden" else item["msg"].removeprefix("Value error, ")
        moved = _moved(item["loc"]) if item["type"] == "extra_forbidden" else None
        lines.append(f"{source}: {key} moved: {moved}" if moved else f"{source}: {key}: {message}")
    return "\n".join(lines)


def load_config(path: str | os.PathLike[str], overrides: list[str] | None = None) -> PipelineConfig:
    """Read, override and validate a pipeline configuration.

    Parameters
    ----------
    path
        A YAML file, such as ``conf/demo.yaml``.
    overrides
        ``dotted.key=value`` strings applied on top of the file, values
        parsed as YAML (``train.steps=200``, ``data.tfs=[CTCF]``).

    Returns
    -------
    PipelineConfig
        The validated, frozen configuration.

    Raises
    ------
    ConfigError
        If the file is missing or unreadable, or a key is unknown or invalid;
        the message names the file and the key.
    """
    source = str(path)
    if not Path(source).is_file():
        raise ConfigError(f"{source}: configuration file not found")
    raw = Path(source).read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        column = err.start - (raw.rfind(b"\n", 0, err.start) + 1) + 1
        raise ConfigError(
            f"{source}:{line}: not UTF-8 text (byte {raw[err.start]:#04x} at column {column}); save it as UTF-8"
        ) from None
    try:
        tree = yaml.safe_load(text) or {}
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        raise ConfigError(f"{where}: not valid YAML: {_yaml_problem(err)}") from None
    if not isinstance(tree, dict):
        raise ConfigError(f"{source}: top level must be a mapping")
    for assignment in overrides or []:
        _apply_override(tree, assignment)
    tree["source"] = source
    try:
        return PipelineConfig.model_validate(tree)
    except ValidationError as err:
        raise ConfigError(_format_errors(source, err)) from None
