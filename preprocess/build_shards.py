"""The preprocessing Spark job: labels in, balanced shards and manifest out.

Per TF, the label file is read by Spark and each line parsed and checked.
Bins are grouped by chromosome, and each task runs bedtools on its bins
(blacklist, DNase overlap per cell). Rows are split by chromosome, unbound
bins of train/valid are drawn for the configured U:B ratio (deterministic
hash of seed and bin), windows are read from the genome FASTA, and the kept
rows are written as Parquet (canonical) plus fixed-length record files for
training. The manifest accounts for every input row; it is written last and
the output directory is swapped in whole, so a half-written run is never
visible under the final name.
"""

from __future__ import annotations

import logging
import math
import re
import time
import uuid
from collections.abc import Iterator

from pyspark import SparkFiles
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from preprocess import manifest as manifest_io
from preprocess.dream_formats import LABEL_CODES, BadInputError, parse_label_line
from preprocess.inputs import check_preprocess_inputs, read_label_cells
from preprocess.proteins import read_protein_fasta
from preprocess.records import RecordLayout, write_record_file
from preprocess.segregate import segregate_bins
from preprocess.sequences import WindowReader
from preprocess.splits import TEST, TRAIN, VALID
from tfbs import uri as storage
from tfbs.config import PipelineConfig

log = logging.getLogger("tfbs.preprocess")

_SEGREGATED_SCHEMA = T.StructType(
    [
        T.StructField("tf", T.StringType(), False),
        T.StructField("chrom", T.StringType(), False),
        T.StructField("start", T.LongType(), False),
        T.StructField("stop", T.LongType(), False),
        T.StructField("line", T.LongType(), False),
        T.StructField("cell", T.StringType(), False),
        T.StructField("label", T.StringType(), False),
        T.StructField("dnase", T.FloatType(), False),
        T.StructField("blacklisted", T.BooleanType(), False),
    ]
)


def _parse_partition(lines: Iterator[tuple[str, int]], uri: str, n_cells: int, keep: list[int], bad_rows: str):
    """Parse ``(text, index)`` lines; yields ("ok", row) or ("bad", (line, reason))."""
    for text, index in lines:
        line_number = index + 1
        if line_number == 1:
            continue  # the header, checked on the driver
        try:
            row = parse_label_line(text, n_cells, uri, line_number)
        except BadInputError as err:
            if bad_rows == "fail":
                raise
            yield "bad", (line_number, err.reason)
            continue
        labels = "".join(row.labels[i] for i in keep)
        yield "ok", (row.chrom, row.start, row.stop, labels, line_number)


def _segregate_partition(rows, tf: str, cells: list[str], dnase_names: list[str], blacklist_name: str | None):
    dnase = [SparkFiles.get(name) for name in dnase_names]
    blacklist = SparkFiles.get(blacklist_name) if blacklist_name else None
    for record in segregate_bins((value for _, value in rows), cells, dnase, blacklist):
        yield (tf, *record)


def _spark_error_reason(err: Exception) -> str | None:
    """The BadInputError message inside a failed Spark job, if that is the cause."""
    found = re.search(r"BadInputError: (.+)", str(err))
    return found.group(1).strip() if found else None


