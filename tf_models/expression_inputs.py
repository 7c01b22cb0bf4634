"""The RNA-seq a run reads: its TFs' and their partners' genes, per cell, from ``data.rnaseq_dir``."""

from __future__ import annotations

import numpy as np

from tfbs import storage
from tfbs.config import PipelineConfig
from tfbs.formats.expression import BIOREPS, cell_expression


def run_genes(config: PipelineConfig) -> list[str]:
    """The genes whose expression the run reads: its TFs' and their partners' (``evaluate.motifs``, ``partner_motifs``)."""
    return list({**config.evaluate.motifs, **config.evaluate.partner_motifs})


def run_expression(config: PipelineConfig, cells: list[str]) -> dict[str, np.ndarray]:
    """Per cell, :func:`cell_expression` of :func:`run_genes`; empty when a cell has no RNA-seq in ``data.rnaseq_dir``."""
    data, ids = config.data, [config.evaluate.gene_ids.get(gene, gene) for gene in run_genes(config)]
    uris = {cell: [data.expression_uri(cell, rep) for rep in BIOREPS] for cell in cells}
    if data.rnaseq_dir is None or not all(storage.exists(uri) for cell_uris in uris.values() for uri in cell_uris):
        return {}
    return {cell: cell_expression(cell_uris, ids) for cell, cell_uris in uris.items()}
