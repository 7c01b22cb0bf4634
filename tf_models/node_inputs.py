"""What every TensorFlow node starts from besides the record files, chosen or read once on the driver.

The driver draws the record cache's path (one path on every node, a name
nobody can take first), reads the motifs the first filters start as and
the cells' expression table, and hands them to the nodes in
:class:`NodeInputs`; each node then copies the record files it reads
(:func:`readable_run`).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING

import numpy as np

from tfbs.config import PipelineConfig
from tfbs.errors import ConfigError
from tfbs.formats.manifest import Manifest

if TYPE_CHECKING:
    from tf_models.training_run import TrainingRun

log = logging.getLogger("tfbs.train")


@dataclasses.dataclass(frozen=True)
class NodeInputs:
    """What the driver chose and read for the nodes (:func:`node_inputs`)."""

    #: Where every node keeps its copies of remote record files (``tfbs.storage.private_dirs.records_cache_location``).
    records_cache: str
    #: Conv1D weights and biases the first filters start as (:func:`known_motif_seeds`), or None.
    motif_seeds: tuple[np.ndarray, np.ndarray] | None
    #: ``(cells, genes)`` log2(1 + TPM) by ``cell_index`` (:func:`cell_expression_table`), or None.
    cell_features: np.ndarray | None


def node_inputs(config: PipelineConfig, manifest: Manifest) -> NodeInputs:
    """The nodes' inputs besides the records, chosen or read once on the driver."""
    from tfbs.storage.private_dirs import records_cache_location

    return NodeInputs(
        records_cache=records_cache_location(config.train.placement.record_cache_dir),
        motif_seeds=known_motif_seeds(config, manifest.tfs),
        cell_features=cell_expression_table(config, manifest.cells),
    )


def readable_run(manifest: Manifest, download: tuple[str, ...], inputs: NodeInputs) -> TrainingRun:
    """The manifest's training run, the record files of the ``download`` splits copied where this node reads them."""
    from tf_models.training_run import TrainingRun
    from tfbs.storage.private_dirs import records_cache

    cache = str(records_cache(inputs.records_cache))
    run = TrainingRun.from_manifest(manifest).readable_by_tensorflow(cache, download)
    return dataclasses.replace(run, motif_seeds=inputs.motif_seeds, cell_features=inputs.cell_features)


def cell_expression_table(config: PipelineConfig, cells: list[str]) -> np.ndarray | None:
    """``(len(cells), genes)`` log2(1 + TPM) of the run's genes by ``cell_index`` when the model reads
    expression (``train.model.use_expression``), else None.

    Raises
    ------
    ConfigError
        If the model reads expression and a cell of the shards has no RNA-seq.
    """
    from tf_models.expression_inputs import run_expression

    if not config.train.model.use_expression:
        return None
    levels = run_expression(config, cells)
    if not levels:
        raise ConfigError(
            f"train.model.use_expression: needs RNA-seq of every cell of the shards ({', '.join(cells)}) in "
            f"data.rnaseq_dir ({config.data.rnaseq_dir}): gene_expression.<CELL>.biorep1.tsv and biorep2.tsv"
        )
    return np.stack([levels[cell] for cell in cells]).astype(np.float32)


def known_motif_seeds(config: PipelineConfig, tfs: list[str]) -> tuple[np.ndarray, np.ndarray] | None:
    """The first filters of a ``motif_cnn`` as known motifs (:func:`tf_models.motif_cnn.motif_seeds`).

    Read once, on the driver: every motif of ``motif_cnn.seed_motif_db`` in
    file order (up to the filters) when it is set, else one filter per
    distinct motif of ``evaluate.motifs`` among ``tfs`` from
    ``evaluate.motif_db``. None when the architecture is another,
    ``motif_cnn.seed_motifs`` is off or no motif is configured; the log says
    which filters start as which motifs, or why none do.
    """
    from tf_models.baselines import GENOME_BACKGROUND, motif_log_odds
    from tf_models.motif_cnn import motif_seeds
    from tfbs.formats.motifs import log_odds, read_meme

    model = config.train.model
    if model.architecture != "motif_cnn":
        return None
    scan = model.motif_cnn
    if not scan.seed_motifs:
        log.info("motif filters start at random: train.model.motif_cnn.seed_motifs is false")
        return None
    if scan.seed_motif_db is not None:
        matrices = read_meme(scan.seed_motif_db)
        chosen = dict(list(matrices.items())[: scan.filters])
        log.info(
            "motif filters start as the motifs of train.model.motif_cnn.seed_motif_db %s: %s",
            scan.seed_motif_db,
            ", ".join(chosen),
        )
        return motif_seeds([log_odds(m, GENOME_BACKGROUND) for m in chosen.values()], scan.kernel)
    motifs = {tf: config.evaluate.motifs[tf] for tf in tfs if tf in config.evaluate.motifs}
    if not motifs or not config.evaluate.motif_db:
        log.warning(
            "motif filters start at random although train.model.motif_cnn.seed_motifs is true: "
            "no motif of %s is configured (evaluate.motifs, evaluate.motif_db)",
            ", ".join(tfs),
        )
        return None
    without = [tf for tf in tfs if tf not in motifs]
    if without:
        log.info("no known motif for %s (evaluate.motifs): no filter starts as theirs", ", ".join(without))
    matrices = motif_log_odds(config.evaluate.motif_db, motifs)
    distinct = {motifs[tf]: matrices[tf] for tf in sorted(motifs)}
    log.info(
        "motif filters start as the known motifs of the run's TFs, from evaluate.motif_db %s: %s "
        "(train.model.motif_cnn.seed_motifs)",
        config.evaluate.motif_db,
        ", ".join(distinct),
    )
    return motif_seeds(list(distinct.values()), scan.kernel)