def _segregate_tf(
    spark: SparkSession, config: PipelineConfig, tf: str, header_cells: list[str], cells: list[str], staged: dict
) -> tuple[DataFrame, int, list[tuple[int, str]]]:
    """Read, check and segregate one TF's label file.

    Returns the (bin, cell) DataFrame, the number of data lines, and the
    rejected lines as ``(line, reason)`` when bad rows are set aside.
    """
    sc = spark.sparkContext
    uri = config.data.labels_uri(tf)
    keep = [header_cells.index(cell) for cell in cells]
    lines = sc.textFile(uri).zipWithIndex().persist()
    parsed = lines.mapPartitions(
        lambda part: _parse_partition(part, uri, len(header_cells), keep, config.preprocess.bad_rows)
    ).persist()
    n_lines = lines.count() - 1
    rejected = parsed.filter(lambda kv: kv[0] == "bad").map(lambda kv: kv[1]).collect()
    good = parsed.filter(lambda kv: kv[0] == "ok").map(lambda kv: kv[1])
    chroms = sorted(good.map(lambda row: row[0]).distinct().collect())
    index_of = {chrom: i for i, chrom in enumerate(chroms)}
    by_chrom = good.keyBy(lambda row: row[0]).partitionBy(max(1, len(chroms)), lambda chrom: index_of[chrom])
    dnase_names = [staged[config.data.dnase_peaks_uri(cell)] for cell in cells]
    blacklist_name = staged.get(config.data.blacklist) if config.data.blacklist else None
    segregated = by_chrom.mapPartitions(
        lambda part: _segregate_partition(part, tf, cells, dnase_names, blacklist_name)
    )
    return spark.createDataFrame(segregated, _SEGREGATED_SCHEMA), n_lines, rejected


def _with_outcomes(segregated: DataFrame, config: PipelineConfig) -> DataFrame:
    """Add ``split`` and ``outcome`` (before windows) to every (bin, cell) row."""
    pp = config.preprocess
    split = (
        F.when(F.col("chrom").isin(pp.test_chroms), F.lit(TEST))
        .when(F.col("chrom").isin(pp.valid_chroms), F.lit(VALID))
        .otherwise(F.lit(TRAIN))
    )
    frame = segregated.withColumn("split", split)
    eligible = frame.filter(~F.col("blacklisted") & (F.col("split") != TEST))
    is_open = F.col("dnase") > 0
    class_counts = eligible.groupBy("tf", "cell", "split").agg(
        F.sum(F.when(F.col("label") == "B", 1).otherwise(0)).alias("n_bound"),
        F.sum(F.when((F.col("label") == "U") & is_open, 1).otherwise(0)).alias("n_open"),
        F.sum(F.when((F.col("label") == "U") & ~is_open, 1).otherwise(0)).alias("n_closed"),
    )
    # Draw probabilities so that U:B comes out at the ratio, with the
    # configured share of the U bins taken from open chromatin: those are the
    # negatives a model cannot reject on accessibility alone. If there are
    # too few open ones, closed ones make up the rest.
    wanted = F.col("n_bound") * pp.negatives_per_positive
    wanted_open = F.least(F.col("n_open"), wanted * pp.hard_negative_fraction)
    draw = class_counts.select(
        "tf",
        "cell",
        "split",
        F.least(F.lit(1.0), wanted_open / F.greatest(F.col("n_open"), F.lit(1))).alias("p_open"),
        F.least(F.lit(1.0), (wanted - wanted_open) / F.greatest(F.col("n_closed"), F.lit(1))).alias("p_closed"),
    )
    uniform = (F.abs(F.xxhash64(F.lit(pp.seed), "tf", "cell", "chrom", "start")) % 1_000_000) / 1_000_000.0
    frame = frame.join(F.broadcast(draw), ["tf", "cell", "split"], "left")
    outcome = (
        F.when(F.col("blacklisted"), F.lit("excluded_blacklist"))
        .when(F.col("split") == TEST, F.lit("kept"))
        .when(F.col("label") == "A", F.lit("excluded_ambiguous"))
        .when(F.col("label") == "B", F.lit("kept"))
        .when(uniform < F.when(is_open, F.col("p_open")).otherwise(F.col("p_closed")), F.lit("kept"))
        .otherwise(F.lit("dropped_sampling"))
    )
    return frame.withColumn("outcome", outcome).drop("p_open", "p_closed")


def _windows_partition(rows, fasta_name: str, window: int, fasta_uri: str):
    reader = WindowReader(SparkFiles.get(fasta_name), window)
    known = reader.chromosomes()
    for row in rows:
        if row.chrom not in known:
            raise BadInputError(fasta_uri, 0, f"chromosome {row.chrom} (label line {row.line}) not in the FASTA")
        yield (*row, reader.read(row.chrom, row.start))


