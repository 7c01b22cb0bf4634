"""TF amino-acid sequences: FASTA reading and a fixed alphabet.

EasyFlow built its alphabet from a Python ``set``, so the channel order
changed between runs; here it is a constant.
"""

from __future__ import annotations

import numpy as np

from tfbs import uri as storage
from tfbs.errors import BadInputError

#: The 20 standard amino acids; anything else maps to the extra channel 20.
AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"
AA_CHANNELS = len(AMINO_ACIDS) + 1


def read_protein_fasta(fasta_uri: str) -> dict[str, str]:
    """Read a protein FASTA into ``{name: sequence}`` (name = first word)."""
    sequences: dict[str, list[str]] = {}
    name = None
    with storage.open_text(fasta_uri) as handle:
        for line_number, line in enumerate(handle, start=1):
            line = line.strip()
            if not line:
                continue
            if line.startswith(">"):
                name = line[1:].split()[0]
                sequences[name] = []
            elif name is None:
                raise BadInputError(fasta_uri, line_number, "sequence before the first '>' header")
            else:
                sequences[name].append(line.upper())
    return {key: "".join(parts) for key, parts in sequences.items()}


def protein_table(sequences: list[str], max_length: int) -> np.ndarray:
    """Encode proteins as an index table, padded or truncated to ``max_length``.

    Returns
    -------
    numpy.ndarray
        ``int8`` array (n_proteins, max_length); 0-19 standard residues,
        20 other residues, -1 padding (one-hot gives an all-zero row).
    """
    lookup = np.full(256, len(AMINO_ACIDS), dtype=np.int8)
    for index, letter in enumerate(AMINO_ACIDS):
        lookup[ord(letter)] = index
    table = np.full((len(sequences), max_length), -1, dtype=np.int8)
    for row, sequence in enumerate(sequences):
        codes = np.frombuffer(sequence[:max_length].encode("ascii"), dtype=np.uint8)
        table[row, : len(codes)] = lookup[codes]
    return table
