"""A motif-scan baseline: how far the PWM alone gets on the labels.

Each bin is scored by the best log-odds match of the TF's PWM fully inside
the bin, on either strand, and scored like a submission (A bins removed,
auROC, Davis-Goadrich auPRC). It tells whether the generated data set is
too easy: chromatin state and motif-less binding should keep it well below 1.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
from numpy.lib.stride_tricks import sliding_window_view

from preprocess.motifs import log_odds, scan_positions
from tf_models.metrics import score_predictions


def read_label_table(path: str, chroms: Sequence[str]) -> tuple[list[str], pa.Table]:
    """Rows of a DREAM label file on the given chromosomes.

    Parameters
    ----------
    path
        ``<TF>.train.labels.tsv.gz`` (local path).
    chroms
        Chromosomes to keep.

    Returns
    -------
    tuple[list[str], pyarrow.Table]
        The cell names (header order) and a table ``chr, start, stop, <cells>``.
    """
    table = pacsv.read_csv(
        path,
        parse_options=pacsv.ParseOptions(delimiter="\t", quote_char=False),
        convert_options=pacsv.ConvertOptions(
            column_types={"chr": pa.string(), "start": pa.int64(), "stop": pa.int64()}
        ),
    )
    cells = table.column_names[3:]
    return cells, table.filter(pc.is_in(table["chr"], value_set=pa.array(list(chroms))))


def bin_max_scores(
    position_scores: np.ndarray, starts: np.ndarray, bin_size: int, motif_width: int, chunk: int = 20_000
) -> np.ndarray:
    """Best motif score over each bin, counting matches that lie fully inside it.

    Parameters
    ----------
    position_scores
        Score of a match starting at each position (:func:`scan_positions`).
    starts
        Bin starts (each bin must end within the chromosome).
    bin_size
        Bin length.
    motif_width
        Motif length.
    chunk
        Bins gathered at a time, bounding memory.

    Returns
    -------
    numpy.ndarray
        ``float32`` per bin.
    """
    span = bin_size - motif_width + 1
    windows = sliding_window_view(position_scores, span)
    out = np.empty(starts.shape[0], dtype=np.float32)
    for low in range(0, starts.shape[0], chunk):
        out[low : low + chunk] = windows[starts[low : low + chunk]].max(axis=1)
    return out


def motif_scan_baseline(
    labels_path: str,
    genome: dict[str, np.ndarray],
    pwm: np.ndarray,
    chroms: Sequence[str],
    background: Sequence[float] = (0.25, 0.25, 0.25, 0.25),
) -> dict[str, dict]:
    """Score every cell of a label file with the motif scan on ``chroms``.

    Parameters
    ----------
    labels_path
        The TF's label file.
    genome
        ``{chrom: uint8 base codes}``.
    pwm
        ``(w, 4)`` probabilities of the TF's motif.
    chroms
        Chromosomes to evaluate (DREAM test: chr1, chr8, chr21).
    background
        Base frequencies for the log-odds.

    Returns
    -------
    dict[str, dict]
        Per cell, :func:`tf_models.metrics.score_predictions`'s figures, or
        ``{"error": reason}`` when a cell has no B or no U bin there.
    """
    cells, table = read_label_table(labels_path, chroms)
    scores_matrix = log_odds(pwm, background)
    chrom_column = table["chr"].to_numpy(zero_copy_only=False)
    starts = table["start"].to_numpy()
    bin_size = int((table["stop"].to_numpy() - starts)[0]) if table.num_rows else 200
    scores = np.empty(table.num_rows, dtype=np.float32)
    for chrom in chroms:
        rows = np.flatnonzero(chrom_column == chrom)
        if rows.size:
            positions = scan_positions(genome[chrom], scores_matrix)
            scores[rows] = bin_max_scores(positions, starts[rows], bin_size, pwm.shape[0])
    result = {}
    for cell in cells:
        labels = table[cell].to_numpy(zero_copy_only=False).astype("U1")
        try:
            result[cell] = score_predictions(labels, scores)
        except ValueError as err:
            result[cell] = {"error": str(err)}
    return result
