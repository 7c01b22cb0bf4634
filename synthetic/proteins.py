"""Synthetic TF protein sequences in which family members share a DNA-binding domain.

Real TF sequences are not bundled; what the model needs from them is the
structure that matters for transfer: TFs of one family carry nearly the
same DNA-binding domain (DBD) and otherwise unrelated sequence. Each
sequence depends only on the seed, the TF's name and its family, so adding
a TF to the configuration leaves the others unchanged.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np

#: The 20 standard residues and their approximate UniProt frequencies (%).
RESIDUES = "ACDEFGHIKLMNPQRSTVWY"
FREQUENCIES = (
    8.25,
    1.37,
    5.45,
    6.75,
    3.86,
    7.07,
    2.27,
    5.96,
    5.84,
    9.66,
    2.42,
    4.06,
    4.70,
    3.93,
    5.53,
    6.56,
    5.34,
    6.87,
    1.08,
    2.92,
)


def _rng(seed: int, key: str) -> np.random.Generator:
    """A generator keyed by a stable string hash (Python's hash() is salted)."""
    return np.random.default_rng([seed, zlib.crc32(key.encode("utf-8"))])


def random_residues(length: int, rng: np.random.Generator) -> np.ndarray:
    """Residue indices drawn from the UniProt composition."""
    weights = np.asarray(FREQUENCIES) / np.sum(FREQUENCIES)
    return rng.choice(len(RESIDUES), size=length, p=weights)


def synthetic_protein(
    name: str,
    family: str,
    seed: int,
    length_range: tuple[int, int] = (300, 700),
    dbd_range: tuple[int, int] = (80, 100),
    substitutions: tuple[int, int] = (2, 5),
) -> tuple[str, tuple[int, int]]:
    """One TF's amino-acid sequence and the span of its DBD.

    Parameters
    ----------
    name, family
        The TF and its family; the family alone decides the DBD.
    seed
        The data set seed.
    length_range
        Inclusive range of the full length.
    dbd_range
        Inclusive range of the family's DBD length.
    substitutions
        Inclusive range of point substitutions applied to this TF's copy of
        the DBD, so paralogues are similar but not identical.

    Returns
    -------
    tuple[str, tuple[int, int]]
        The sequence (starting with M) and the half-open DBD span in it.
    """
    family_rng = _rng(seed, f"dbd:{family}")
    dbd = random_residues(int(family_rng.integers(dbd_range[0], dbd_range[1] + 1)), family_rng)
    own = _rng(seed, f"protein:{name}")
    length = int(own.integers(length_range[0], length_range[1] + 1))
    sequence = random_residues(length, own)
    sequence[0] = RESIDUES.index("M")
    domain = dbd.copy()
    n_sub = int(own.integers(substitutions[0], substitutions[1] + 1))
    where = own.choice(domain.shape[0], size=n_sub, replace=False)
    # Adding 1-19 modulo 20 guarantees each substitution changes the residue.
    domain[where] = (domain[where] + own.integers(1, len(RESIDUES), size=n_sub)) % len(RESIDUES)
    start = int(own.integers(20, length - domain.shape[0] - 20))
    sequence[start : start + domain.shape[0]] = domain
    text = "".join(np.asarray(list(RESIDUES))[sequence])
    return text, (start, start + domain.shape[0])


def write_protein_fasta(
    path: str | Path, tfs: list[tuple[str, str]], seed: int, line_width: int = 60
) -> dict[str, str]:
    """Write one synthetic protein per TF.

    Parameters
    ----------
    path
        The FASTA to write; headers are ``>NAME family=F dbd=START-END``
        (readers take the first word as the name).
    tfs
        ``(name, family)`` pairs, in output order.
    seed
        The data set seed.
    line_width
        Residues per line.

    Returns
    -------
    dict[str, str]
        ``{name: sequence}``.
    """
    sequences = {}
    records = []
    for name, family in tfs:
        sequence, (start, stop) = synthetic_protein(name, family, seed)
        sequences[name] = sequence
        lines = [sequence[i : i + line_width] for i in range(0, len(sequence), line_width)]
        records.append(f">{name} family={family} dbd={start}-{stop}\n" + "\n".join(lines) + "\n")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("".join(records))
    return sequences