def _attach_windows(kept: DataFrame, config: PipelineConfig, fasta_name: str) -> DataFrame:
    schema = T.StructType([*kept.schema.fields, T.StructField("sequence", T.BinaryType(), True)])
    window, fasta_uri = config.preprocess.window, config.data.genome_fasta
    rows = kept.sortWithinPartitions("chrom", "start").rdd.mapPartitions(
        lambda part: _windows_partition(part, fasta_name, window, fasta_uri)
    )
    return kept.sparkSession.createDataFrame(rows, schema)


def _write_records(shards: DataFrame, split: str, out_uri: str, layout: RecordLayout, config: PipelineConfig):
    """Write one split as shuffled fixed-length record files; returns their list."""
    rows = shards.filter(F.col("split") == split)
    n_rows = rows.count()
    if n_rows == 0:
        return []
    n_files = max(1, math.ceil(n_rows / config.preprocess.rows_per_record_file))
    order = F.xxhash64(F.lit(config.preprocess.seed + 1), "tf", "cell", "chrom", "start")
    shuffled = rows.withColumn("order", order).repartition(n_files, "order").sortWithinPartitions("order")
    columns = shuffled.select("sequence", "label_code", "tf_index", "cell_index", "dnase")

    def write_partition(index: int, part):
        path = f"{out_uri}/records/{split}/part-{index:05d}.rec"
        count = write_record_file(((r[0], r[1], r[2], r[3], r[4]) for r in part), path, layout)
        if count:
            yield {"path": path, "rows": count}

    return sorted(columns.rdd.mapPartitionsWithIndex(write_partition).collect(), key=lambda f: f["path"])


def _stage_files(spark: SparkSession, uris: list[str]) -> dict[str, str]:
    """Ship side inputs to every executor; returns ``{uri: SparkFiles name}``."""
    staged = {}
    for uri in uris:
        spark.sparkContext.addFile(uri)
        staged[uri] = uri.rsplit("/", 1)[-1]
    return staged


