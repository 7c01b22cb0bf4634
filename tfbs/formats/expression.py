"""RNA-seq as the ENCODE-DREAM challenge gave it: RSEM ``gene_expression.<CELL>.biorep<N>.tsv`` files.

Each file is RSEM's ``genes.results`` table: a header naming the columns
(``gene_id``, ``transcript_id(s)``, ``length``, ``effective_length``,
``expected_count``, ``TPM``, ``FPKM``), one gene per line. A cell's level of
a gene is the mean TPM over its replicates; models and baselines read it as
``log2(1 + TPM)``. Genes are looked up by ``gene_id`` (the challenge's files
hold Ensembl ids; the generator writes gene names there).
"""

from __future__ import annotations

import math

import numpy as np

from tfbs import storage
from tfbs.errors import BadInputError, MissingInputError

#: Replicates the challenge gave per cell.
BIOREPS = (1, 2)
REQUIRED_COLUMNS = ("gene_id", "TPM")


def read_expression(uri: str) -> dict[str, float]:
    """TPM of every gene of one RSEM ``genes.results`` file.

    Raises
    ------
    MissingInputError
        If the file does not exist.
    BadInputError
        Naming the file, the line and the reason: a missing column, a line
        with too few fields, a TPM that is not a finite number >= 0, a gene
        listed twice.
    """
    if not storage.exists(uri):
        raise MissingInputError(f"data.rnaseq_dir: expression file not found: {uri}")
    with storage.open_input(uri) as handle:
        lines = handle.read().decode("utf-8", errors="replace").splitlines()
    if not lines:
        raise BadInputError(uri, 1, "empty file, expected RSEM's header (gene_id ... TPM ...)")
    header = lines[0].split("\t")
    missing = [name for name in REQUIRED_COLUMNS if name not in header]
    if missing:
        raise BadInputError(uri, 1, f"header lacks {missing} (an RSEM genes.results table has them)")
    gene_at, tpm_at = header.index("gene_id"), header.index("TPM")
    tpm: dict[str, float] = {}
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) <= max(gene_at, tpm_at):
            raise BadInputError(uri, number, f"{len(fields)} fields, the header has {len(header)}")
        gene = fields[gene_at]
        try:
            value = float(fields[tpm_at])
        except ValueError:
            raise BadInputError(uri, number, f"TPM {fields[tpm_at]!r} is not a number") from None
        if not math.isfinite(value) or value < 0:
            raise BadInputError(uri, number, f"TPM {fields[tpm_at]} is not a finite number >= 0")
        if gene in tpm:
            raise BadInputError(uri, number, f"gene {gene} listed twice")
        tpm[gene] = value
    return tpm


def cell_expression(uris: list[str], genes: list[str]) -> np.ndarray:
    """``log2(1 + mean TPM)`` of ``genes`` over a cell's replicate files.

    Raises
    ------
    BadInputError
        If a gene is missing from a file (naming the file and the gene).

    Examples
    --------
    >>> import tempfile, os
    >>> folder = tempfile.mkdtemp()
    >>> paths = [os.path.join(folder, f"rep{i}.tsv") for i in (1, 2)]
    >>> for path, value in zip(paths, (1.0, 5.0)):
    ...     _ = open(path, "w").write(f"gene_id\\tTPM\\nHNF4A\\t{value}\\n")
    >>> cell_expression(paths, ["HNF4A"]).tolist()
    [2.0]
    """
    levels = np.zeros((len(uris), len(genes)))
    for row, uri in enumerate(uris):
        tpm = read_expression(uri)
        absent = [gene for gene in genes if gene not in tpm]
        if absent:
            raise BadInputError(uri, 1, f"no line for gene(s) {absent}")
        levels[row] = [tpm[gene] for gene in genes]
    return np.log2(1.0 + levels.mean(axis=0))
