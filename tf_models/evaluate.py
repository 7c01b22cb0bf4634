"""Scoring the test chromosomes: Spark predicts, the driver applies the
official metrics (A removed, auROC, Davis-Goadrich auPRC, recall at FDR).

Prediction is distributed: each Spark task loads the exported SavedModel
once and scores its share of the test shards in batches, and scores the
same rows with the motif-scan baseline. Only ``(tf, cell, label, scores)``
come back to the driver, which adds the generator's oracle and coarse-PWM
reference where there are (:mod:`tf_models.baselines`).

The gradient-boosted baseline fitted on the version's training rows is kept
with the version (:mod:`tf_models.kept_baseline`): ``tfbs predict`` joins it.

The model scored is the version of the current shards and configuration
(:mod:`tfbs.lineage`); its report goes into the version's folder. When the
report passes the configured floors, ``<run_dir>/models/LATEST`` moves to
the version and ``<run_dir>/report/`` gets a copy of its report and plots.
"""

from __future__ import annotations

import json
import logging
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
from pyspark.sql import SparkSession

from tf_models import MODEL_FORMAT
from tf_models.baselines import OracleTable, bin_motif_scores, motif_log_odds
from tf_models.boosted import predict_boosted
from tf_models.boosted_fit import BoostedBaseline, fit_boosted_baseline
from tf_models.kept_baseline import keep_baseline
from tf_models.model_dir import local_export
from tf_models.model_format import recorded_model_code
from tf_models.protocol import (
    BASELINES,
    JOINED,
    SCORERS,
    group_summary,
    headline,
    joined_probability,
    site_intervals,
)
from tfbs import lineage, storage
from tfbs.config import DataConfig, EvaluateConfig, PipelineConfig
from tfbs.errors import BelowFloorError
from tfbs.formats.dream import TEST
from tfbs.formats.genome import gather_windows, load_chromosome, read_fai
from tfbs.formats.manifest import Manifest
from tfbs.lineage import Lineage

log = logging.getLogger("tfbs.evaluate")


_PREDICTION_COLUMNS = ["tf", "cell", "chrom", "start", "label_code", "tf_index", "cell_index", "dnase"]


def predict_rows(
    rows: Iterable,
    export_uri: str,
    batch_size: int,
    fasta_uri: str,
    window: int,
    motifs: dict[str, np.ndarray],
    boosted: BoostedBaseline | None = None,
) -> Iterator[tuple]:
    """Score test rows with the exported model and the baselines, cutting windows from the genome.

    Rows should come sorted by chromosome: one chromosome is held at a time.

    Parameters
    ----------
    motifs
        ``{tf: log-odds matrix}`` of the motif-scan baseline; a TF without
        one gets NaN (and so does its DNase-weighted motif).
    boosted
        The fitted gradient-boosted baseline, or None (NaN).

    Yields
    ------
    tuple
        ``(tf, cell, chrom, start, label_code, probability, *baselines)``, the
        baselines in the order of :data:`tf_models.protocol.BASELINES`.
    """
    import tensorflow as tf

    predict = tf.saved_model.load(local_export(export_uri)).signatures["indexed"]
    fai = read_fai(fasta_uri)
    loaded: dict[str, np.ndarray] = {}
    best_possible = {name: float(matrix.max(axis=1).sum()) for name, matrix in motifs.items()}

    def flush(batch: list) -> Iterator[tuple]:
        chrom = batch[0].chrom
        if chrom not in loaded:
            loaded.clear()
            loaded[chrom] = load_chromosome(fasta_uri, fai[chrom])
        windows = gather_windows(loaded[chrom], np.array([r.start for r in batch]), window)
        dnase = np.array([r.dnase for r in batch], dtype=np.float64)
        outputs = predict(
            dna=tf.constant([w.tobytes() for w in windows]),
            tf_index=tf.constant([r.tf_index for r in batch], tf.int32),
            cell_index=tf.constant([r.cell_index for r in batch], tf.int32),
            dnase=tf.constant(dnase, tf.float32),
        )
        names = np.array([r.tf for r in batch])
        scan = np.full(len(batch), np.nan)
        relative = np.full(len(batch), np.nan)
        for name in set(names.tolist()) & motifs.keys():
            picked = names == name
            scan[picked] = bin_motif_scores(windows[picked], motifs[name])
            relative[picked] = np.clip(scan[picked] / best_possible[name], 0.0, 1.0)
        # The best match weighted by DNase; closed bins keep a hundredth of their match, so they still rank.
        # The boosted baseline scores whole chunks afterwards (with_boosted): a classifier call costs per call.
        scored = {"boosted": np.full(len(batch), np.nan), "dnase_motif": (dnase + 0.01) * relative, "dnase": dnase}
        columns = zip(batch, outputs["probability"].numpy(), *({**scored, "motif_scan": scan}[n] for n in BASELINES))
        for r, p, *baselines in columns:
            yield (r.tf, r.cell, r.chrom, r.start, r.label_code, float(p), *(float(b) for b in baselines))

    def batches() -> Iterator[tuple]:
        batch: list = []
        for row in rows:
            if batch and (len(batch) == batch_size or row.chrom != batch[0].chrom):
                yield from flush(batch)
                batch = []
            batch.append(row)
        if batch:
            yield from flush(batch)

    yield from batches() if boosted is None else with_boosted(batches(), boosted)


