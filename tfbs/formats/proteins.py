"""TF amino-acid sequences: FASTA reading and a fixed alphabet.

EasyFlow built its alphabet from a Python ``set``, so the channel order
changed between runs; here it is a constant.
"""

from __future__ import annotations

import numpy as np

from tfbs import storage
from tfbs.errors import BadInputError

#: The 20 standard amino acids; anything else maps to the extra channel 20.
AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"
AA_CHANNELS = len(AMINO_ACIDS) + 1


#: What a protein FASTA may hold: the standard residues and X (unknown), any case.
VALID_RESIDUES = frozenset(AMINO_ACIDS + "X" + (AMINO_ACIDS + "X").lower())


def read_protein_fasta(fasta_uri: str) -> dict[str, str]:
    """Read a protein FASTA into ``{name: sequence}`` (name = first word, sequence upper-cased).

    Raises
    ------
    BadInputError
        Naming file, line and reason: text before the first ``>`` header, a
        header without a name, a name given twice, a header with no
        sequence, a residue other than the 20 amino acids and X (a stop
        ``*``, a gap ``-``, a digit), or a file without any sequence.
    """
    sequences: dict[str, list[str]] = {}
    header_line: dict[str, int] = {}
    name = None
    with storage.open_text(fasta_uri) as handle:
        for line_number, line in enumerate(handle, start=1):
            line = line.strip()
            if not line:
                continue
            if line.startswith(">"):
                _check_not_empty(fasta_uri, name, sequences, header_line)
                words = line[1:].split()
                if not words:
                    raise BadInputError(fasta_uri, line_number, "header without a name")
                name = words[0]
                if name in header_line:
                    raise BadInputError(
                        fasta_uri, line_number, f"protein {name!r} named twice (first on line {header_line[name]})"
                    )
                header_line[name] = line_number
                sequences[name] = []
            elif name is None:
                raise BadInputError(fasta_uri, line_number, "sequence before the first '>' header")
            else:
                bad = next((column for column, residue in enumerate(line, 1) if residue not in VALID_RESIDUES), 0)
                if bad:
                    raise BadInputError(
                        fasta_uri,
                        line_number,
                        f"invalid residue {line[bad - 1]!r} in {name} at column {bad} (allowed: the 20 amino acids and X)",
                    )
                sequences[name].append(line.upper())
    _check_not_empty(fasta_uri, name, sequences, header_line)
    if not sequences:
        raise BadInputError(fasta_uri, 1, "no '>' header: not a protein FASTA")
    return {key: "".join(parts) for key, parts in sequences.items()}


def _check_not_empty(uri: str, name: str | None, sequences: dict[str, list[str]], header_line: dict[str, int]) -> None:
    """Raise if the record ``name`` just ended without a residue."""
    if name is not None and not sequences[name]:
        raise BadInputError(uri, header_line[name], f"protein {name!r} has no sequence")


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