def build_shards(spark: SparkSession, config: PipelineConfig) -> dict:
    """Run preprocessing end to end and return the manifest.

    Parameters
    ----------
    spark
        An active session (``local[*]``, ``local-cluster`` or YARN).
    config
        The pipeline configuration; reads ``data`` and ``preprocess``,
        writes under ``config.shards_uri``.

    Returns
    -------
    dict
        The manifest written to ``<shards>/manifest.json``.

    Raises
    ------
    BadInputError
        A malformed input line (``bad_rows=fail``), naming file and line.
    ManifestMismatchError
        If the outcome counts do not add up to the input rows.
    """
    started = time.monotonic()
    data, pp = config.data, config.preprocess
    cells_by_tf = check_preprocess_inputs(data)
    tfs = list(data.tfs)
    all_cells = sorted({cell for cells in cells_by_tf.values() for cell in cells})
    proteins = read_protein_fasta(data.proteins_fasta)
    layout = RecordLayout(pp.window)
    side_inputs = [data.genome_fasta, f"{data.genome_fasta}.fai"]
    side_inputs += sorted({data.dnase_peaks_uri(cell) for cell in all_cells})
    if data.blacklist:
        side_inputs.append(data.blacklist)
    staged = _stage_files(spark, side_inputs)

    final_uri = config.shards_uri
    staging_uri = f"{final_uri}._staging-{uuid.uuid4().hex[:8]}"
    frames, input_rows, rejected_by_tf = [], {}, {}
    try:
        for tf in tfs:
            frame, n_lines, rejected = _segregate_tf(
                spark, config, tf, read_label_cells(data.labels_uri(tf)), cells_by_tf[tf], staged
            )
            frames.append(frame)
            input_rows[tf] = n_lines
            rejected_by_tf[tf] = rejected
            log.info("%s: %d label lines, %d set aside as bad", tf, n_lines, len(rejected))
        segregated = frames[0]
        for frame in frames[1:]:
            segregated = segregated.unionByName(frame)
        decided = _with_outcomes(segregated, config).persist()

        tf_index = F.create_map(*[x for i, tf in enumerate(tfs) for x in (F.lit(tf), F.lit(i))])
        cell_index = F.create_map(*[x for i, c in enumerate(all_cells) for x in (F.lit(c), F.lit(i))])
        label_code = F.create_map(*[x for k, v in LABEL_CODES.items() for x in (F.lit(k), F.lit(v))])
        kept = _attach_windows(decided.filter(F.col("outcome") == "kept"), config, staged[data.genome_fasta])
        kept = kept.withColumn(
            "outcome", F.when(F.col("sequence").isNull(), F.lit("dropped_window_out_of_bounds")).otherwise("kept")
        ).persist()
        shards = (
            kept.filter(F.col("outcome") == "kept")
            .withColumn("tf_index", tf_index[F.col("tf")].cast("int"))
            .withColumn("cell_index", cell_index[F.col("cell")].cast("int"))
            .withColumn("label_code", label_code[F.col("label")].cast("byte"))
            .drop("outcome", "blacklisted", "line")
        )
        parquet_uri = f"{staging_uri}/parquet"
        shards.write.partitionBy("split", "tf").parquet(parquet_uri)
        log.info("parquet shards written to %s", parquet_uri)
        records = {
            split: _write_records(shards, split, staging_uri, layout, config) for split in (TRAIN, VALID)
        }

        outcome_rows = (
            decided.filter(F.col("outcome") != "kept")
            .unionByName(kept.select(*decided.columns))
            .groupBy("tf", "cell", "outcome", "split", "label")
            .count()
            .collect()
        )
        counts = manifest_io.tally_outcomes(
            (r["tf"], r["cell"], r["outcome"], r["split"], r["label"], r["count"]) for r in outcome_rows
        )
        for tf, rejected in rejected_by_tf.items():
            for cell in cells_by_tf[tf]:
                if rejected:
                    counts[tf][cell]["rejected_bad_line"] = len(rejected)
        manifest_io.check_accounting(counts, input_rows)
        for tf in tfs:
            for cell, outcomes in sorted(counts[tf].items()):
                kept_by_split = {split: sum(n.values()) for split, n in outcomes["kept"].items()}
                others = {key: value for key, value in outcomes.items() if key != "kept"}
                log.info("%s/%s: %d input rows = kept %s + %s", tf, cell, input_rows[tf], kept_by_split, others)
        manifest = {
            "schema_version": manifest_io.SCHEMA_VERSION,
            "config_digest": config.digest(),
            "created_unix": int(time.time()),
            "tfs": tfs,
            "cells": all_cells,
            "cells_by_tf": cells_by_tf,
            "splits": {"test_chroms": pp.test_chroms, "valid_chroms": pp.valid_chroms},
            "window": pp.window,
            "record_layout": layout.to_dict(),
            "inputs": {
                tf: {
                    "uri": data.labels_uri(tf),
                    "input_rows": input_rows[tf],
                    "rejected": [
                        {"line": line, "reason": reason} for (line, reason) in sorted(rejected_by_tf[tf])
                    ],
                }
                for tf in tfs
            },
            "counts": counts,
            "parquet": f"{final_uri}/parquet",
            "records": {
                split: [{**f, "path": f["path"].replace(staging_uri, final_uri, 1)} for f in files]
                for split, files in records.items()
            },
            "proteins": {tf: proteins[tf] for tf in tfs},
        }
        manifest_io.write_manifest(staging_uri, manifest)
        decided.unpersist()
        kept.unpersist()
    except Exception as err:
        storage.delete_dir(staging_uri)
        reason = _spark_error_reason(err)
        if reason and not isinstance(err, BadInputError):
            raise BadInputError.from_message(reason) from None
        raise
    storage.replace_dir(staging_uri, final_uri)
    log.info("shards committed to %s in %.1f s", final_uri, time.monotonic() - started)
    return manifest
