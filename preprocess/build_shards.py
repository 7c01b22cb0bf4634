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

Everything goes to a staging directory (:mod:`preprocess.staging`) that is
swapped in whole after the manifest (:mod:`preprocess.shard_manifest`),
which accounts for every input row, has been checked and written. What the
driver decides before the first task, and the rows the stages hand back,
are typed in :mod:`preprocess.plan`.

:func:`build_shards` reads as those steps: check and fingerprint the inputs
(and keep shards built from the same ones), plan, stage 1
(:func:`_stage_label_files`), then stages 2 and 3 and the manifest
(:func:`_write_shards_and_manifest`).
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator
from concurrent.futures import Future
from functools import partial
from typing import Any

import numpy as np
from pyspark import SparkContext
from pyspark.broadcast import Broadcast
from pyspark.sql import SparkSession

from preprocess.fingerprint import CheckedInputs, changed_inputs, check_and_fingerprint
from preprocess.label_reader import ReadReport, read_label_file
from preprocess.memory import keep_freed_memory
from preprocess.plan import FileReport, LabelFile, ShardPlan, StagedChromosome, TaskSettings, plan_shards
from preprocess.sampling import draw_probabilities
from preprocess.segregate import BLACKLIST, ChromBins, annotate_while_reading, class_counts, decide, dnase_source
from preprocess.shard_manifest import shard_manifest
from preprocess.shard_writer import ChromResult, gather_dealt_records, write_chromosome
from preprocess.staging import (
    ANNOTATED,
    DEALT,
    DealtChunk,
    annotated_file,
    dealt_file,
    read_bins,
    remove_folder,
    store_dealt_records,
    write_bins,
)
from tfbs import storage
from tfbs.config import DataConfig, PipelineConfig, PreprocessConfig
from tfbs.errors import BadInputError
from tfbs.formats import manifest
from tfbs.formats.dream import TEST, read_bed_intervals, read_dnase_peaks
from tfbs.formats.genome import load_chromosome, window_status
from tfbs.formats.proteins import read_protein_fasta

log = logging.getLogger("tfbs.preprocess")

#: Chromosomes a label file's reading task annotates at once, beside the read.
_ANNOTATION_THREADS = 2
#: Record-writing tasks per core Spark offers: enough to balance the cores.
_RECORD_TASKS_PER_CORE = 4
#: Record bytes one writing task holds at most (it gathers all its files' chunks before writing).
_RECORD_TASK_BYTES = 256 << 20

#: Draw probabilities ``(p_open, p_closed)`` by ``(tf, cell, split)``.
Probabilities = dict[tuple[str, str, str], tuple[float, float]]


def _read_and_annotate(
    job: LabelFile, chroms: list[str], splits: dict[str, str], intervals: dict, settings: TaskSettings
) -> Iterator[StagedChromosome | FileReport]:
    """Stage 1: annotate every chromosome of one label file; write the test ones, store the others.

    A test chromosome needs no draw probabilities, so its shard is written
    here, beside the read, where the reading leaves a core part idle; the
    others wait in the staging directory for stage 2.

    Yields a :class:`StagedChromosome` per chromosome, then the file's
    :class:`FileReport`.
    """
    keep_freed_memory()

    def store(bins: ChromBins) -> StagedChromosome:
        if bins.split == TEST:
            result = _write_one(bins, job.cells, {}, settings)
        else:
            # Files for the next stage's tasks rather than Spark's shuffle (preprocess.staging).
            write_bins(bins, annotated_file(settings.context.out_uri, job.tf, bins.chrom))
            result = None
        counts = class_counts(bins, np.array([cell in settings.heldout_cells for cell in job.cells], dtype=bool))
        return StagedChromosome(job.tf, bins.chrom, bins.split, len(bins.starts), counts, result)

    items = read_label_file(job.uri, job.cells, chroms, settings.bad_rows, settings.read_block_bytes)
    for item in annotate_while_reading(job.tf, items, job.cells, splits, intervals, _ANNOTATION_THREADS, store):
        yield FileReport(job.tf, item) if isinstance(item, ReadReport) else item


def _window_status_at(
    chromosome: np.ndarray, starts: np.ndarray, settings: TaskSettings, rows: np.ndarray
) -> np.ndarray:
    """The window status of the bins at ``rows`` (:func:`tfbs.formats.genome.window_status`)."""
    return window_status(chromosome, starts[rows], settings.window, settings.max_n_fraction, settings.pad_windows)


