"""``tfbs explain``: from a model version's test predictions to ``motifs.json``.

The version's top test predictions per TF/cell (``predictions/`` of its
evaluation) are explained by ISM over Spark partitions, as predict scores
regions; each TF's seqlets, pooled over cells, make one pattern, matched
with TOMTOM against the motif database. Into the version's report folder go
``motifs.json`` (the report-directory table contract), ``motifs.meme`` (the
learned patterns, for any TOMTOM) and ``logos/<TF>.png``; when the version
is ``LATEST`` they are copied to ``<run_dir>/report/`` too.
"""

from __future__ import annotations

import json
import logging
import time
from collections import defaultdict
from functools import partial
from typing import Any

import numpy as np
from pyspark.sql import SparkSession

from tf_models.explain.attribution import attribute_partition
from tf_models.explain.logos import draw_pair, reverse_complement_ppm
from tf_models.explain.seqlets import Pattern, build_pattern
from tf_models.explain.tomtom import best_matches, to_meme
from tf_models.seeding import seeding_note
from tfbs import lineage, storage
from tfbs.config import PipelineConfig
from tfbs.errors import MissingInputError
from tfbs.formats.motifs import read_meme

log = logging.getLogger("tfbs.explain")

#: Columns of the ``motifs.json`` table.
COLUMNS = [
    "TF",
    "pattern",
    "seqlets",
    "best match",
    "best p",
    "best q",
    "planted motif",
    "planted q",
    "planted rank",
    "best is planted",
    "recovered",
    "logo",
]


def top_predictions(spark: SparkSession, predictions_uri: str, top_n: int) -> list[tuple]:
    """``(tf, cell, chrom, start, probability)`` of the ``top_n`` highest test predictions per TF/cell."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    rank = Window.partitionBy("tf", "cell").orderBy(F.desc("probability"), "chrom", "start")
    top = (
        spark.read.parquet(predictions_uri)
        .withColumn("rank", F.row_number().over(rank))
        .where(F.col("rank") <= top_n)
        .select("tf", "cell", "chrom", "start", "probability")
    )
    return sorted(tuple(row) for row in top.collect())


def _windows_and_dnase(config: PipelineConfig, rows: list[tuple], window: int, uses_dnase: bool) -> tuple[list, list]:
    """The genome window and DNase input of each row, cut on the driver (a few hundred rows)."""
    from tfbs.formats.annotate import dnase_proximity
    from tfbs.formats.dream import read_dnase_peaks
    from tfbs.formats.genome import gather_windows, load_chromosome, read_fai

    fasta, fai = config.data.genome_fasta, read_fai(config.data.genome_fasta)
    windows: list = [None] * len(rows)
    dnase = np.zeros(len(rows), dtype=np.float32)
    by_chrom: dict[str, list[int]] = defaultdict(list)
    for index, row in enumerate(rows):
        by_chrom[row[2]].append(index)
    peaks = {cell: read_dnase_peaks(config.data.dnase_peaks_uri(cell)) for cell in {r[1] for r in rows}}
    for chrom, indices in by_chrom.items():
        starts = np.array([rows[i][3] for i in indices], dtype=np.int64)
        for i, bases in zip(indices, gather_windows(load_chromosome(fasta, fai[chrom]), starts, window)):
            windows[i] = bases
        if not uses_dnase:
            continue
        for cell in {rows[i][1] for i in indices}:
            picked = [i for i in indices if rows[i][1] == cell]
            starts = np.array([rows[i][3] for i in picked], dtype=np.int64)
            dnase[picked] = dnase_proximity(chrom, starts, {cell: peaks[cell]})[cell]
    return windows, dnase.tolist()


def attribute(
    spark: SparkSession, export_uri: str, items: list[tuple], first: int, length: int, batch_size: int
) -> dict[int, np.ndarray]:
    """ISM contributions of each item ``(key, window bytes, tf_index, cell_index, dnase)``, over Spark partitions."""
    from tf_models.model_dir import local_export

    sc = spark.sparkContext
    rdd = sc.parallelize(items, max(1, min(len(items), sc.defaultParallelism)))
    scored = rdd.mapPartitions(
        lambda part: attribute_partition(part, local_export(export_uri), first, length, batch_size)
    ).collect()
    return {key: np.frombuffer(raw, dtype=np.float32) for key, raw in scored}


def own_motif(match_id: str, planted_id: str | None) -> bool:
    """Whether a database motif is the TF's own: the planted id, or another id of the same TF (``NAME_xx``).

    Examples
    --------
    >>> own_motif("FOXA2_f1", "FOXA2_f1"), own_motif("FOXA2_do", "FOXA2_f1"), own_motif("FOXA1_f1", "FOXA2_f1")
    (True, True, False)
    """
    if planted_id is None:
        return False
    return match_id == planted_id or match_id.split("_")[0] == planted_id.split("_")[0]


def _planted(config: PipelineConfig) -> dict[str, str]:
    """TF -> the motif the generator planted (generated data), else the motif-scan's motif."""
    if config.generate is not None:
        return {spec.name: spec.motif for spec in config.generate.tfs}
    return dict(config.evaluate.motifs)