#: Rows the gradient-boosted baseline scores at a time: a classifier call costs about a millisecond whatever its size.
_BOOSTED_CHUNK = 65_536


def with_boosted(scored: Iterator[tuple], boosted: BoostedBaseline) -> Iterator[tuple]:
    """:func:`predict_rows`' rows with the gradient-boosted baseline's column filled, a chunk of one chromosome at a time."""
    chunk: list[tuple] = []

    # A row: tf, cell, chrom, start, label, probability, then BASELINES.
    boosted_at, dnase_at = 6 + BASELINES.index("boosted"), 6 + BASELINES.index("dnase")

    def flush() -> Iterator[tuple]:
        tfs, cells, chrom = (np.array([r[i] for r in chunk]) for i in (0, 1, 2))
        starts = np.array([r[3] for r in chunk], dtype=np.int64)
        dnase = np.array([r[dnase_at] for r in chunk], dtype=np.float64)
        probabilities = predict_boosted(boosted.models, boosted.features(str(chrom[0]), starts, dnase, cells), tfs)
        for row, value in zip(chunk, probabilities):
            yield (*row[:boosted_at], float(value), *row[boosted_at + 1 :])

    for row in scored:
        if chunk and (len(chunk) == _BOOSTED_CHUNK or row[2] != chunk[0][2]):
            yield from flush()
            chunk = []
        chunk.append(row)
    if chunk:
        yield from flush()


def score_groups(predictions: list[tuple], oracles: dict[str, dict[str, OracleTable]]) -> tuple[dict, dict, dict, dict]:
    """Official metrics per ``TF/cell`` for the model, its baselines and the two joined (:data:`tf_models.protocol.JOINED`).

    Parameters
    ----------
    predictions
        Rows of :func:`predict_rows`.
    oracles
        Per reference name (``oracle``, ``coarse_pwm_reference``), the
        generator's table of each TF that has one.

    Returns
    -------
    tuple
        The model's metrics per key, ``{key: {scorer: metrics}}`` of every other scorer, the
        arrays for the curve plots, and per key the arrays the site
        bootstrap reads (``chrom``, ``start``, ``label`` and every scorer's).
    """
    from tfbs.formats.metrics import score_predictions

    grouped: dict[tuple[str, str], list[tuple]] = defaultdict(list)
    for row in predictions:
        grouped[(row[0], row[1])].append(row)
    results, curves, arrays = {}, {}, {}
    baselines: dict[str, dict[str, dict]] = {}
    for tf_name, cell in sorted(grouped):
        key = f"{tf_name}/{cell}"
        _, _, chrom, starts, labels, model, *row_baselines = (np.asarray(c) for c in zip(*grouped[(tf_name, cell)]))
        results[key] = score_predictions(labels, model)
        curves[key] = {"labels": labels, "scores": model, **results[key]}
        scored = {"model": model.astype(np.float64)}
        for name, values in zip(BASELINES, row_baselines):
            values = values.astype(np.float64)
            if not np.isnan(values).any():
                scored[name] = values
        if "boosted" in scored:
            scored[JOINED] = joined_probability(scored["model"], scored["boosted"])
        for name, tables in oracles.items():
            if tf_name in tables:
                scored[name] = tables[tf_name].scores(cell, chrom, starts)
        baselines[key] = {name: score_predictions(labels, values) for name, values in scored.items() if name != "model"}
        arrays[key] = {"chrom": chrom, "start": starts, "label": labels, **scored}
    return results, baselines, curves, arrays


