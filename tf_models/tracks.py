"""Genome-browser tracks of a DREAM submission: a bigWig and a BED of called bins.

DREAM bins are 200 bp on a 50 bp stride, so each base lies in four bins. The
bigWig holds, for each step of the bins' common grid (50 bp), the highest
probability of the bins covering it: a site anywhere in a step shows at the
strength of its best bin, where a mean would halve an isolated peak. The BED
lists the bins called bound at 10 % FDR, with the score threshold the
evaluation measured on the held-out test chromosomes (``threshold_at_fdr_10``
in ``report.json``); its score column (0-1000) lets IGV and the UCSC browser
shade the calls.
"""

from __future__ import annotations

import gzip
import math
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from tfbs import storage

Columns = dict[str, np.ndarray]


def read_submission(uri: str) -> pa.Table:
    """The rows of ``F.<TF>.<CELL>.tab.gz`` as a table: chrom, start, stop, probability."""
    with storage.open_input(uri) as stream:  # gunzipped by its name
        return pacsv.read_csv(
            stream,
            read_options=pacsv.ReadOptions(column_names=["chrom", "start", "stop", "probability"]),
            parse_options=pacsv.ParseOptions(delimiter="\t"),
            convert_options=pacsv.ConvertOptions(
                column_types={
                    "chrom": pa.string(),
                    "start": pa.int64(),
                    "stop": pa.int64(),
                    "probability": pa.float64(),
                }
            ),
        )


def _by_chromosome(table: pa.Table) -> dict[str, Columns]:
    chroms = table.column("chrom").to_numpy(zero_copy_only=False)
    columns = {name: table.column(name).to_numpy() for name in ("start", "stop", "probability")}
    found: dict[str, Columns] = {}
    for chrom in dict.fromkeys(chroms):
        mask = chroms == chrom
        found[chrom] = {name: values[mask] for name, values in columns.items()}
    return found


def step_maxima(starts: np.ndarray, stops: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """The highest value covering each step of the bins' common grid.

    Returns
    -------
    step_starts : np.ndarray
        Start of every covered step, increasing.
    maxima : np.ndarray
        The highest value of the bins covering that step.
    step : int
        The grid (the greatest common divisor of all starts and stops).

    Examples
    --------
    >>> step_maxima(np.array([0, 50]), np.array([200, 250]), np.array([0.2, 0.6]))
    (array([  0,  50, 100, 150, 200]), array([0.2, 0.6, 0.6, 0.6, 0.6]), 50)
    """
    step = int(np.gcd.reduce(np.concatenate([starts, stops])))
    first = int(starts.min())
    cells = (starts - first) // step
    lengths = (stops - starts) // step
    maxima = np.full(int((stops.max() - first) // step), -math.inf)
    for offset in range(int(lengths.max())):
        covering = lengths > offset
        np.maximum.at(maxima, cells[covering] + offset, values[covering])
    covered = np.flatnonzero(maxima > -math.inf)
    return first + covered * step, maxima[covered], step


def write_bigwig(table: pa.Table, chrom_sizes: dict[str, int], out_uri: str) -> int:
    """Write the probability track of a submission as a bigWig; returns the number of entries.

    Parameters
    ----------
    table
        The submission (:func:`read_submission`).
    chrom_sizes
        Every chromosome of the genome, in the FASTA index's order (the
        bigWig's header).
    out_uri
        Where the ``.bw`` goes (any :mod:`tfbs.storage` URI).
    """
    import pyBigWig

    by_chrom = _by_chromosome(table)
    entries = 0
    with tempfile.TemporaryDirectory() as scratch:
        local = str(Path(scratch) / "track.bw")
        track = pyBigWig.open(local, "w")
        track.addHeader(list(chrom_sizes.items()), maxZooms=10)
        for chrom in chrom_sizes:
            if chrom not in by_chrom:
                continue
            rows = by_chrom[chrom]
            starts, maxima, step = step_maxima(rows["start"], rows["stop"], rows["probability"])
            ends = np.minimum(starts + step, chrom_sizes[chrom])
            track.addEntries([chrom] * len(starts), starts.tolist(), ends=ends.tolist(), values=maxima.tolist())
            entries += len(starts)
        track.close()
        storage.upload_file(local, out_uri)
    return entries


def write_called_bed(table: pa.Table, threshold: float, name: str, out_uri: str) -> int:
    """Write the bins scoring at least ``threshold`` as a gzipped BED with a track line; returns their number."""
    probability = table.column("probability").to_numpy()
    called = np.flatnonzero(probability >= threshold)
    chroms = table.column("chrom").to_numpy(zero_copy_only=False)[called]
    starts, stops = table.column("start").to_numpy()[called], table.column("stop").to_numpy()[called]
    scores = np.rint(probability[called] * 1000).astype(int)
    lines = [f'track name="{name}" description="{name}: bins at or above {threshold:.4f}" useScore=1\n']
    lines += [
        f"{chrom}\t{start}\t{stop}\t{name}\t{score}\t.\n"
        for chrom, start, stop, score in zip(chroms, starts, stops, scores)
    ]
    storage.write_bytes(out_uri, gzip.compress("".join(lines).encode(), mtime=0))
    return len(called)


def write_tracks(
    submission_uri: str,
    chrom_sizes: dict[str, int],
    report_uri: str | None,
    tf_name: str,
    cell: str,
    scorer: str = "model",
) -> dict:
    """The bigWig and, when the evaluation measured a 10 % FDR threshold for the TF/cell, the BED of calls.

    Both go beside the submission: ``<TF>.<CELL>.probability.bw`` and
    ``<TF>.<CELL>.fdr10.bed.gz``. ``report_uri`` is the model version's
    ``report.json``; a TF or cell it does not score (an unseen TF) gets no BED.
    ``scorer`` wrote the submission: ``model``, or a scorer the report scores
    beside it (:data:`tf_models.protocol.JOINED`), whose threshold is taken.

    Returns
    -------
    dict
        ``bigwig`` and ``bed`` (None when not written) URIs, ``threshold``
        and the number of ``called`` bins.
    """
    import json

    folder = submission_uri.rsplit("/", 1)[0]
    table = read_submission(submission_uri)
    bigwig = f"{folder}/{tf_name}.{cell}.probability.bw"
    write_bigwig(table, chrom_sizes, bigwig)
    report = json.loads(storage.read_text(report_uri)) if report_uri and storage.exists(report_uri) else {}
    key = f"{tf_name}/{cell}"
    if scorer == "model":
        figures = report.get("results", {}).get(key, {})
    else:
        figures = report.get("baselines", {}).get(key, {}).get(scorer, {})
    threshold = figures.get("threshold_at_fdr_10")
    if threshold is None:
        return {"bigwig": bigwig, "bed": None, "threshold": None, "called": 0}
    bed = f"{folder}/{tf_name}.{cell}.fdr10.bed.gz"
    called = write_called_bed(table, threshold, f"{tf_name}_{cell}_FDR10", bed)
    return {"bigwig": bigwig, "bed": bed, "threshold": threshold, "called": called}