def explain_version(spark: SparkSession, config: PipelineConfig, version: str) -> dict[str, Any]:
    """Explain model ``version`` and write its ``motifs.json``, ``motifs.meme`` and logos.

    Returns
    -------
    dict
        The ``motifs.json`` table: ``title``, ``columns``, ``rows``,
        ``notes``, ``images`` (logo paths relative to the report folder).

    Raises
    ------
    MissingInputError
        If the version has no export, no test predictions (run ``tfbs
        evaluate``) or there is no motif database.
    """
    cfg = config.explain
    started = time.monotonic()
    export = lineage.export_uri(config.run_dir, version)
    report_dir = lineage.report_uri(config.run_dir, version)
    metadata_uri = f"{export}/{lineage.EXPORT_METADATA}"
    if not storage.exists(metadata_uri):
        raise MissingInputError(f"{metadata_uri}: not found: version {version} has no export (run `tfbs train`)")
    predictions = f"{report_dir}/predictions"
    if not storage.exists(predictions):
        raise MissingInputError(f"{predictions}: not found: version {version} was not evaluated (run `tfbs evaluate`)")
    motif_db = cfg.motif_db or config.evaluate.motif_db
    if motif_db is None or not storage.exists(motif_db):
        raise MissingInputError(f"{motif_db or 'explain.motif_db'}: not found: no motif database to match against")
    metadata = lineage.read_export_metadata(export)
    window = int(metadata["window"])
    length = min(cfg.scan_bp, window)
    first = (window - length) // 2

    rows = [r for r in top_predictions(spark, predictions, cfg.top_n) if r[0] in metadata["tfs"]]
    windows, dnase = _windows_and_dnase(config, rows, window, metadata.get("uses_dnase", True))
    items = [
        (key, windows[key].tobytes(), metadata["tfs"].index(r[0]), metadata["cells"].index(r[1]), dnase[key])
        for key, r in enumerate(rows)
    ]
    tracks = attribute(spark, export, items, first, length, cfg.batch_size)
    log.info("ISM of %d windows x %d bp in %.1f s", len(items), length, time.monotonic() - started)

    patterns: dict[str, Pattern] = {}
    for tf_name in sorted({r[0] for r in rows}):
        keys = [key for key, r in enumerate(rows) if r[0] == tf_name]
        pattern = build_pattern(
            [windows[k] for k in keys],
            [tracks[k] for k in keys],
            first,
            cfg.seqlet_core_bp,
            cfg.pattern_bp,
            cfg.shift_bp,
            cfg.seqlets_per_window,
            cfg.min_bits,
        )
        if pattern is not None:
            patterns[tf_name] = pattern
    table = _match_and_draw(config, report_dir, patterns, read_meme(motif_db))
    version_lineage = lineage.read_lineage(config.run_dir, version)
    seeding, seeding_sentence = (
        seeding_note(version_lineage.train)
        if version_lineage is not None
        else ("seeding not recorded", f"Version {version} has no lineage.json: what its filters started as is unknown.")
    )
    table["title"] = f"Motifs the model learned ({seeding})"
    table["notes"][:0] = [
        f"Model version {version}; in-silico mutagenesis of the central {length} bp of the top {cfg.top_n} "
        "test predictions per TF/cell (DNA only; protein, cell and DNase held at the example's values).",
        seeding_sentence,
    ]
    table["notes"].append(
        f"TOMTOM (memelite) against {motif_db}; the learned patterns are in motifs.meme beside this table; "
        f"explained in {time.monotonic() - started:.0f} s."
    )
    _write(config, version, report_dir, table, patterns)
    return table


