"""Predictions for a regions file, or every bin of the genome, written as DREAM submissions.

``F.<TF>.<CELL>.tab.gz``: no header, ``chr start stop probability``, rows
in exactly the order of the regions (ladder or test) file, or of the
genome's bins (:func:`tfbs.formats.submission.genome_bins`). The TF's protein comes
from the protein FASTA, so a TF the model never saw can be scored too. Where
the version's evaluation kept its gradient-boosted baseline, the
probability is the network's joined to it (:mod:`tf_models.kept_baseline`,
``predict.joined``); a TF the baseline never classified gets the network's.

The regions are cut into parts of ``predict.rows_per_part`` consecutive
rows. One Spark task scores a part for every TF/cell of the run: it cuts
the windows from the FASTA once, scores them in batches with the model its
Python worker loaded once, and writes each TF/cell's rows as one gzip
member, ``<submission>.parts-<key>/part-NNNNN.gz``. The driver then joins
the members in order into the submission (several gzip members make one
gzip file) without reading a row, and deletes the parts. A rerun after a
failure keeps the parts already written; the key digests the model, the
regions, the TF/cell, the part size and the scorer, so a part is never
taken from another prediction.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import logging
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import groupby
from typing import NamedTuple

import numpy as np
from pyspark import RDD
from pyspark.sql import SparkSession

from tf_models.kept_baseline import KeptBaseline, joined_baseline, submission_scorers
from tf_models.model_dir import local_export
from tf_models.protocol import JOINED, joined_probability
from tfbs import storage
from tfbs.config import PipelineConfig
from tfbs.errors import BadInputError, bad_input_in
from tfbs.formats.annotate import dnase_proximity
from tfbs.formats.dream import BIN_SIZE, BIN_STEP, read_dnase_peaks
from tfbs.formats.genome import gather_windows, load_chromosome, read_fai
from tfbs.formats.proteins import read_protein_fasta
from tfbs.formats.submission import bins_in
from tfbs.launch.session import stage_progress
from tfbs.lineage import read_export_metadata

log = logging.getLogger("tfbs.predict")

Region = tuple[str, int, int]


@dataclass(frozen=True)
class Target:
    """One submission of a run: a TF in a cell, written to ``out_uri``."""

    tf: str
    cell: str
    out_uri: str


class _Scored(NamedTuple):
    """One target as the tasks score it."""

    protein: str
    cell_index: int
    cell: str
    parts_dir: str
    #: Joined to the kept baseline's classifier of this TF, or None: the network alone.
    joined_tf: str | None


@dataclass(frozen=True)
class _Scoring:
    """What every task needs, shipped once with the closure."""

    export_uri: str
    fasta_uri: str
    window: int
    batch: int
    targets: tuple[_Scored, ...]
    #: The version's gradient-boosted baseline, which the targets with a ``joined_tf`` join.
    kept: KeptBaseline | None


def _parse_regions(lines: Iterable[tuple[str, int]], uri: str, chrom_sizes: dict[str, int]) -> Iterator[tuple]:
    """``(index, (chrom, start, stop))`` of each ``(line, index)`` of a regions BED, checked.

    Raises
    ------
    BadInputError
        Naming file, line and reason: fewer than three columns, coordinates
        that are not non-negative integers, start not before stop, a
        chromosome the genome lacks, or a region past its end.
    """
    for text, index in lines:
        line, fields = index + 1, text.rstrip("\r").split("\t")
        if len(fields) < 3:
            raise BadInputError(uri, line, f"expected chr, start, stop; found {len(fields)} column(s)")
        chrom, start_text, stop_text = fields[:3]
        if not (start_text.isascii() and start_text.isdigit() and stop_text.isascii() and stop_text.isdigit()):
            raise BadInputError(uri, line, f"start/stop not non-negative integers: {start_text!r}, {stop_text!r}")
        start, stop = int(start_text), int(stop_text)
        if start >= stop:
            raise BadInputError(uri, line, f"start {start} is not before stop {stop}")
        if chrom not in chrom_sizes:
            raise BadInputError(uri, line, f"chromosome {chrom!r} is not in the genome FASTA")
        if stop > chrom_sizes[chrom]:
            raise BadInputError(uri, line, f"stop {stop} is beyond the end of {chrom} ({chrom_sizes[chrom]} bp)")
        yield index, (chrom, start, stop)


def _part_uri(parts_dir: str, part: int) -> str:
    return f"{parts_dir}/part-{part:05d}.gz"


# A Python worker serves task after task (spark.python.worker.reuse): the
# model and the last chromosome are loaded by its first task, not by each.
@functools.lru_cache(maxsize=1)
def _serving(export_uri: str):
    import tensorflow as tf

    return tf.saved_model.load(local_export(export_uri)).signatures["serving_default"]


@functools.lru_cache(maxsize=1)
def _chromosome(fasta_uri: str, chrom: str) -> np.ndarray:
    return load_chromosome(fasta_uri, read_fai(fasta_uri)[chrom])


def _probabilities(
    scoring: _Scoring, targets: list[int], chrom: str, starts: np.ndarray, is_open: dict[str, np.ndarray]
) -> dict[int, np.ndarray]:
    """Per target (by index), the probability of each bin of ``chrom`` starting at ``starts``.

    The network's, joined to the kept baseline's for the targets that name a ``joined_tf``.
    """
    import tensorflow as tf

    serve = _serving(scoring.export_uri)
    sequence = _chromosome(scoring.fasta_uri, chrom)
    scores: dict[int, list[np.ndarray]] = {i: [] for i in targets}
    for first in range(0, len(starts), scoring.batch):
        chunk = slice(first, first + scoring.batch)
        windows = np.ascontiguousarray(gather_windows(sequence, starts[chunk], scoring.window))
        # One string per window, straight from the uint8 rows (a window holds no NUL byte).
        dna, n = tf.constant(windows.view(f"S{scoring.window}").ravel()), len(windows)
        for i in targets:
            target = scoring.targets[i]
            scores[i].append(
                serve(
                    dna=dna,
                    protein=tf.constant([target.protein.encode()] * n),
                    cell_index=tf.constant([target.cell_index] * n, tf.int32),
                    dnase=tf.constant(is_open[target.cell][chunk]),
                )["probability"].numpy()
            )
    probabilities = {i: np.concatenate(parts) for i, parts in scores.items()}
    joined = {i: scoring.targets[i] for i in targets if scoring.targets[i].joined_tf is not None}
    if joined and scoring.kept is not None:
        motif_features = scoring.kept.motif_features(sequence, starts)
        for i, target in joined.items():
            tf_name = str(target.joined_tf)
            boosted = scoring.kept.probabilities(motif_features, is_open[target.cell], target.cell, tf_name)
            probabilities[i] = joined_probability(probabilities[i], boosted)
    return probabilities


def _score_part(part: int, regions: list[Region], scoring: _Scoring, dnase: dict) -> Iterator[tuple[int, int, int]]:
    """Score one part's regions (in order) for every target not yet written; yields ``(part, rows, written)``."""
    missing = [i for i, target in enumerate(scoring.targets) if not storage.exists(_part_uri(target.parts_dir, part))]
    if not missing:
        yield part, len(regions), 0
        return
    cells = {scoring.targets[i].cell for i in missing}
    texts: dict[int, list[str]] = {i: [] for i in missing}
    # Consecutive regions of one chromosome share its sequence and one bedtools run.
    for chrom, grouped in groupby(regions, key=lambda region: region[0]):
        run = list(grouped)
        starts = np.fromiter((start for _, start, _ in run), np.int64, len(run))
        scores = _probabilities(
            scoring,
            missing,
            chrom,
            starts,
            dnase_proximity(chrom, starts, {cell: dnase.get(cell, {}) for cell in cells}),
        )
        prefixes = [f"{c}\t{s}\t{e}\t" for c, s, e in run]
        for i, probabilities in scores.items():
            texts[i].append("".join(f"{prefix}{p:.6f}\n" for prefix, p in zip(prefixes, probabilities.tolist())))
    for i in missing:
        member = gzip.compress("".join(texts[i]).encode(), mtime=0)
        storage.write_bytes(_part_uri(scoring.targets[i].parts_dir, part), member)
    yield part, len(regions), len(missing)


