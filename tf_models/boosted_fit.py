"""Fitting the gradient-boosted baseline (:mod:`tf_models.boosted`) on Spark, for one evaluation.

Three steps, each where its data is:

1. one Spark task per chromosome scans it once for every motif and writes
   its 50 bp block maxima (:func:`tf_models.motif_features.block_maxima`)
   under the report's ``baselines/motif_blocks/``;
2. Spark tasks turn the train split's rows of the default sampling
   (positives and every negative draw, in the training cells) into feature
   rows, which come back to the driver (a few dozen floats a row). Rows
   ``preprocess.cross_cell_negatives`` added are left out
   (:func:`tfbs.formats.draws.drawn_by_default`): the baseline is the
   reference a model is judged against, so it fits on the same rows
   whatever the model's sampling (on the cross-cell rows it scored lower
   on a new cell);
3. the driver fits one classifier per TF.

The test rows are scored where the model scores them
(:func:`tf_models.evaluate.predict_rows`), reading the same block files.
"""

from __future__ import annotations

import functools
import io
import logging
import time
from dataclasses import dataclass

import numpy as np
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from tf_models.baselines import motif_log_odds
from tf_models.boosted import BoostedInputs, feature_matrix, fit_boosted
from tf_models.expression_inputs import run_expression, run_genes
from tf_models.motif_features import bin_features, block_maxima
from tfbs import storage
from tfbs.config import PipelineConfig
from tfbs.formats.draws import drawn_by_default
from tfbs.formats.dream import TRAIN
from tfbs.formats.genome import load_chromosome, read_fai
from tfbs.formats.manifest import Manifest

log = logging.getLogger("tfbs.evaluate")

_ROW_COLUMNS = ["tf", "chrom", "start", "cell", "label_code", "dnase", "draw"]


@dataclass(frozen=True)
class BoostedBaseline:
    """A fitted baseline and what scoring a row needs: the block files, the inputs, one classifier per TF."""

    blocks_uri: str
    inputs: BoostedInputs
    #: The log-odds matrices of ``inputs.motifs``, in order.
    matrices: list[np.ndarray]
    models: dict
    n_training_rows: int

    def features(self, chrom: str, starts: np.ndarray, dnase: np.ndarray, cells: np.ndarray) -> np.ndarray:
        """The feature rows of bins of one chromosome (the block file read once per worker)."""
        return feature_matrix(self.inputs, bin_features(read_blocks(self.blocks_uri, chrom), starts), dnase, cells)


def blocks_file(blocks_uri: str, chrom: str) -> str:
    return f"{blocks_uri}/{chrom}.npy"


# A Python worker serves task after task: a chromosome's blocks are read by its first task only.
@functools.lru_cache(maxsize=2)
def read_blocks(blocks_uri: str, chrom: str) -> np.ndarray:
    """One chromosome's block maxima, as :func:`write_blocks` saved them."""
    with storage.open_input(blocks_file(blocks_uri, chrom), compression=None) as handle:
        return np.load(io.BytesIO(handle.read()))


def _write_blocks(fasta_uri: str, chrom: str, motifs: list[np.ndarray], blocks_uri: str) -> str:
    """Scan one chromosome and save its block maxima (a task)."""
    blocks = block_maxima(load_chromosome(fasta_uri, read_fai(fasta_uri)[chrom]), motifs)
    buffer = io.BytesIO()
    np.save(buffer, blocks)
    storage.write_bytes(blocks_file(blocks_uri, chrom), buffer.getvalue())
    return chrom


def boosted_inputs(config: PipelineConfig, cells: list[str]) -> tuple[BoostedInputs, list[np.ndarray]]:
    """The baseline's motifs (the TFs', then the partners'), and each cell's expression where the run has RNA-seq."""
    ev = config.evaluate
    named = {**ev.motifs, **ev.partner_motifs}
    matrices = motif_log_odds(ev.motif_db, named) if ev.motif_db else {}
    motifs = [name for name in named if name in matrices]
    expression = run_expression(config, cells)
    genes = run_genes(config) if expression else []
    return BoostedInputs(motifs, genes, expression), [matrices[name] for name in motifs]


