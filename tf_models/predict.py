"""Predictions for a regions file, written as a DREAM submission.

``F.<TF>.<CELL>.tab.gz``: no header, ``chr start stop probability``, rows
in exactly the order of the regions (ladder or test) file. The TF's protein
comes from the protein FASTA, so a TF the model never saw can be scored too.
"""

from __future__ import annotations

import gzip
import io
import json
import logging
from collections import defaultdict
from collections.abc import Iterable, Iterator

import numpy as np
from pyspark import RDD
from pyspark.sql import SparkSession

from tf_models.model_dir import local_export
from tfbs import storage
from tfbs.annotate import overlap_flags
from tfbs.config import PipelineConfig
from tfbs.dream import read_bed_intervals
from tfbs.errors import BadInputError, bad_input_in
from tfbs.genome import gather_windows, load_chromosome, read_fai
from tfbs.lineage import EXPORT_METADATA
from tfbs.proteins import read_protein_fasta

log = logging.getLogger("tfbs.predict")


def _parse_regions(lines: Iterable[tuple[str, int]], uri: str, chrom_sizes: dict[str, int]) -> Iterator[tuple]:
    """``(chrom, (start, stop, index))`` of each ``(line, index)`` of a regions BED, checked.

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
        yield chrom, (start, stop, index)


def _score_partition(
    items, fasta_uri: str, dnase: dict, window: int, protein: str, cell_index: int, export_uri: str, batch: int
):
    """Score one partition's regions, a chromosome at a time."""
    import tensorflow as tf

    serve = tf.saved_model.load(local_export(export_uri)).signatures["serving_default"]
    fai = read_fai(fasta_uri)
    by_chrom: dict[str, list] = defaultdict(list)
    for chrom, region in items:
        by_chrom[chrom].append(region)
    for chrom, regions in by_chrom.items():
        if chrom not in fai:
            raise BadInputError(fasta_uri, 0, f"chromosome {chrom!r} of the regions is not in the genome FASTA")
        starts = np.array([start for start, _, _ in regions], dtype=np.int64)
        unique, inverse = np.unique(starts, return_inverse=True)
        is_open = overlap_flags(chrom, unique, {"dnase": dnase.get(chrom, (np.empty(0), np.empty(0)))})["dnase"]
        windows = gather_windows(load_chromosome(fasta_uri, fai[chrom]), starts, window)
        for first in range(0, len(regions), batch):
            chunk = slice(first, first + batch)
            n = len(regions[chunk])
            out = serve(
                dna=tf.constant([w.tobytes() for w in windows[chunk]]),
                protein=tf.constant([protein.encode()] * n),
                cell_index=tf.constant([cell_index] * n, tf.int32),
                dnase=tf.constant(is_open[inverse[chunk]].astype(np.float32)),
            )["probability"].numpy()
            for (start, stop, line), p in zip(regions[chunk], out):
                yield line, (chrom, start, stop, float(p))


#: The report section predict fills (tf_models/report/collect.py draws it).
PREDICTIONS_SECTION = "predictions.json"
_SECTION_COLUMNS = ["TF/cell", "regions", "rows", "10% FDR threshold", "bins called", "submission", "bigWig", "BED"]


def record_prediction(report_dir: str, row: dict) -> None:
    """Put one submission's summary in the version's ``predictions.json`` report section.

    ``row`` holds the values of ``_SECTION_COLUMNS`` by name; an earlier row
    of the same TF/cell is replaced.
    """
    uri = f"{report_dir}/{PREDICTIONS_SECTION}"
    section = json.loads(storage.read_text(uri)) if storage.exists(uri) else {}
    rows = [r for r in section.get("rows", []) if r[0] != row["TF/cell"]]
    rows.append([row[column] for column in _SECTION_COLUMNS])
    section = {
        "title": "Predictions",
        "columns": _SECTION_COLUMNS,
        "rows": sorted(rows),
        "notes": [
            "Each submission was checked against its regions file as the challenge checked it (tfbs validate).",
            "The BED holds the bins at or above the score with 10% FDR on the held-out test chromosomes.",
        ],
        "images": [],
    }
    storage.write_text(uri, json.dumps(section, indent=2))


