"""Scoring the test chromosomes: Spark predicts, the driver applies the
official metrics (A removed, auROC, Davis-Goadrich auPRC, recall at FDR).

Prediction is distributed: each Spark task loads the exported SavedModel
once and scores its share of the test shards in batches. Only
``(tf, cell, label, score)`` come back to the driver.
"""

from __future__ import annotations

import json
import logging
import time
from collections import defaultdict
from collections.abc import Iterator

import numpy as np
from pyspark.sql import SparkSession

from preprocess.genome import gather_windows, load_chromosome, read_fai
from preprocess.splits import TEST
from tfbs import uri as storage
from tfbs.config import PipelineConfig

log = logging.getLogger("tfbs.evaluate")

_PREDICTION_COLUMNS = ["tf", "cell", "chrom", "start", "label_code", "tf_index", "cell_index", "dnase"]


def predict_rows(rows: Iterator, export_dir: str, batch_size: int, fasta_uri: str, window: int) -> Iterator[tuple]:
    """Score test rows with the exported model, cutting windows from the genome.

    Rows should come sorted by chromosome: one chromosome is held at a time.

    Yields
    ------
    tuple
        ``(tf, cell, chrom, start, label_code, probability)``.
    """
    import tensorflow as tf

    predict = tf.saved_model.load(export_dir).signatures["indexed"]
    fai = read_fai(fasta_uri)
    loaded: dict[str, np.ndarray] = {}

    def flush(batch: list) -> Iterator[tuple]:
        chrom = batch[0].chrom
        if chrom not in loaded:
            loaded.clear()
            loaded[chrom] = load_chromosome(fasta_uri, fai[chrom])
        windows = gather_windows(loaded[chrom], np.array([r.start for r in batch]), window)
        outputs = predict(
            dna=tf.constant([w.tobytes() for w in windows]),
            tf_index=tf.constant([r.tf_index for r in batch], tf.int32),
            cell_index=tf.constant([r.cell_index for r in batch], tf.int32),
            dnase=tf.constant([r.dnase for r in batch], tf.float32),
        )
        for r, p in zip(batch, outputs["probability"].numpy()):
            yield (r.tf, r.cell, r.chrom, r.start, r.label_code, float(p))

    batch: list = []
    for row in rows:
        if batch and (len(batch) == batch_size or row.chrom != batch[0].chrom):
            yield from flush(batch)
            batch = []
        batch.append(row)
    if batch:
        yield from flush(batch)


def score_groups(predictions: list[tuple]) -> tuple[dict, dict]:
    """Official metrics per ``TF/cell``; also the arrays for the curve plots."""
    from tf_models.metrics import score_predictions

    grouped: dict[str, tuple[list, list]] = defaultdict(lambda: ([], []))
    for tf_name, cell, _chrom, _start, label, probability in predictions:
        labels, scores = grouped[f"{tf_name}/{cell}"]
        labels.append(label)
        scores.append(probability)
    results, curves = {}, {}
    for key in sorted(grouped):
        labels, scores = (np.asarray(values) for values in grouped[key])
        results[key] = score_predictions(labels, scores)
        curves[key] = {"labels": labels, "scores": scores, **results[key]}
    return results, curves


def evaluate(spark: SparkSession, config: PipelineConfig, manifest: dict) -> dict:
    """Predict the test split, score it and write the report.

    Writes ``<report>/report.json``, ``<report>/curves.png`` and the
    per-bin predictions as Parquet under ``<report>/predictions``.

    Returns
    -------
    dict
        The report: per ``TF/cell`` metrics and their means.

    Raises
    ------
    RuntimeError
        If ``evaluate.min_mean_auroc`` is set and the mean auROC is below it.
    """
    from tf_models.curves_plot import plot_curves

    started = time.monotonic()
    export_dir = f"{config.model_uri}/export".removeprefix("file://")
    files = [entry["path"] for entry in manifest["parquet"][TEST]]
    test = spark.read.parquet(*files).select(*_PREDICTION_COLUMNS).sortWithinPartitions("chrom", "start")
    batch_size, fasta_uri, window = config.evaluate.batch_size, config.data.genome_fasta, manifest["window"]
    scored = test.rdd.mapPartitions(lambda rows: predict_rows(rows, export_dir, batch_size, fasta_uri, window))
    predictions = spark.createDataFrame(scored, "tf string, cell string, chrom string, start long, label int, probability double")
    # Written once and read back, so the model runs once for both the saved
    # predictions and the metrics.
    predictions.write.mode("overwrite").parquet(f"{config.report_uri}/predictions")
    rows = [tuple(r) for r in spark.read.parquet(f"{config.report_uri}/predictions").collect()]
    log.info("scored %d test rows in %.1f s", len(rows), time.monotonic() - started)

    results, curves = score_groups(rows)
    aurocs = [r["auroc"] for r in results.values()]
    auprcs = [r["auprc"] for r in results.values()]
    report = {
        "split": "test",
        "test_chroms": manifest["splits"]["test_chroms"],
        "model": f"{config.model_uri}/export",
        "config_digest": config.digest(),
        "results": results,
        "mean_auroc": float(np.mean(aurocs)),
        "mean_auprc": float(np.mean(auprcs)),
    }
    storage.write_text(f"{config.report_uri}/report.json", json.dumps(report, indent=2, sort_keys=True))
    local_report = config.report_uri.removeprefix("file://")
    if not storage.is_remote(config.report_uri):
        plot_curves(curves, f"{local_report}/curves.png")
    for key, result in results.items():
        log.info(
            "%-20s auROC %.3f auPRC %.3f recall@10%%FDR %.3f recall@50%%FDR %.3f (%d B, %d U)",
            key,
            result["auroc"],
            result["auprc"],
            result["recall_at_fdr_10"],
            result["recall_at_fdr_50"],
            result["n_pos"],
            result["n_neg"],
        )
    log.info("mean auROC %.3f, mean auPRC %.3f", report["mean_auroc"], report["mean_auprc"])
    floor = config.evaluate.min_mean_auroc
    if floor is not None and report["mean_auroc"] < floor:
        raise RuntimeError(f"mean auROC {report['mean_auroc']:.3f} is below evaluate.min_mean_auroc {floor}")
    return report