def default_sampling_rows(rows, seed: int, probabilities: dict[str, tuple[float, float]]) -> list:
    """The rows of a partition the default sampling holds (:func:`tfbs.formats.draws.drawn_by_default`)."""
    groups: dict[tuple[str, str, str], list] = {}
    for row in rows:
        groups.setdefault((row.tf, row.cell, row.chrom), []).append(row)
    kept: list = []
    for (tf, cell, chrom), group in groups.items():
        starts, draws, dnase = (np.array([getattr(r, name) for r in group]) for name in ("start", "draw", "dnase"))
        drawn = drawn_by_default(seed, tf, cell, chrom, starts, draws, dnase, probabilities[f"{tf}/{cell}/{TRAIN}"])
        kept.extend(row for row, keep in zip(group, drawn) if keep)
    return kept


def _feature_rows(rows, baseline: BoostedBaseline):
    """Feature rows of a partition's training rows, a chromosome at a time: ``(tf, label, features)``."""
    rows = sorted(rows, key=lambda r: (r.chrom, r.start))
    for chrom in sorted({r.chrom for r in rows}):
        picked = [r for r in rows if r.chrom == chrom]
        features = baseline.features(
            chrom,
            np.array([r.start for r in picked]),
            np.array([r.dnase for r in picked]),
            np.array([r.cell for r in picked]),
        )
        for row, values in zip(picked, features):
            yield row.tf, int(row.label_code), values.tobytes()


def fit_boosted_baseline(
    spark: SparkSession, config: PipelineConfig, manifest: Manifest, report_dir: str
) -> BoostedBaseline | None:
    """Scan the genome for the baseline's motifs, gather the training rows' features, fit per TF.

    Returns
    -------
    BoostedBaseline or None
        None when the run has no motif to read (no ``evaluate.motif_db``).
    """
    started = time.monotonic()
    inputs, matrices = boosted_inputs(config, list(manifest.cells))
    if not matrices:
        log.info("no gradient-boosted baseline: evaluate.motif_db names no motif")
        return None
    blocks_uri = f"{report_dir}/baselines/motif_blocks"
    fasta_uri = config.data.genome_fasta
    sc = spark.sparkContext
    chroms = list(read_fai(fasta_uri))
    sc.parallelize(chroms, len(chroms)).map(lambda c: _write_blocks(fasta_uri, c, matrices, blocks_uri)).collect()
    baseline = BoostedBaseline(blocks_uri, inputs, matrices, {}, 0)
    files = [entry.path for entry in manifest.parquet[TRAIN]]
    rows = spark.read.parquet(*files).select(*_ROW_COLUMNS).where(~F.col("cell").isin(manifest.heldout_cells))
    seed, probabilities = config.preprocess.seed, manifest.draw_probabilities
    # Only cross-cell sampling writes rows the default sampling would not: otherwise nothing to redraw.
    redraw = config.preprocess.cross_cell_negatives
    gathered = rows.rdd.mapPartitions(
        lambda part: _feature_rows(default_sampling_rows(part, seed, probabilities) if redraw else part, baseline)
    ).collect()
    width = len(inputs.feature_names())
    tfs = np.array([tf for tf, _, _ in gathered])
    labels = np.array([label for _, label, _ in gathered], dtype=np.int64)
    features = np.frombuffer(b"".join(values for _, _, values in gathered), dtype=np.float32).reshape(-1, width)
    models = fit_boosted(features, labels, tfs)
    log.info(
        "gradient-boosted baseline: %d rows of the default sampling, %d features (%d motifs%s), fitted per TF in %.1f s",
        len(labels),
        width,
        len(inputs.motifs),
        f", expression of {len(inputs.genes)} genes" if inputs.genes else ", no RNA-seq",
        time.monotonic() - started,
    )
    return BoostedBaseline(blocks_uri, inputs, matrices, models, len(labels))
