"""What the boosted-baseline benchmarks share: shard rows read in one process, their features, the headline sizes."""

from __future__ import annotations

import numpy as np

#: The test chromosomes of the headline data sets: at least 200 positive sites per TF/cell
#: (the demo's training chromosomes, chr1, chr8 and chr21 ten times the demo's).
CHALLENGE_SIZES = (
    "generate.chromosomes={chr1: 5000000, chr2: 1500000, chr3: 1500000, chr4: 1000000, "
    "chr8: 3000000, chr11: 300000, chr21: 1500000}"
)


def load_rows(config, split: str) -> dict[str, np.ndarray]:
    """Every row of a split's Parquet shards: ``tf, chrom, start, cell, label_code, dnase``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tfbs.formats.manifest import read_manifest
    from tfbs.storage import local_path

    manifest = read_manifest(config.shards_uri)
    columns = ["tf", "chrom", "start", "cell", "label_code", "dnase"]
    table = pa.concat_tables([pq.read_table(local_path(e.path), columns=columns) for e in manifest.parquet[split]])
    return {name: table[name].to_numpy(zero_copy_only=False) for name in columns}


def features_of(rows: dict[str, np.ndarray], blocks: dict[str, np.ndarray], inputs) -> np.ndarray:
    """The baseline's feature rows of ``rows`` (:func:`tf_models.boosted.feature_matrix`)."""
    from tf_models.boosted import feature_matrix
    from tf_models.motif_features import WIDTHS, bin_features

    motif = np.zeros((rows["start"].shape[0], len(WIDTHS) * len(inputs.motifs)), np.float32)
    for chrom in np.unique(rows["chrom"]):
        picked = rows["chrom"] == chrom
        motif[picked] = bin_features(blocks[str(chrom)], rows["start"][picked])
    return feature_matrix(inputs, motif, rows["dnase"], rows["cell"])


def boosted_features(config, splits: list[dict[str, np.ndarray]]):
    """The baseline's inputs for ``config`` and the feature rows of each split's rows, the genome scanned once."""
    from tf_models.boosted_fit import boosted_inputs
    from tf_models.motif_features import block_maxima
    from tfbs.formats.genome import load_chromosome, read_fai

    cells = sorted({str(cell) for rows in splits for cell in np.unique(rows["cell"])})
    inputs, matrices = boosted_inputs(config, cells)
    fasta = config.data.genome_fasta
    blocks = {chrom: block_maxima(load_chromosome(fasta, entry), matrices) for chrom, entry in read_fai(fasta).items()}
    return inputs, [features_of(rows, blocks, inputs) for rows in splits]