def _read_oracles(data: DataConfig, tfs: list[str]) -> dict[str, dict[str, OracleTable]]:
    """The generator's oracle and coarse-PWM reference of each TF that has them (generated data only)."""
    tables: dict[str, dict[str, OracleTable]] = {"oracle": {}, "coarse_pwm_reference": {}}
    for tf in tfs:
        for name, uri in data.generator_table_uris(tf).items():
            if storage.exists(uri):
                tables[name][tf] = OracleTable.read(uri)
    return tables


def _summary(results: dict, baselines: dict) -> dict:
    """Means of the model and each scorer, and the TF/cells where the model loses to the motif scan."""
    summary: dict[str, Any] = {
        "mean_auroc": float(np.mean([r["auroc"] for r in results.values()])),
        "mean_auprc": float(np.mean([r["auprc"] for r in results.values()])),
        "baseline_mean_auprc": {},
    }
    for name in SCORERS:
        scored = [b[name]["auprc"] for b in baselines.values() if name in b]
        if scored:
            summary["baseline_mean_auprc"][name] = float(np.mean(scored))
    summary["below_motif_scan"] = sorted(
        key for key, b in baselines.items() if "motif_scan" in b and results[key]["auprc"] <= b["motif_scan"]["auprc"]
    )
    return summary


def _below_floors(cfg: EvaluateConfig, report: dict) -> list[str]:
    """The configured floors the report's means fall below, in words.

    The margin floor compares the model with a baseline on the same TF/cells
    (every one scored, training and held-out cells), so a model that
    learnt nothing fails it however its auROC reads.
    """
    failures = []
    for metric, name, floor in (("auroc", "auROC", cfg.min_mean_auroc), ("auprc", "auPRC", cfg.min_mean_auprc)):
        value = report[f"mean_{metric}"]
        if floor is not None and value < floor:
            failures.append(f"mean {name} {value:.3f} is below evaluate.min_mean_{metric} {floor}")
    for name in cfg.margin_baselines if cfg.min_auprc_margin is not None else []:
        baseline = report["baseline_mean_auprc"].get(name)
        if baseline is None:
            failures.append(f"evaluate.margin_baselines: {name} was not scored, so no margin over it can be shown")
        elif report["mean_auprc"] - baseline < cfg.min_auprc_margin:
            failures.append(
                f"mean auPRC {report['mean_auprc']:.3f} is {report['mean_auprc'] - baseline:+.3f} over the "
                f"{name} baseline's {baseline:.3f}, below evaluate.min_auprc_margin {cfg.min_auprc_margin}"
            )
    return failures


def _copy(source: str, target: str) -> None:
    with storage.open_input(source, compression=None) as handle:
        storage.write_bytes(target, handle.read())


#: What ``<run_dir>/report/`` copies of the ``LATEST`` version's report.
RUN_REPORT_FILES = ("report.json", "curves.png", "baselines.png", "report.html", "page.json")


def _promote(config: PipelineConfig, version_lineage: Lineage, report: dict) -> None:
    """Copy the version's report to ``<run_dir>/report/``, then point ``LATEST`` at it.

    ``LATEST`` is written last: a run killed in between leaves it naming the
    version before, and evaluating again completes the move. Then versions
    beyond ``evaluate.keep_versions`` are deleted (:func:`tfbs.lineage.prune_versions`).
    """
    source, target = lineage.report_uri(config.run_dir, version_lineage.version), lineage.run_report_uri(config.run_dir)
    for name in RUN_REPORT_FILES:
        _copy(f"{source}/{name}", f"{target}/{name}")
    lineage.write_latest(config.run_dir, version_lineage, report["mean_auroc"], report["mean_auprc"])
    log.info("%s now names version %s", lineage.latest_uri(config.run_dir), version_lineage.version)
    if config.evaluate.keep_versions is not None:
        pruned = lineage.prune_versions(config.run_dir, config.evaluate.keep_versions)
        if pruned:
            log.info(
                "deleted %d older model version(s), keeping %d: %s",
                len(pruned),
                config.evaluate.keep_versions,
                ", ".join(pruned),
            )