def _write_one(bins: ChromBins, cells: list[str], probabilities: Probabilities, settings: TaskSettings) -> ChromResult:
    """Decide, cut windows and write one (TF, chromosome); its dealt records go to a chunk file."""
    genome = settings.genome
    chromosome = load_chromosome(genome.uri, genome.fai[bins.chrom])
    status_of = partial(_window_status_at, chromosome, bins.starts, settings)
    chosen = {cell: probabilities.get((bins.tf, cell, bins.split), (0.0, 0.0)) for cell in cells}
    decision = decide(
        bins,
        cells,
        chosen,
        settings.negative_draws,
        settings.seed,
        status_of,
        settings.heldout_cells,
        settings.cross_cell_negatives,
    )
    context = settings.context
    result = write_chromosome(bins, cells, decision, chromosome, context)
    if result.record_chunks:
        chunk_file = dealt_file(context.out_uri, bins.tf, bins.chrom)
        result.dealt = store_dealt_records(bins.tf, bins.chrom, result.record_chunks, chunk_file, settings.writer_of)
        result.record_chunks = []
    return result


def _write_partition(
    keys: Iterable[tuple[str, str]],
    cells_by_tf: dict[str, list[str]],
    probabilities: Probabilities,
    settings: TaskSettings,
) -> Iterator[ChromResult]:
    """Stage 2: write each (TF, chromosome) stage 1 stored."""
    keep_freed_memory()
    for tf, chrom in keys:
        bins = read_bins(annotated_file(settings.context.out_uri, tf, chrom))
        yield _write_one(bins, cells_by_tf[tf], probabilities, settings)


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


def _probabilities(
    chromosomes: list[StagedChromosome], cells_by_tf: dict[str, list[str]], pp: PreprocessConfig
) -> Probabilities:
    """Draw probabilities per (TF, cell, split) from the class counts."""
    totals: dict[tuple, list[int]] = defaultdict(lambda: [0, 0, 0])
    for staged in chromosomes:
        for cell, row in zip(cells_by_tf[staged.tf], staged.class_counts):
            total = totals[(staged.tf, cell, staged.split)]
            for i in range(3):
                total[i] += int(row[i])
    return {
        key: draw_probabilities(n_bound, n_open, n_closed, pp.negatives_per_positive, pp.hard_negative_fraction)
        for key, (n_bound, n_open, n_closed) in totals.items()
        if key[2] != TEST
    }


def _record_file_counts(
    chromosomes: list[StagedChromosome],
    cells_by_tf: dict[str, list[str]],
    probabilities: Probabilities,
    n_draws: int,
    rows_per_file: int,
) -> dict[str, int]:
    """How many record files each ``<split>/<kind>`` gets, from the expected rows."""
    expected: dict[str, float] = defaultdict(float)
    for staged in chromosomes:
        if staged.split == TEST:
            continue
        for cell, (bound, open_unbound, closed_unbound) in zip(cells_by_tf[staged.tf], staged.class_counts):
            p_open, p_closed = probabilities[(staged.tf, cell, staged.split)]
            expected[f"{staged.split}/positives"] += bound
            for draw in range(n_draws):
                expected[f"{staged.split}/negatives-{draw}"] += p_open * open_unbound + p_closed * closed_unbound
    return {key: max(1, math.ceil(rows / rows_per_file)) for key, rows in sorted(expected.items())}


