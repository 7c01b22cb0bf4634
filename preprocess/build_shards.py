"""The preprocessing Spark job: labels in, balanced shards and manifest out.

Three Spark stages:

1. one task per label file streams it (``.gz`` cannot be split), checking
   every line, and annotates each chromosome as soon as its rows end, in
   background threads beside the read (sorted bins, bedtools' blacklist and
   DNase summit proximity); a test chromosome, which needs no draw
   probabilities, is written there and then, each other one stored in the
   staging directory, and only class counts go back to the driver;
2. with the draw probabilities from those counts, one task per (TF,
   chromosome), largest first, decides every (bin, cell), cuts windows from
   the genome, writes its Parquet shard and deals its training records to
   the record files, storing them in one chunk file in the staging
   directory;
3. a few tasks per core gather and write the record files, each reading
   one byte range of every chunk file.

Everything goes to a staging directory that is swapped in whole after the
manifest, which accounts for every input row, has been checked and written.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import re
import time
import uuid
from collections import defaultdict
from collections.abc import Iterable, Iterator
from concurrent.futures import Future
from functools import partial
from operator import itemgetter
from typing import Any, Literal

import numpy as np
from pyspark.sql import SparkSession

from preprocess.fingerprint import CheckedInputs, changed_inputs, check_and_fingerprint
from preprocess.label_reader import ReadReport, read_label_file
from preprocess.memory import keep_freed_memory
from preprocess.sampling import draw_probabilities
from preprocess.segregate import (
    BLACKLIST,
    ChromBins,
    annotate_while_reading,
    class_counts,
    decide,
    dnase_source,
    read_bins,
    write_bins,
)
from preprocess.shard_writer import (
    ChromResult,
    DealtChunk,
    ShardContext,
    gather_dealt_records,
    store_dealt_records,
    write_chromosome,
)
from tfbs import manifest, storage
from tfbs.config import DataConfig, PipelineConfig, PreprocessConfig
from tfbs.dream import TEST, TRAIN, VALID, read_bed_intervals, read_dnase_peaks, split_of
from tfbs.errors import BadInputError
from tfbs.genome import load_chromosome, read_fai, window_status
from tfbs.proteins import read_protein_fasta
from tfbs.records import RecordLayout

log = logging.getLogger("tfbs.preprocess")

#: Chromosomes a label file's reading task annotates at once, beside the read.
_ANNOTATION_THREADS = 2
#: Record-writing tasks per core Spark offers: enough to balance the cores.
_RECORD_TASKS_PER_CORE = 4
#: Record bytes one writing task holds at most (it gathers all its files' chunks before writing).
_RECORD_TASK_BYTES = 256 << 20


def _read_and_annotate(
    job: tuple[str, str, list[str]],
    chroms: list[str],
    splits: dict[str, str],
    intervals: dict,
    read_options: tuple[Literal["fail", "set_aside"], int],
    genome: dict,
    config: dict,
) -> Iterator[tuple]:
    """Stage 1: annotate every chromosome of one label file; write the test ones, store the others.

    A test chromosome needs no draw probabilities, so its shard is written
    here, beside the read, where the reading leaves a core part idle; the
    others wait in the staging directory for stage 2.

    Yields ``(tf, chrom, split, n_bins, class counts, result)`` per
    chromosome (``result`` the :class:`ChromResult` of a test chromosome,
    else None), then ``(tf, report)``.
    """
    keep_freed_memory()
    tf, uri, cells = job

    def store(bins: ChromBins) -> tuple:
        if bins.split == TEST:
            result = _write_one(bins, cells, {}, genome, config)
        else:
            # Files for the next stage's tasks rather than Spark's shuffle:
            # PySpark's partitionBy holds a task's output until the task ends,
            # so the whole file's bins were pickled and written after the read,
            # on one core (about 3 s at full size), and kept in memory twice.
            write_bins(bins, _annotated_file(config["context"].out_uri, tf, bins.chrom))
            result = None
        return tf, bins.chrom, bins.split, len(bins.starts), class_counts(bins), result

    items = read_label_file(uri, cells, chroms, *read_options)
    for item in annotate_while_reading(tf, items, cells, splits, intervals, _ANNOTATION_THREADS, store):
        yield (tf, item) if isinstance(item, ReadReport) else item


#: Folders of the staging directory that hold what passes between the stages; removed before the commit.
_ANNOTATED, _DEALT = "annotated", "dealt"


def _annotated_file(staging_uri: str, tf: str, chrom: str) -> str:
    return f"{staging_uri}/{_ANNOTATED}/{tf}/{chrom}.bins"


def _window_status_at(chromosome: np.ndarray, starts: np.ndarray, config: dict, rows: np.ndarray) -> np.ndarray:
    """The window status of the bins at ``rows`` (:func:`tfbs.genome.window_status`)."""
    return window_status(chromosome, starts[rows], config["window"], config["max_n_fraction"], config["pad"])


def _write_one(bins: ChromBins, cells: list[str], probabilities: dict, genome: dict, config: dict) -> ChromResult:
    """Decide, cut windows and write one (TF, chromosome); its dealt records go to a chunk file."""
    chromosome = load_chromosome(genome["uri"], genome["fai"][bins.chrom])
    status_of = partial(_window_status_at, chromosome, bins.starts, config)
    chosen = {cell: probabilities.get((bins.tf, cell, bins.split), (0.0, 0.0)) for cell in cells}
    decision = decide(bins, cells, chosen, config["draws"], config["seed"], status_of)
    context: ShardContext = config["context"]
    result = write_chromosome(bins, cells, decision, chromosome, context)
    if result.record_chunks:
        chunk_file = f"{context.out_uri}/{_DEALT}/{bins.tf}/{bins.chrom}.rec"
        result.dealt = store_dealt_records(result, chunk_file, config["writer_of"])
        result.record_chunks = []
    return result


def _write_partition(
    keys: Iterable[tuple[str, str]], cells_by_tf: dict, probabilities: dict, genome: dict, config: dict
) -> Iterator[ChromResult]:
    """Stage 2: write each (TF, chromosome) stage 1 stored."""
    keep_freed_memory()
    for tf, chrom in keys:
        bins = read_bins(_annotated_file(config["context"].out_uri, tf, chrom))
        yield _write_one(bins, cells_by_tf[tf], probabilities, genome, config)


def _gather_partition(chunks: list[DealtChunk], record_bytes: int, staging_uri: str, seed: int) -> list[tuple]:
    """Stage 3: write the record files whose chunks are given."""
    keep_freed_memory()
    return gather_dealt_records(chunks, record_bytes, staging_uri, seed)


def _spark_error_reason(err: Exception) -> str | None:
    """The BadInputError message inside a failed Spark job, if that is the cause."""
    found = re.search(r"BadInputError: (.+)", str(err))
    return found.group(1).strip() if found else None


def _side_intervals(data: DataConfig, cells: list[str]) -> dict[str, dict]:
    """``{chrom: {source: intervals}}`` of the blacklist and the DNase peaks with their summits (when there are any)."""
    sources = {dnase_source(cell): data.dnase_peaks_uri(cell) for cell in cells} if data.has_dnase else {}
    by_chrom: dict[str, dict] = defaultdict(dict)
    for source, uri in sources.items():
        for chrom, intervals in read_dnase_peaks(uri).items():
            by_chrom[chrom][source] = intervals
    if data.blacklist:
        for chrom, intervals in read_bed_intervals(data.blacklist).items():
            by_chrom[chrom][BLACKLIST] = intervals
    return dict(by_chrom)


def _probabilities(stats: list, cells_by_tf: dict, pp: PreprocessConfig) -> dict[tuple, tuple[float, float]]:
    """Draw probabilities per (TF, cell, split) from the class counts."""
    totals: dict[tuple, list[int]] = defaultdict(lambda: [0, 0, 0])
    for (tf, _chrom), split, counts in stats:
        for cell, row in zip(cells_by_tf[tf], counts):
            total = totals[(tf, cell, split)]
            for i in range(3):
                total[i] += int(row[i])
    return {
        key: draw_probabilities(n_bound, n_open, n_closed, pp.negatives_per_positive, pp.hard_negative_fraction)
        for key, (n_bound, n_open, n_closed) in totals.items()
        if key[2] != TEST
    }


def _record_file_counts(
    stats: list, cells_by_tf: dict, probabilities: dict, n_draws: int, rows_per_file: int
) -> dict[str, int]:
    """How many record files each ``<split>/<kind>`` gets, from the expected rows."""
    expected: dict[str, float] = defaultdict(float)
    for (tf, _chrom), split, counts in stats:
        if split == TEST:
            continue
        for cell, (bound, open_unbound, closed_unbound) in zip(cells_by_tf[tf], counts):
            p_open, p_closed = probabilities[(tf, cell, split)]
            expected[f"{split}/positives"] += bound
            for draw in range(n_draws):
                expected[f"{split}/negatives-{draw}"] += p_open * open_unbound + p_closed * closed_unbound
    return {key: max(1, math.ceil(rows / rows_per_file)) for key, rows in sorted(expected.items())}


def _record_writer_tasks(n_files: int, file_bytes: int, sc: Any) -> int:
    """How many tasks write the record files (each file goes whole to one).

    One task per file cost more in task start-ups than in writing (793
    files at full size: 28 s, against 7 s in 14 tasks); a few tasks per
    core, but never so few that one holds more than ``_RECORD_TASK_BYTES``.
    """
    by_memory = math.ceil(n_files / max(1, _RECORD_TASK_BYTES // file_bytes))
    return max(1, min(n_files, max(_RECORD_TASKS_PER_CORE * sc.defaultParallelism, by_memory)))


def _assemble_manifest(
    results: list[ChromResult],
    record_files: list[tuple[str, dict]],
    reports: dict,
    cells_by_tf: dict,
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


def current_shards(shards_uri: str, fingerprint: dict | Future[dict]) -> manifest.Manifest | None:
    """The manifest of the shards at ``shards_uri`` if they were built from ``fingerprint``, else None.

    Logs why: no shards yet, an unfinished or older-schema directory, or
    which inputs changed since the shards were built.

    Parameters
    ----------
    shards_uri
        The shard directory.
    fingerprint
        :func:`preprocess.fingerprint.input_fingerprint` of the inputs now,
        or its future: awaited only if there are shards to compare with.
    """
    if not storage.exists(f"{shards_uri}/{manifest.MANIFEST_NAME}"):
        log.info("building the shards in %s: none there yet", shards_uri)
        return None
    if isinstance(fingerprint, Future):
        fingerprint = fingerprint.result()
    try:
        existing = manifest.read_manifest(shards_uri)
    except BadInputError as err:
        log.info("rebuilding the shards: %s", err)
        return None
    changed = changed_inputs(existing.fingerprint, fingerprint)
    if changed:
        log.info("rebuilding the shards in %s: changed since they were built: %s", shards_uri, ", ".join(changed))
        return None
    log.info(
        "shards in %s are up to date (same configuration, same content of all %d input files); not rebuilt",
        shards_uri,
        len(fingerprint["inputs"]),
    )
    return existing


def build_shards(spark: SparkSession, config: PipelineConfig, inputs: CheckedInputs | None = None) -> manifest.Manifest:
    """Run preprocessing end to end and return the manifest.

    Parameters
    ----------
    spark
        An active session (``local[*]``, ``local-cluster`` or YARN).
    config
        The pipeline configuration; reads ``data`` and ``preprocess``,
        writes under ``config.shards_uri``.
    inputs
        :func:`preprocess.fingerprint.check_and_fingerprint` of ``config``
        when the caller has it (``tfbs preprocess`` hashes the inputs while
        the JVM starts and, when there are no shards to compare with, while
        the build runs); else the inputs are checked and hashed here first.

    Returns
    -------
    Manifest
        The manifest written to ``<shards>/manifest.json``. If the shards
        there were built from the same configuration sections and inputs of
        the same content (:func:`preprocess.fingerprint.input_fingerprint`),
        they are kept and their manifest returned; otherwise they are rebuilt
        and the log names what changed.

    Raises
    ------
    BadInputError
        A malformed input line (``bad_rows=fail``), naming file and line.
    pydantic.ValidationError
        If the manifest does not validate, e.g. a TF/cell's outcomes do not
        add up to its input rows (:class:`tfbs.manifest.ManifestMismatchError`).
    """
    started = time.monotonic()
    data, pp = config.data, config.preprocess
    if inputs is None:
        inputs = check_and_fingerprint(config)
    cells_by_tf = inputs.cells_by_tf
    tfs = list(data.tfs)
    all_cells = sorted({cell for cells in cells_by_tf.values() for cell in cells})
    label_uris = {tf: data.labels_uri(tf) for tf in tfs}
    final_uri = config.shards_uri
    existing = current_shards(final_uri, inputs.fingerprint)
    if existing is not None:
        return existing
    proteins = read_protein_fasta(data.proteins_fasta)
    fai = read_fai(data.genome_fasta)
    chroms = list(fai)
    splits = {chrom: split_of(chrom, pp.test_chroms, pp.valid_chroms) for chrom in chroms}
    layout = RecordLayout(pp.window)
    sc = spark.sparkContext
    intervals = sc.broadcast(_side_intervals(data, all_cells))

    staging_uri = f"{final_uri}._staging-{uuid.uuid4().hex[:8]}"
    genome = {"uri": data.genome_fasta, "fai": fai}
    read_options = (pp.bad_rows, pp.read_block_mb << 20)
    jobs = [(tf, label_uris[tf], cells_by_tf[tf]) for tf in tfs]
    context = ShardContext(
        staging_uri, tfs, all_cells, pp.window, pp.seed, pp.rows_per_row_group, pp.test_rows_per_row_group, layout
    )
    task_config = {
        "window": pp.window,
        "max_n_fraction": pp.max_n_fraction,
        "pad": pp.pad_windows,
        "draws": pp.negative_draws,
        "seed": pp.seed,
        "context": context,
        "writer_of": {},
    }
    try:
        summary = (
            sc.parallelize(jobs, len(jobs))
            .flatMap(
                lambda job: _read_and_annotate(job, chroms, splits, intervals.value, read_options, genome, task_config)
            )
            .collect()
        )
        reports = {row[0]: row[1] for row in summary if isinstance(row[1], ReadReport)}
        chromosomes = [row for row in summary if not isinstance(row[1], ReadReport)]
        stats = [((tf, chrom), split, counts) for tf, chrom, split, _, counts, _ in chromosomes]
        for tf in tfs:
            log.info("%s: %d label lines, %d set aside as bad", tf, reports[tf].n_rows, len(reports[tf].rejected))
        probabilities = _probabilities(stats, cells_by_tf, pp)
        n_files = _record_file_counts(stats, cells_by_tf, probabilities, pp.negative_draws, pp.rows_per_record_file)
        file_keys = [(key, n) for key, count in n_files.items() for n in range(count)]
        n_writers = _record_writer_tasks(len(file_keys), pp.rows_per_record_file * layout.record_bytes, sc)
        writer_of = {file_key: i % n_writers for i, file_key in enumerate(file_keys)}
        task_config = {
            **task_config,
            "context": dataclasses.replace(context, record_files=n_files),
            "writer_of": writer_of,
        }
        # The rest, largest first, so the stage does not end waiting on one.
        stored = sorted((row for row in chromosomes if row[5] is None), key=lambda row: -row[3])
        written = [(tf, chrom) for tf, chrom, *_ in stored]
        results = [row[5] for row in chromosomes if row[5] is not None]
        results += (
            sc.parallelize(written, max(1, len(written)))
            .mapPartitions(lambda keys: _write_partition(keys, cells_by_tf, probabilities, genome, task_config))
            .collect()
        )
        # Gone before the record files are written: on one machine the page
        # cache they held serves those writes.
        storage.delete_dir(f"{staging_uri}/{_ANNOTATED}")
        chunks_by_writer: dict[int, list[DealtChunk]] = defaultdict(list)
        for result in results:
            for chunk in result.dealt:
                chunks_by_writer[writer_of[(chunk.file_key, chunk.number)]].append(chunk)
        record_bytes = layout.record_bytes
        record_files = (
            sc.parallelize(list(chunks_by_writer.values()), max(1, len(chunks_by_writer)))
            .flatMap(lambda chunks: _gather_partition(chunks, record_bytes, staging_uri, pp.seed))
            .collect()
        )
        storage.delete_dir(f"{staging_uri}/{_DEALT}")
        input_rows = {tf: reports[tf].n_rows for tf in tfs}
        assembled = _assemble_manifest(
            results, record_files, reports, cells_by_tf, pp.negative_draws, staging_uri, final_uri
        )
        _log_accounting(assembled["counts"], input_rows)
        # Validation checks that every TF/cell's outcomes add up to its input rows.
        shard_manifest = manifest.Manifest.model_validate(
            {
                "schema_version": manifest.SCHEMA_VERSION,
                "config_digest": config.digest(),
                "fingerprint": inputs.fingerprint.result(),
                "created_unix": int(time.time()),
                "tfs": tfs,
                "cells": all_cells,
                "cells_by_tf": cells_by_tf,
                "splits": {"test_chroms": pp.test_chroms, "valid_chroms": pp.valid_chroms},
                "window": pp.window,
                # Without DNase every bin reads as closed: the model must not use the input.
                "dnase": data.has_dnase,
                "negative_draws": pp.negative_draws,
                "record_layout": layout.to_dict(),
                "inputs": {
                    tf: {
                        "uri": label_uris[tf],
                        "input_rows": input_rows[tf],
                        "rejected": [{"line": line, "reason": reason} for line, reason in sorted(reports[tf].rejected)],
                    }
                    for tf in tfs
                },
                "draw_probabilities": {
                    f"{tf}/{cell}/{split}": p for (tf, cell, split), p in sorted(probabilities.items())
                },
                **assembled,
                "proteins": {tf: proteins[tf] for tf in tfs},
            }
        )
        manifest.write_manifest(staging_uri, shard_manifest)
    except BaseException as err:
        # Ctrl-C too: an interrupted build leaves no staging folder behind
        # (a SIGKILLed one does; nothing reads it, and it is safe to delete).
        storage.delete_dir(staging_uri)
        reason = _spark_error_reason(err) if isinstance(err, Exception) else None
        if reason and not isinstance(err, BadInputError):
            raise BadInputError.from_message(reason) from None
        raise
    storage.replace_dir(staging_uri, final_uri, commit_marker=manifest.MANIFEST_NAME)
    total = sum(input_rows.values())
    elapsed = time.monotonic() - started
    log.info(
        "shards committed to %s: %d label lines in %.1f s (%.0f lines/s)", final_uri, total, elapsed, total / elapsed
    )
    return shard_manifest


def _log_accounting(counts: dict, input_rows: dict[str, int]) -> None:
    for tf, cells in counts.items():
        for cell, outcomes in sorted(cells.items()):
            kept = {split: sum(n.values()) for split, n in outcomes.get("kept", {}).items()}
            others = {key: value for key, value in outcomes.items() if key != "kept"}
            log.info("%s/%s: %d input rows = kept %s + %s", tf, cell, input_rows[tf], kept, others)