def _predict_test(
    spark: SparkSession,
    config: PipelineConfig,
    manifest: Manifest,
    export_uri: str,
    report_dir: str,
    boosted: BoostedBaseline | None,
) -> list[tuple]:
    """Predict every test row with the exported model and the baselines; write the predictions under ``report_dir``.

    Returns
    -------
    list of tuple
        The predictions read back: ``(tf, cell, chrom, start, label, probability, *BASELINES)``.
    """
    files = [entry.path for entry in manifest.parquet[TEST]]
    test = spark.read.parquet(*files).select(*_PREDICTION_COLUMNS).sortWithinPartitions("chrom", "start")
    batch_size, fasta_uri, window = config.evaluate.batch_size, config.data.genome_fasta, manifest.window
    motifs = motif_log_odds(config.evaluate.motif_db, config.evaluate.motifs) if config.evaluate.motif_db else {}
    scored = test.rdd.mapPartitions(
        lambda rows: predict_rows(rows, export_uri, batch_size, fasta_uri, window, motifs, boosted)
    )
    schema = "tf string, cell string, chrom string, start long, label int, probability double, " + ", ".join(
        f"{name} double" for name in BASELINES
    )
    predictions = spark.createDataFrame(scored, schema)
    # Written once and read back, so the model runs once for both the saved
    # predictions and the metrics.
    predictions.write.mode("overwrite").parquet(f"{report_dir}/predictions")
    return [tuple(r) for r in spark.read.parquet(f"{report_dir}/predictions").collect()]


def _write_plots(report_dir: str, curves: dict, report: dict) -> None:
    """Write ``curves.png`` (PR and ROC) and ``baselines.png`` (auPRC beside the baselines) under ``report_dir``."""
    from tf_models.curves_plot import plot_auprc_bars, plot_curves

    results, baselines = report["results"], report["baselines"]
    storage.write_through_local(f"{report_dir}/curves.png", lambda path: plot_curves(curves, path))
    series = {"model": {key: r["auprc"] for key, r in results.items()}}
    for name in report["baseline_mean_auprc"]:
        series[name.replace("_", " ")] = {key: b[name]["auprc"] for key, b in baselines.items() if name in b}
    storage.write_through_local(
        f"{report_dir}/baselines.png",
        lambda path: plot_auprc_bars(series, path, "Test auPRC beside the baselines"),
    )


def _boosted_record(boosted: BoostedBaseline | None) -> dict | None:
    """What the report says of the gradient-boosted baseline: its features, settings and training rows."""
    if boosted is None:
        return None
    from tf_models.boosted import BOOSTED_SETTINGS

    return {
        "features": boosted.inputs.feature_names(),
        "settings": BOOSTED_SETTINGS,
        "training_rows": boosted.n_training_rows,
        "tfs": sorted(boosted.models),
    }


def _log_groups(report: dict) -> None:
    """One line per group of cells (:func:`tf_models.protocol.headline`); per-TF groups are in the reports."""
    for line in headline(report):
        log.info("%s", line)


def _log_scores(report: dict) -> None:
    """Log each TF/cell's scores beside its baselines, the means, and where the motif scan does better."""
    results, baselines = report["results"], report["baselines"]
    for key, result in results.items():
        beside = "".join(f" {name} {b['auprc']:.3f}" for name, b in baselines[key].items())
        log.info(
            "%-20s auROC %.3f auPRC %.3f recall@10%%FDR %.3f recall@50%%FDR %.3f (%d B, %d U) | auPRC%s",
            key,
            result["auroc"],
            result["auprc"],
            result["recall_at_fdr_10"],
            result["recall_at_fdr_50"],
            result["n_pos"],
            result["n_neg"],
            beside or " (no baseline)",
        )
    means = "".join(f", {name} {value:.3f}" for name, value in report["baseline_mean_auprc"].items())
    log.info("mean auROC %.3f, mean auPRC %.3f%s", report["mean_auroc"], report["mean_auprc"], means)
    _log_groups(report)
    if report["below_motif_scan"]:
        log.warning("the model does not beat the motif scan on %s", ", ".join(report["below_motif_scan"]))