def _record_writer_tasks(n_files: int, file_bytes: int, sc: Any) -> int:
    """How many tasks write the record files (each file goes whole to one).

    One task per file cost more in task start-ups than in writing (793
    files at full size: 28 s, against 7 s in 14 tasks); a few tasks per
    core, but never so few that one holds more than ``_RECORD_TASK_BYTES``.
    """
    by_memory = math.ceil(n_files / max(1, _RECORD_TASK_BYTES // file_bytes))
    return max(1, min(n_files, max(_RECORD_TASKS_PER_CORE * sc.defaultParallelism, by_memory)))


def _plan_record_files(
    plan: ShardPlan, chromosomes: list[StagedChromosome], probabilities: Probabilities, sc: SparkContext
) -> ShardPlan:
    """``plan`` with its record files counted from stage 1's class counts, and each file's writing task."""
    rows_per_file, n_draws = plan.rows_per_record_file, plan.settings.negative_draws
    n_files = _record_file_counts(chromosomes, plan.cells_by_tf, probabilities, n_draws, rows_per_file)
    file_keys = [(key, n) for key, count in n_files.items() for n in range(count)]
    n_writers = _record_writer_tasks(len(file_keys), rows_per_file * plan.layout.record_bytes, sc)
    writer_of = {file_key: i % n_writers for i, file_key in enumerate(file_keys)}
    return plan.with_record_files(n_files, writer_of)


def _stage_label_files(
    sc: SparkContext, plan: ShardPlan, intervals: Broadcast
) -> tuple[dict[str, ReadReport], list[StagedChromosome]]:
    """Stage 1 on Spark, one task per label file: segregate every chromosome, write the test ones, stage the rest.

    Returns
    -------
    tuple
        Each TF's :class:`ReadReport`, and a :class:`StagedChromosome` per
        (TF, chromosome).
    """
    chroms, splits, settings = plan.chroms, plan.splits, plan.settings
    rows = (
        sc.parallelize(plan.label_files, len(plan.label_files))
        .flatMap(lambda job: _read_and_annotate(job, chroms, splits, intervals.value, settings))
        .collect()
    )
    reports = {row.tf: row.report for row in rows if isinstance(row, FileReport)}
    chromosomes = [row for row in rows if isinstance(row, StagedChromosome)]
    for tf in plan.tfs:
        log.info("%s: %d label lines, %d set aside as bad", tf, reports[tf].n_rows, len(reports[tf].rejected))
    return reports, chromosomes


def _write_shards(
    sc: SparkContext, plan: ShardPlan, chromosomes: list[StagedChromosome], probabilities: Probabilities
) -> list[ChromResult]:
    """Stage 2 on Spark, one task per staged (TF, chromosome): decide, write its shard and deal its records.

    Returns every chromosome's :class:`ChromResult`, stage 1's test ones first.
    """
    # The rest, largest first, so the stage does not end waiting on one.
    stored = sorted((row for row in chromosomes if row.result is None), key=lambda row: -row.n_bins)
    written = [(row.tf, row.chrom) for row in stored]
    results = [row.result for row in chromosomes if row.result is not None]
    cells_by_tf, settings = plan.cells_by_tf, plan.settings
    results += (
        sc.parallelize(written, max(1, len(written)))
        .mapPartitions(lambda keys: _write_partition(keys, cells_by_tf, probabilities, settings))
        .collect()
    )
    # Gone before the record files are written: on one machine the page
    # cache they held serves those writes.
    remove_folder(plan.staging_uri, ANNOTATED)
    return results


def _write_record_files(sc: SparkContext, plan: ShardPlan, results: list[ChromResult]) -> list[tuple[str, dict]]:
    """Stage 3 on Spark, a few tasks per core: gather the dealt records into the record files.

    Returns
    -------
    list of tuple
        ``(file key, entry)`` of each record file written.
    """
    writer_of = plan.settings.writer_of
    chunks_by_writer: dict[int, list[DealtChunk]] = defaultdict(list)
    for result in results:
        for chunk in result.dealt:
            chunks_by_writer[writer_of[(chunk.file_key, chunk.number)]].append(chunk)
    record_bytes, staging_uri, seed = plan.layout.record_bytes, plan.staging_uri, plan.settings.seed
    record_files = (
        sc.parallelize(list(chunks_by_writer.values()), max(1, len(chunks_by_writer)))
        .flatMap(lambda chunks: _gather_partition(chunks, record_bytes, staging_uri, seed))
        .collect()
    )
    remove_folder(plan.staging_uri, DEALT)
    return record_files


def _write_shards_and_manifest(
    sc: SparkContext,
    plan: ShardPlan,
    config: PipelineConfig,
    inputs: CheckedInputs,
    staged: tuple[dict[str, ReadReport], list[StagedChromosome]],
    proteins: dict[str, str],
) -> manifest.Manifest:
    """Stages 2 and 3 with the draw probabilities stage 1's counts give, then the manifest, in the staging folder."""
    reports, chromosomes = staged
    probabilities = _probabilities(chromosomes, plan.cells_by_tf, config.preprocess)
    plan = _plan_record_files(plan, chromosomes, probabilities, sc)
    results = _write_shards(sc, plan, chromosomes, probabilities)
    record_files = _write_record_files(sc, plan, results)
    fingerprint = inputs.fingerprint.result()
    built = shard_manifest(config, plan, fingerprint, reports, results, record_files, probabilities, proteins)
    manifest.write_manifest(plan.staging_uri, built, root=plan.shards_uri)
    return built


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
        add up to its input rows (:class:`tfbs.formats.manifest.ManifestMismatchError`).
    """
    started = time.monotonic()
    if inputs is None:
        inputs = check_and_fingerprint(config)
    existing = current_shards(config.shards_uri, inputs.fingerprint)
    if existing is not None:
        return existing
    proteins = read_protein_fasta(config.data.proteins_fasta)
    plan = plan_shards(config, inputs)
    sc = spark.sparkContext
    intervals = sc.broadcast(_side_intervals(config.data, plan.cells))
    try:
        staged = _stage_label_files(sc, plan, intervals)
        built = _write_shards_and_manifest(sc, plan, config, inputs, staged, proteins)
    except BaseException as err:
        # Ctrl-C too: an interrupted build leaves no staging folder behind
        # (a SIGKILLed one does; nothing reads it, and it is safe to delete).
        storage.delete_dir(plan.staging_uri)
        reason = _spark_error_reason(err) if isinstance(err, Exception) else None
        if reason and not isinstance(err, BadInputError):
            raise BadInputError.from_message(reason) from None
        raise
    storage.replace_dir(plan.staging_uri, plan.shards_uri, commit_marker=manifest.MANIFEST_NAME)
    total = sum(report.n_rows for report in staged[0].values())
    elapsed = time.monotonic() - started
    log.info(
        "shards committed to %s: %d label lines in %.1f s (%.0f lines/s)",
        plan.shards_uri,
        total,
        elapsed,
        total / elapsed,
    )
    return built