def _genome_parts(fasta_uri: str, rows_per_part: int) -> list[list[tuple[str, int, int]]]:
    """Every bin of the genome as parts of ``rows_per_part`` bins: per part, its ``(chrom, first bin, bins)`` runs."""
    parts: list[list[tuple[str, int, int]]] = [[]]
    room = rows_per_part
    for chrom, entry in read_fai(fasta_uri).items():
        first, bins = 0, bins_in(entry.length)
        while first < bins:
            if room == 0:
                parts.append([])
                room = rows_per_part
            take = min(room, bins - first)
            parts[-1].append((chrom, first, take))
            first, room = first + take, room - take
    return parts if parts[0] else []


def _genome_regions(runs: list[tuple[str, int, int]]) -> list[Region]:
    return [
        (chrom, start, start + BIN_SIZE)
        for chrom, first, bins in runs
        for start in range(first * BIN_STEP, (first + bins) * BIN_STEP, BIN_STEP)
    ]


def _parts_key(
    export_uri: str, metadata: dict, regions_digest: str, target: Target, rows_per_part: int, scorer: str
) -> str:
    identity = [export_uri, metadata, regions_digest, target.tf, target.cell, rows_per_part, scorer]
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]


def _regions_by_part(indexed: RDD, regions_uri: str, fasta_uri: str, rows: int, rows_per_part: int) -> RDD:
    """The regions file's ``(line, index)`` pairs, checked, as one Spark partition of consecutive rows per part."""
    sizes = {chrom: entry.length for chrom, entry in read_fai(fasta_uri).items()}
    checked = indexed.mapPartitions(lambda lines: _parse_regions(lines, regions_uri, sizes))
    by_part: RDD = checked.partitionBy(math.ceil(rows / rows_per_part), lambda index: index // rows_per_part)
    return by_part.mapPartitions(lambda items: [[region for _, region in sorted(items)]])


def predict_targets(
    spark: SparkSession, config: PipelineConfig, export_uri: str, regions_uri: str | None, targets: list[Target]
) -> int:
    """Score every region for each target with the model exported at ``export_uri``; returns the rows per submission.

    Parameters
    ----------
    regions_uri
        A regions BED(.gz), or None for every bin of the genome.
    targets
        The TF/cells to score, each with its submission's URI.

    Raises
    ------
    BadInputError
        If a cell is unknown to the model, a TF has no protein sequence, or
        a region line is malformed.
    """
    metadata = read_export_metadata(export_uri)
    proteins = read_protein_fasta(config.data.proteins_fasta)
    scorers = submission_scorers(config, metadata["version"], sorted({t.tf for t in targets}))
    # What, if anything, ties the model to the shards' cells. Older exports say nothing of the cell type: they read it.
    if metadata.get("uses_cell_type", True):
        known_only = "the cell type (a model trained with train.model.use_cell_type: false scores any cell with DNase)"
    elif metadata.get("uses_expression", False):
        known_only = "their expression (train it with that cell's RNA-seq among the shards' cells, held out if need be)"
    else:
        known_only = None
    for target in targets:
        if known_only and target.cell not in metadata["cells"]:
            raise BadInputError(
                export_uri, 0, f"the model knows cells {metadata['cells']}, not {target.cell}: it reads {known_only}"
            )
        if target.tf not in proteins:
            raise BadInputError(config.data.proteins_fasta, 0, f"no protein sequence named {target.tf}")
    joined = sorted(tf for tf, scorer in scorers.items() if scorer == JOINED)
    kept = joined_baseline(config, metadata["version"], sorted({t.cell for t in targets})) if joined else None
    if joined:
        log.info("the network joined to its version's gradient-boosted baseline scores %s", ", ".join(joined))
    sc, fasta_uri = spark.sparkContext, config.data.genome_fasta
    if regions_uri is None:
        regions_digest = storage.blake3_of(f"{fasta_uri}.fai")[0] + f":{BIN_SIZE}:{BIN_STEP}"
        rows = sum(bins_in(entry.length) for entry in read_fai(fasta_uri).values())
        if rows == 0:
            raise BadInputError(fasta_uri, 0, f"no chromosome of the genome holds a {BIN_SIZE} bp bin")
    else:
        regions_digest = storage.blake3_of(regions_uri)[0]
        indexed = sc.textFile(regions_uri).zipWithIndex()
        rows = indexed.count()
        if rows == 0:
            raise BadInputError(regions_uri, 0, "no regions (the file is empty)")
    # At least a part per core, so that a small run still uses every core.
    rows_per_part = max(1, min(config.predict.rows_per_part, math.ceil(rows / sc.defaultParallelism)))
    parts_dirs = [
        f"{t.out_uri}{storage.PARTS_INFIX}{_parts_key(export_uri, metadata, regions_digest, t, rows_per_part, scorers[t.tf])}"
        for t in targets
    ]
    scoring = _Scoring(
        export_uri,
        fasta_uri,
        metadata["window"],
        config.predict.batch_size,
        tuple(
            # A model that ignores the cell type takes any index: the cell speaks through its DNase.
            _Scored(
                proteins[t.tf],
                metadata["cells"].index(t.cell) if t.cell in metadata["cells"] else 0,
                t.cell,
                parts_dir,
                t.tf if scorers[t.tf] == JOINED else None,
            )
            for t, parts_dir in zip(targets, parts_dirs)
        ),
        kept,
    )
    # A model trained without DNase ignores the input: no peaks are needed.
    cells = sorted({t.cell for t in targets}) if metadata.get("uses_dnase", True) else []
    dnase = sc.broadcast({cell: read_dnase_peaks(config.data.dnase_peaks_uri(cell)) for cell in cells})

    if regions_uri is None:
        runs = _genome_parts(fasta_uri, rows_per_part)
        parts = sc.parallelize(runs, len(runs)).map(_genome_regions)
    else:
        parts = _regions_by_part(indexed, regions_uri, fasta_uri, rows, rows_per_part)
    count = parts.getNumPartitions()
    log.info("scoring %s regions for %d TF/cell(s) in %d parts", f"{rows:,}", len(targets), count)
    scored = parts.mapPartitionsWithIndex(
        lambda part, regions: (result for batch in regions for result in _score_part(part, batch, scoring, dnase.value))
    )
    try:
        with stage_progress(spark, "predict", count, rows_per_part, "regions"):
            outcomes = scored.collect()  # a (part, rows, written) triple per part
    except Exception as err:
        # A bad region line fails a task; the driver reports it in one line.
        bad = bad_input_in(err)
        if bad is None:
            raise
        raise bad from None
    reused = sum(1 for _, _, written in outcomes if written < len(targets))
    if reused:
        log.info("%d of %d parts kept from an earlier, interrupted run", reused, count)
    for target, parts_dir in zip(targets, parts_dirs):
        storage.concatenate([_part_uri(parts_dir, part) for part in range(count)], target.out_uri)
        storage.delete_dir(parts_dir)
        log.info("wrote %s predictions to %s", f"{rows:,}", target.out_uri)
    return rows


def predict_regions(
    spark: SparkSession,
    config: PipelineConfig,
    export_uri: str,
    regions_uri: str | None,
    tf_name: str,
    cell: str,
    out_uri: str,
) -> int:
    """:func:`predict_targets` for one TF/cell; returns the row count."""
    return predict_targets(spark, config, export_uri, regions_uri, [Target(tf_name, cell, out_uri)])