def evaluate(spark: SparkSession, config: PipelineConfig, manifest: Manifest) -> dict:
    """Predict the test split, score it beside the baselines and write the report.

    The model is the version of ``manifest``'s shards and this configuration
    (or ``train.version``). Under ``<run_dir>/models/<version>/report/`` it
    writes ``report.json`` (with the version's lineage), ``curves.png`` (PR
    and ROC), ``baselines.png`` (auPRC of the model, the motif scan and the
    coarse-PWM reference and the oracle per TF/cell) and the per-bin predictions as Parquet
    (``predictions/``); under ``<run_dir>/models/<version>/boosted/``, the
    gradient-boosted baseline it fitted, which the version's submissions join
    (:mod:`tf_models.kept_baseline`). If the means pass ``evaluate.min_mean_auroc`` and
    ``evaluate.min_mean_auprc``, ``<run_dir>/models/LATEST`` moves to the
    version and ``<run_dir>/report/`` gets a copy of the report and plots.

    Returns
    -------
    dict
        The report: per ``TF/cell`` metrics of the model (``results``) and
        of the baselines (``baselines``), and their means.

    Raises
    ------
    MissingInputError
        If the version was never trained.
    tfbs.lineage.LineageError
        If ``train.version`` names a version of other shards or configuration.
    BelowFloorError
        If a floor is set and the mean is below it; ``LATEST`` is not moved.
    """
    from tf_models.report import write_html_report

    started = time.monotonic()
    version_lineage = lineage.require_lineage(
        config.run_dir, Lineage.of(config, manifest, MODEL_FORMAT, recorded_model_code())
    )
    export_uri = lineage.export_uri(config.run_dir, version_lineage.version)
    report_dir = lineage.report_uri(config.run_dir, version_lineage.version)
    boosted = fit_boosted_baseline(spark, config, manifest, report_dir)
    if boosted is not None:
        keep_baseline(lineage.boosted_uri(config.run_dir, version_lineage.version), boosted)
    rows = _predict_test(spark, config, manifest, export_uri, report_dir, boosted)
    log.info(
        "scored %d test rows of version %s in %.1f s", len(rows), version_lineage.version, time.monotonic() - started
    )

    results, baselines, curves, arrays = score_groups(rows, _read_oracles(config.data, manifest.tfs))
    ev = config.evaluate
    intervals = site_intervals(arrays, manifest.heldout_cells, ev.bootstrap_resamples, ev.bootstrap_seed)
    report = {
        "split": "test",
        "test_chroms": manifest.splits.test_chroms,
        "version": version_lineage.version,
        "model": export_uri,
        "lineage": version_lineage.model_dump(mode="json"),
        "config_digest": config.digest(),
        "heldout_cells": manifest.heldout_cells,
        "results": results,
        "baselines": baselines,
        "boosted_baseline": _boosted_record(boosted),
        "groups": group_summary(intervals),
        "intervals": intervals,
        **_summary(results, baselines),
    }
    failures = _below_floors(ev, report)
    report["floors"] = {
        "min_mean_auroc": ev.min_mean_auroc,
        "min_mean_auprc": ev.min_mean_auprc,
        "min_auprc_margin": ev.min_auprc_margin,
        "margin_baselines": ev.margin_baselines,
        "passed": not failures,
    }
    report_json = f"{report_dir}/report.json"
    storage.write_text(report_json, json.dumps(report, indent=2, sort_keys=True))
    _write_plots(report_dir, curves, report)
    _log_scores(report)
    write_html_report(config.run_dir, version_lineage.version, manifest, table_uris=config.data.generator_table_uris)
    if failures:
        # Recorded so a scheduled run does not retrain it on the same inputs (preprocess.changes).
        floors = (config.evaluate.min_mean_auroc, config.evaluate.min_mean_auprc)
        mean_scores = (report["mean_auroc"], report["mean_auprc"])
        lineage.write_floor_failure(config.run_dir, version_lineage, floors, mean_scores, failures)
        latest = lineage.read_latest(config.run_dir)
        kept = f"still names {latest.version}" if latest else "not written"
        raise BelowFloorError(f"{report_json}: {'; '.join(failures)}; {lineage.latest_uri(config.run_dir)} {kept}")
    lineage.clear_floor_failure(config.run_dir, version_lineage.version)
    _promote(config, version_lineage, report)
    return report
