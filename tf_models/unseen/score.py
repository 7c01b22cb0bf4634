"""One trained model scored on one TF's test rows under several proteins.

The rows, windows and metrics are those of :mod:`tf_models.evaluate` (the
test split's Parquet, windows cut from the genome, the official metrics per
cell with A bins removed); it runs in one process because the model is
called with proteins its export's ``indexed`` table does not hold.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import tensorflow as tf

from tf_models.baselines import bin_motif_scores
from tf_models.encoding import dna_one_hot, protein_one_hot
from tf_models.model import build_model
from tfbs import storage
from tfbs.config import ModelConfig
from tfbs.formats.genome import gather_windows, load_chromosome, read_fai
from tfbs.formats.metrics import score_predictions
from tfbs.formats.proteins import protein_table

_COLUMNS = ["tf", "cell", "chrom", "start", "label_code", "cell_index", "dnase"]


def read_test_rows(files: list[str], tf_name: str) -> pa.Table:
    """The test rows of ``tf_name`` from the test split's Parquet files, sorted by chromosome and start."""
    tables = []
    for uri in files:
        fs, path = storage.filesystem(uri)
        table = pq.read_table(path, columns=_COLUMNS, filesystem=fs)
        tables.append(table.filter(pc.equal(table["tf"], tf_name)))
    return pa.concat_tables(tables).sort_by([("chrom", "ascending"), ("start", "ascending")])


def load_exported_model(export_uri: str, config: ModelConfig, n_cells: int, window: int) -> tf.keras.Model:
    """The exported model's weights in a freshly built model that takes any protein table.

    The export's variables are a checkpoint of the serving module, whose
    ``model`` attribute is the model: reading it into a checkpoint rooted
    the same way restores every weight.
    """
    from tf_models.model_dir import local_export

    model = build_model(config, n_cells, window)
    status = tf.train.Checkpoint(model=model).read(f"{local_export(export_uri)}/variables/variables")
    status.expect_partial().assert_existing_objects_matched()
    return model


def score_rows(
    model: tf.keras.Model,
    rows: pa.Table,
    fasta_uri: str,
    window: int,
    proteins: Mapping[str, str],
    aa_max_length: int,
    motif: np.ndarray | None,
    batch_size: int,
) -> dict[str, np.ndarray]:
    """Scores of every row under each named protein, and the motif scan's.

    Parameters
    ----------
    proteins
        ``{condition: amino-acid sequence}``: the model scores every row once per entry.
    motif
        The TF's log-odds matrix; its scan is returned as ``"motif_scan"``.

    Returns
    -------
    dict
        ``{condition: float64 (n_rows,)}`` logits, plus ``"motif_scan"``.
    """
    names = list(proteins)
    table = protein_one_hot(tf.constant(protein_table([proteins[name] for name in names], aa_max_length)))
    logits_of = tf.function(lambda batch: model({**batch, "proteins": table}, training=False))
    fai = read_fai(fasta_uri)
    chroms = rows["chrom"].to_numpy(zero_copy_only=False)
    starts = rows["start"].to_numpy()
    cells = rows["cell_index"].to_numpy().astype(np.int32)
    dnase = rows["dnase"].to_numpy().astype(np.float32)
    out = {name: np.empty(len(rows), np.float64) for name in [*names, *(["motif_scan"] if motif is not None else [])]}
    for chrom in dict.fromkeys(chroms.tolist()):
        bases = load_chromosome(fasta_uri, fai[chrom])
        where = np.flatnonzero(chroms == chrom)
        for first in range(0, len(where), batch_size):
            picked = where[first : first + batch_size]
            windows = gather_windows(bases, starts[picked], window)
            batch = {
                "dna": dna_one_hot(tf.constant(windows)),
                "cell_index": tf.constant(cells[picked]),
                "dnase": tf.constant(dnase[picked]),
            }
            for index, name in enumerate(names):
                tf_index = tf.fill([len(picked)], tf.constant(index, tf.int32))
                out[name][picked] = logits_of({**batch, "tf_index": tf_index}).numpy()
            if motif is not None:
                out["motif_scan"][picked] = bin_motif_scores(windows, motif)
    return out


def auprc_by_cell(rows: pa.Table, scores: Mapping[str, np.ndarray]) -> dict[str, dict[str, float]]:
    """Official test auPRC of each scoring, per cell: ``{cell: {condition: auPRC}}``."""
    cells = rows["cell"].to_numpy(zero_copy_only=False)
    labels = rows["label_code"].to_numpy()
    result = {}
    for cell in sorted(set(cells.tolist())):
        picked = cells == cell
        result[cell] = {name: score_predictions(labels[picked], s[picked])["auprc"] for name, s in scores.items()}
    return result
