"""Predictions for a regions file, written as a DREAM submission.

``F.<TF>.<CELL>.tab.gz``: no header, ``chr start stop probability``, rows
in exactly the order of the regions (ladder or test) file. The TF's protein
comes from the protein FASTA, so a TF the model never saw can be scored too.
"""

from __future__ import annotations

import gzip
import io
import logging
from collections.abc import Iterator

from pyspark import SparkFiles
from pyspark.sql import SparkSession

from preprocess.dream_formats import BadInputError
from preprocess.proteins import read_protein_fasta
from preprocess.segregate import segregate_bins
from preprocess.sequences import WindowReader
from tfbs import uri as storage
from tfbs.config import PipelineConfig

log = logging.getLogger("tfbs.predict")


def _parse_regions(lines: Iterator[tuple[str, int]], uri: str) -> Iterator[tuple]:
    for text, index in lines:
        fields = text.split("\t")
        try:
            chrom, start, stop = fields[0], int(fields[1]), int(fields[2])
        except (IndexError, ValueError):
            raise BadInputError(uri, index + 1, "expected chr, start, stop") from None
        yield chrom, start, stop, "U", index


def _score_partition(rows, names: dict, window: int, protein: str, cell_index: int, export_dir: str, batch: int):
    import tensorflow as tf

    serve = tf.saved_model.load(export_dir).signatures["serving_default"]
    reader = WindowReader(SparkFiles.get(names["fasta"]), window, pad=True)
    annotated = segregate_bins((value for _, value in rows), ["cell"], [SparkFiles.get(names["dnase"])], None)
    pending: list = []

    def flush() -> Iterator[tuple]:
        out = serve(
            dna=tf.constant([reader.read(r.chrom, r.start) for r in pending]),
            protein=tf.constant([protein.encode()] * len(pending)),
            cell_index=tf.constant([cell_index] * len(pending), tf.int32),
            dnase=tf.constant([r.dnase for r in pending], tf.float32),
        )["probability"].numpy()
        for r, p in zip(pending, out):
            yield r.line, (r.chrom, r.start, r.stop, float(p))

    for record in annotated:
        pending.append(record)
        if len(pending) == batch:
            yield from flush()
            pending = []
    if pending:
        yield from flush()


def predict_regions(
    spark: SparkSession, config: PipelineConfig, regions_uri: str, tf_name: str, cell: str, out_uri: str
) -> int:
    """Score every region for ``tf_name`` in ``cell``; returns the row count.

    Raises
    ------
    BadInputError
        If the cell is unknown to the model, the TF has no protein sequence,
        or a region line is malformed.
    """
    import json

    export_uri = f"{config.model_uri}/export"
    metadata = json.loads(storage.read_text(f"{export_uri}/tfbs_metadata.json"))
    if cell not in metadata["cells"]:
        raise BadInputError(export_uri, 0, f"the model knows cells {metadata['cells']}, not {cell}")
    proteins = read_protein_fasta(config.data.proteins_fasta)
    if tf_name not in proteins:
        raise BadInputError(config.data.proteins_fasta, 0, f"no protein sequence named {tf_name}")
    sc = spark.sparkContext
    names = {"fasta": config.data.genome_fasta, "dnase": config.data.dnase_peaks_uri(cell)}
    for uri in [*names.values(), f"{config.data.genome_fasta}.fai"]:
        sc.addFile(uri)
    names = {key: uri.rsplit("/", 1)[-1] for key, uri in names.items()}
    window, cell_index = metadata["window"], metadata["cells"].index(cell)
    protein, batch = proteins[tf_name], config.evaluate.batch_size
    export_dir = storage.local_path(export_uri)
    rows = sc.textFile(regions_uri).zipWithIndex().mapPartitions(lambda part: _parse_regions(part, regions_uri))
    by_chrom = rows.keyBy(lambda row: row[0]).partitionBy(max(1, sc.defaultParallelism))
    scored = by_chrom.mapPartitions(
        lambda part: _score_partition(part, names, window, protein, cell_index, export_dir, batch)
    )
    ordered = scored.sortByKey().values().collect()
    text = "".join(f"{c}\t{s}\t{e}\t{p:.6f}\n" for c, s, e, p in ordered)
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as out:
        out.write(text.encode())
    storage.write_bytes(out_uri, buffer.getvalue())
    log.info("wrote %d predictions to %s", len(ordered), out_uri)
    return len(ordered)
