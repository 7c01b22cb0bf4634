"""The manifest of a shard build, folded from what its tasks wrote and counted (:mod:`tfbs.formats.manifest`)."""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from operator import itemgetter
from typing import Any

from preprocess.label_reader import ReadReport
from preprocess.plan import ShardPlan
from preprocess.shard_writer import ChromResult
from tfbs.config import PipelineConfig
from tfbs.formats import manifest
from tfbs.formats.dream import TRAIN, VALID

log = logging.getLogger("tfbs.preprocess")


def shard_manifest(
    config: PipelineConfig,
    plan: ShardPlan,
    fingerprint: dict[str, Any],
    reports: dict[str, ReadReport],
    results: list[ChromResult],
    record_files: list[tuple[str, dict]],
    probabilities: dict[tuple[str, str, str], tuple[float, float]],
    proteins: dict[str, str],
) -> manifest.Manifest:
    """The validated manifest of the shards ``plan`` built.

    Raises
    ------
    pydantic.ValidationError
        If it does not validate, e.g. a TF/cell's outcomes do not add up to
        its input rows (:class:`tfbs.formats.manifest.ManifestMismatchError`).
    """
    pp, tfs = config.preprocess, plan.tfs
    input_rows = {tf: reports[tf].n_rows for tf in tfs}
    assembled = assemble_manifest(
        results, record_files, reports, plan.cells_by_tf, pp.negative_draws, plan.staging_uri, plan.shards_uri
    )
    log_accounting(assembled["counts"], input_rows)
    # Validation checks that every TF/cell's outcomes add up to its input rows.
    return manifest.Manifest.model_validate(
        {
            "schema_version": manifest.SCHEMA_VERSION,
            "config_digest": config.digest(),
            "fingerprint": fingerprint,
            "created_unix": int(time.time()),
            "tfs": tfs,
            "cells": plan.cells,
            "cells_by_tf": plan.cells_by_tf,
            "heldout_cells": sorted(config.data.heldout_cells),
            "splits": {"test_chroms": pp.test_chroms, "valid_chroms": pp.valid_chroms},
            "window": pp.window,
            # Without DNase every bin reads as closed: the model must not use the input.
            "dnase": config.data.has_dnase,
            "negative_draws": pp.negative_draws,
            "record_layout": plan.layout.to_dict(),
            "inputs": {
                job.tf: {
                    "uri": job.uri,
                    "input_rows": input_rows[job.tf],
                    "rejected": [{"line": line, "reason": reason} for line, reason in sorted(reports[job.tf].rejected)],
                }
                for job in plan.label_files
            },
            "draw_probabilities": {f"{tf}/{cell}/{split}": p for (tf, cell, split), p in sorted(probabilities.items())},
            **assembled,
            "proteins": {tf: proteins[tf] for tf in tfs},
        }
    )


def assemble_manifest(
    results: list[ChromResult],
    record_files: list[tuple[str, dict]],
    reports: dict[str, ReadReport],
    cells_by_tf: dict[str, list[str]],
    n_draws: int,
    staging_uri: str,
    final_uri: str,
) -> dict:
    """Fold the tasks' results into the manifest's counts, draws and file lists."""
    counts = manifest.tally_outcomes(row for result in results for row in result.counts)
    for tf, cells in cells_by_tf.items():
        for cell in cells:
            # Every TF/cell gets an entry, so the accounting check sees one
            # whose rows all went missing.
            entry = counts.setdefault(tf, {}).setdefault(cell, {})
            if reports[tf].rejected:
                entry[manifest.REJECTED] = len(reports[tf].rejected)
    draws: dict = defaultdict(lambda: defaultdict(dict))
    parquet: dict[str, list] = defaultdict(list)
    records: dict[str, dict[str, Any]] = {
        split: {"positives": [], "negatives": [[] for _ in range(n_draws)]} for split in (TRAIN, VALID)
    }

    def final(entry: dict) -> dict:
        return {**entry, "path": entry["path"].replace(staging_uri, final_uri, 1)}

    for file_key, entry in record_files:
        split, kind = file_key.split("/")
        split_records = records[split]
        target = (
            split_records["positives"]
            if kind == "positives"
            else split_records["negatives"][int(kind.removeprefix("negatives-"))]
        )
        target.append(final(entry))
    for result in results:
        parquet[result.split].extend(final(entry) for entry in result.parquet)
        for cell, per_draw in result.draws.items():
            current = draws[result.tf][cell].get(result.split, [0] * n_draws)
            draws[result.tf][cell][result.split] = [a + b for a, b in zip(current, per_draw)]
    by_path = itemgetter("path")
    for files in parquet.values():
        files.sort(key=by_path)
    for split_records in records.values():
        split_records["positives"].sort(key=by_path)
        for files in split_records["negatives"]:
            files.sort(key=by_path)
    return {
        "counts": counts,
        "draws": {tf: {cell: dict(s) for cell, s in cells.items()} for tf, cells in draws.items()},
        "parquet": dict(parquet),
        "records": records,
    }


def log_accounting(counts: dict, input_rows: dict[str, int]) -> None:
    """Log each TF/cell's input rows against its outcomes."""
    for tf, cells in counts.items():
        for cell, outcomes in sorted(cells.items()):
            kept = {split: sum(n.values()) for split, n in outcomes.get("kept", {}).items()}
            others = {key: value for key, value in outcomes.items() if key != "kept"}
            log.info("%s/%s: %d input rows = kept %s + %s", tf, cell, input_rows[tf], kept, others)