def _draw(path: str, pattern: np.ndarray, match: np.ndarray, title: str, match_title: str, offset: int) -> None:
    draw_pair(pattern, match, path, title, match_title, offset)


def _match_and_draw(
    config: PipelineConfig, report_dir: str, patterns: dict[str, Pattern], database: dict[str, np.ndarray]
) -> dict[str, Any]:
    """TOMTOM each pattern, draw its logo beside the best match and build the table."""
    cfg, planted = config.explain, _planted(config)
    names = list(patterns)
    matches, q, ids = best_matches([patterns[n].ppm for n in names], database) if names else ([], np.empty((0, 0)), [])
    rows, images, recovered = [], [], 0
    for index, (name, match) in enumerate(zip(names, matches)):
        pattern, motif = patterns[name], planted.get(name)
        planted_q = float(q[index, ids.index(motif)]) if motif in ids else None
        rank = int((q[index] < planted_q).sum()) + 1 if planted_q is not None else None
        # Recovered only when the TF's own motif is the best match: a paralogue's
        # motif ranking first (FOXA1's for FOXA2) is not the TF's motif found.
        found = own_motif(match.motif, motif) and match.q_value < cfg.q_threshold
        recovered += found
        logo = f"logos/{name}.png"
        shown = reverse_complement_ppm(database[match.motif]) if match.reverse else database[match.motif]
        storage.write_through_local(
            f"{report_dir}/{logo}",
            partial(
                _draw,
                pattern=pattern.ppm,
                match=shown,
                title=f"{name}: learned pattern ({pattern.n_seqlets} seqlets)",
                match_title=f"best match {match.motif} (q = {match.q_value:.2g})",
                offset=match.offset,
            ),
        )
        images.append(logo)
        rows.append(
            [
                name,
                f"{name}_learned ({len(pattern.ppm)} bp)",
                f"{pattern.n_seqlets}/{pattern.n_candidates}",
                match.motif,
                match.p_value,
                match.q_value,
                motif,
                planted_q,
                rank,
                match.motif == motif,
                found,
                logo,
            ]
        )
    notes = [
        f"Seqlets: the best-attributed {cfg.seqlet_core_bp} bp stretch of each window, aligned (offset, strand) into one "
        "pattern per TF over all cells; seqlets scoring below background on the pattern are left out.",
        f"q-values: Benjamini-Hochberg over each pattern's TOMTOM p-values against all {len(database)} motifs; "
        f"a planted motif counts as recovered only when the TF's own motif is the best match, at q < "
        f"{cfg.q_threshold} (the planted motif's rank is shown: a family member's, e.g. FOXA1's for FOXA2, "
        "can rank above it, and then it is not recovered).",
        f"Planted motifs recovered: {recovered} of {len([n for n in names if planted.get(n)])}.",
    ]
    return {"title": "Motifs the model learned", "columns": COLUMNS, "rows": rows, "notes": notes, "images": images}


def _write(
    config: PipelineConfig, version: str, report_dir: str, table: dict[str, Any], patterns: dict[str, Pattern]
) -> None:
    """Write ``motifs.json`` and ``motifs.meme``; copy them and the logos to the run report if ``LATEST``."""
    meme = to_meme(
        {f"{name}_learned": p.ppm for name, p in patterns.items()},
        {f"{name}_learned": p.n_seqlets for name, p in patterns.items()},
    )
    text = json.dumps(table, indent=2)
    targets = [report_dir]
    latest = lineage.read_latest(config.run_dir)
    if latest is not None and latest.version == version:
        targets.append(lineage.run_report_uri(config.run_dir))
    for target in targets:
        if target != report_dir:
            for logo in table["images"]:
                with storage.open_input(f"{report_dir}/{logo}", compression=None) as handle:
                    storage.write_bytes(f"{target}/{logo}", handle.read())
        storage.write_text(f"{target}/motifs.meme", meme)
        storage.write_text(f"{target}/motifs.json", text)
        log.info("wrote %s/motifs.json", target)
