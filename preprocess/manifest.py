"""The shard manifest: every input row accounted for, by outcome.

Outcomes of one (bin, cell) row:

``kept``
    written to the shards (by split and class);
``excluded_blacklist``
    the bin overlaps the blacklist;
``excluded_ambiguous``
    label A outside the test split (A never trains; test keeps it so
    evaluation can remove it the official way);
``dropped_sampling``
    an unbound bin not drawn for the configured U:B ratio;
``dropped_window_out_of_bounds``
    the sequence window runs off the chromosome (``preprocess.pad_windows``
    pads it with N instead);
``dropped_window_n``
    the window holds more N than ``preprocess.max_n_fraction``;
``rejected_bad_line``
    the line was malformed and set aside (``preprocess.bad_rows=set_aside``);
    the manifest lists each with its line and reason.

An unbound row kept by several negative draws counts once; the manifest's
``draws`` holds the negatives of each draw.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable

from tfbs import uri as storage

SCHEMA_VERSION = 2
MANIFEST_NAME = "manifest.json"

#: Outcomes decided per (bin, cell) inside the tasks, by code.
OUTCOMES = (
    "kept",
    "excluded_blacklist",
    "excluded_ambiguous",
    "dropped_sampling",
    "dropped_window_out_of_bounds",
    "dropped_window_n",
)
REJECTED = "rejected_bad_line"


class ManifestMismatchError(RuntimeError):
    """The outcomes of a TF/cell do not add up to its input rows."""


def tally_outcomes(
    rows: Iterable[tuple[str, str, str, str, str, int]],
) -> dict[str, dict[str, dict]]:
    """Fold ``(tf, cell, outcome, split, label, count)`` rows into nested counts.

    Returns
    -------
    dict
        ``{tf: {cell: {"kept": {split: {label: n}}, outcome: n, ...}}}``
    """
    tree: dict = defaultdict(lambda: defaultdict(dict))
    for tf, cell, outcome, split, label, count in rows:
        entry = tree[tf][cell]
        if outcome == "kept":
            entry.setdefault("kept", {}).setdefault(split, {})
            entry["kept"][split][label] = entry["kept"][split].get(label, 0) + count
        else:
            entry[outcome] = entry.get(outcome, 0) + count
    return {tf: dict(cells) for tf, cells in tree.items()}


def total_of(outcomes: dict) -> int:
    """Sum every count in one TF/cell's outcome tree."""
    total = 0
    for key, value in outcomes.items():
        if key == "kept":
            total += sum(n for by_label in value.values() for n in by_label.values())
        else:
            total += value
    return total


def check_accounting(counts: dict, input_rows: dict[str, int]) -> None:
    """Raise unless every TF/cell's outcomes sum to the TF's input rows.

    Raises
    ------
    ManifestMismatchError
        Naming the TF/cell and both numbers.
    """
    for tf, cells in counts.items():
        for cell, outcomes in cells.items():
            accounted = total_of(outcomes)
            if accounted != input_rows[tf]:
                raise ManifestMismatchError(
                    f"{tf}/{cell}: outcomes add up to {accounted}, input has {input_rows[tf]} rows"
                )


def write_manifest(out_uri: str, manifest: dict) -> str:
    """Write the manifest JSON under ``out_uri``; returns its URI."""
    target = f"{out_uri}/{MANIFEST_NAME}"
    storage.write_text(target, json.dumps(manifest, indent=2, sort_keys=True))
    return target


def read_manifest(shards_uri: str) -> dict:
    """Read a shard directory's manifest, checking its schema version."""
    from preprocess.inputs import require

    target = require(f"{shards_uri}/{MANIFEST_NAME}", "shard manifest (run `tfbs preprocess` first)")
    manifest = json.loads(storage.read_text(target))
    if manifest.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(f"{target}: schema_version {manifest.get('schema_version')}, expected {SCHEMA_VERSION}")
    return manifest