def check_and_draw(
    config: PipelineConfig, version: str, regions_uri: str, out_uri: str, tf_name: str, cell: str, count: int
) -> dict:
    """After :func:`predict_regions`: validate the submission, draw its tracks, add it to the report.

    Returns
    -------
    dict
        The row of the version's ``predictions.json`` section.

    Raises
    ------
    BadInputError
        If the submission breaks a rule of the challenge (tfbs.submission).
    """
    from tf_models.tracks import write_tracks
    from tfbs.lineage import report_uri
    from tfbs.submission import validate_submission

    validate_submission(out_uri, regions_uri)
    sizes = {chrom: entry.length for chrom, entry in read_fai(config.data.genome_fasta).items()}
    report_dir = report_uri(config.run_dir, version)
    tracks = write_tracks(out_uri, sizes, f"{report_dir}/report.json", tf_name, cell)
    row = {"TF/cell": f"{tf_name}/{cell}", "regions": regions_uri, "rows": count, "submission": out_uri}
    row |= {"10% FDR threshold": tracks["threshold"], "bins called": tracks["called"]}
    row |= {"bigWig": tracks["bigwig"], "BED": tracks["bed"]}
    record_prediction(report_dir, row)
    return row


def write_genome_bins(fasta_uri: str, chroms: list[str], out_uri: str) -> int:
    """Every DREAM bin of ``chroms`` (200 bp on the 50 bp grid, within each chromosome) as a gzipped regions BED.

    The regions file of a genome-wide prediction, in the FASTA index's
    chromosome order; returns the number of bins.
    """
    from tfbs.dream import BIN_SIZE, BIN_STEP

    fai = read_fai(fasta_uri)
    lines = [
        f"{chrom}\t{start}\t{start + BIN_SIZE}\n"
        for chrom, entry in fai.items()
        if chrom in chroms
        for start in range(0, entry.length - BIN_SIZE + 1, BIN_STEP)
    ]
    storage.write_bytes(out_uri, gzip.compress("".join(lines).encode(), mtime=0))
    return len(lines)


def predict_regions(
    spark: SparkSession,
    config: PipelineConfig,
    export_uri: str,
    regions_uri: str,
    tf_name: str,
    cell: str,
    out_uri: str,
) -> int:
    """Score every region for ``tf_name`` in ``cell`` with the model exported at ``export_uri``.

    Returns the row count.

    Raises
    ------
    BadInputError
        If the cell is unknown to the model, the TF has no protein sequence,
        or a region line is malformed.
    """
    metadata = json.loads(storage.read_text(f"{export_uri}/{EXPORT_METADATA}"))
    if cell not in metadata["cells"]:
        raise BadInputError(export_uri, 0, f"the model knows cells {metadata['cells']}, not {cell}")
    proteins = read_protein_fasta(config.data.proteins_fasta)
    if tf_name not in proteins:
        raise BadInputError(config.data.proteins_fasta, 0, f"no protein sequence named {tf_name}")
    sc = spark.sparkContext
    # A model trained without DNase ignores the input: no peaks are needed.
    uses_dnase = metadata.get("uses_dnase", True)
    peaks = read_bed_intervals(config.data.dnase_peaks_uri(cell)) if uses_dnase else {}
    fasta_uri, dnase = config.data.genome_fasta, sc.broadcast(peaks)
    window, cell_index = metadata["window"], metadata["cells"].index(cell)
    protein, batch = proteins[tf_name], config.evaluate.batch_size
    sizes = {chrom: entry.length for chrom, entry in read_fai(fasta_uri).items()}
    rows = sc.textFile(regions_uri).zipWithIndex().mapPartitions(lambda part: _parse_regions(part, regions_uri, sizes))
    by_chrom: RDD = rows.partitionBy(max(1, sc.defaultParallelism))
    scored = by_chrom.mapPartitions(
        lambda part: _score_partition(part, fasta_uri, dnase.value, window, protein, cell_index, export_uri, batch)
    )
    try:
        ordered = scored.sortByKey().values().collect()
    except Exception as err:
        # A bad region line fails a task; the driver reports it in one line.
        bad = bad_input_in(err)
        if bad is None:
            raise
        raise bad from None
    text = "".join(f"{c}\t{s}\t{e}\t{p:.6f}\n" for c, s, e, p in ordered)
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as out:
        out.write(text.encode())
    storage.write_bytes(out_uri, buffer.getvalue())
    log.info("wrote %d predictions to %s", len(ordered), out_uri)
    return len(ordered)
