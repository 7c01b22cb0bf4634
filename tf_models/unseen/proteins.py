"""The protein controls of an unseen TF: its residues shuffled, and its nearest other protein."""

from __future__ import annotations

import hashlib

import numpy as np

#: Local alignment scores: identical residues gain, others and gaps cost.
MATCH, MISMATCH, GAP = 2, -1, -2


def shuffled_protein(sequence: str, seed: int) -> str:
    """The same residues in a seeded random order: composition and length kept, order gone.

    Examples
    --------
    >>> shuffled = shuffled_protein("MKVLAAGG", seed=1)
    >>> sorted(shuffled) == sorted("MKVLAAGG"), len(shuffled)
    (True, 8)
    """
    residues = np.frombuffer(sequence.encode("ascii"), dtype=np.uint8).copy()
    np.random.default_rng(seed).shuffle(residues)
    return residues.tobytes().decode("ascii")


def identical_aligned_residues(a: str, b: str) -> int:
    """Identical residue pairs in the best local (Smith-Waterman) alignment of ``a`` and ``b``.

    Family members share a DNA-binding domain inside otherwise unrelated
    sequence, so a local alignment finds it where a global one would drown
    it. Linear gaps; each row is computed with a running maximum instead of
    a Python loop over columns.

    Examples
    --------
    >>> identical_aligned_residues("QQQQMKVLAWWQQ", "PPMKVLAWWPP")
    7
    """
    x = np.frombuffer(a.encode("ascii"), dtype=np.uint8)
    y = np.frombuffer(b.encode("ascii"), dtype=np.uint8)
    n, m = len(x), len(y)
    # score[i, j]: best alignment ending at x[i-1], y[j-1]; same[i, j]: its identical pairs.
    score = np.zeros((n + 1, m + 1), dtype=np.int32)
    same = np.zeros((n + 1, m + 1), dtype=np.int32)
    columns = np.arange(m + 1, dtype=np.int32)
    for i in range(1, n + 1):
        equal = x[i - 1] == y
        diagonal = score[i - 1, :-1] + np.where(equal, MATCH, MISMATCH)
        up = score[i - 1, 1:] + GAP
        best = np.maximum(np.maximum(diagonal, up), 0)
        best_same = np.where(diagonal >= up, same[i - 1, :-1] + equal, same[i - 1, 1:])
        best_same = np.where(best > 0, best_same, 0)
        # A gap along the row: score[i, j] = max_k (best[k] + GAP * (j - k)), a running maximum.
        row = np.concatenate([[0], best]).astype(np.int32)
        shifted = row - GAP * columns
        origin = _running_argmax(shifted)
        score[i] = shifted[origin] + GAP * columns
        row_same = np.concatenate([[0], best_same])
        same[i] = row_same[origin]
    end = np.unravel_index(int(np.argmax(score)), score.shape)
    return int(same[end])


def _running_argmax(values: np.ndarray) -> np.ndarray:
    """For each position, the index of the largest value so far (the latest on ties)."""
    index = np.arange(len(values))
    best = np.maximum.accumulate(values)
    # The latest index where the running maximum was reached.
    return np.maximum.accumulate(np.where(values == best, index, 0))


def protein_identity(a: str, b: str) -> float:
    """Identical residues of the best local alignment, over the shorter protein's length.

    Examples
    --------
    >>> protein_identity("MKVLAW", "MKVLAW"), protein_identity("AAAA", "WWWW")
    (1.0, 0.0)
    """
    return identical_aligned_residues(a, b) / min(len(a), len(b))


def nearest_protein(name: str, proteins: dict[str, str]) -> tuple[str, float]:
    """The other protein most identical to ``proteins[name]``, and its identity.

    Ties go to the name first in sorted order, so the choice is reproducible.

    Raises
    ------
    ValueError
        If there is no other protein.
    """
    others = sorted(other for other in proteins if other != name)
    if not others:
        raise ValueError(f"no protein besides {name} to compare with")
    identities = {other: protein_identity(proteins[name], proteins[other]) for other in others}
    best = max(others, key=lambda other: (identities[other], -others.index(other)))
    return best, identities[best]


#: Residues of a family label's stand-in protein (:func:`family_label_protein`).
AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"


def protein_families(proteins: dict[str, str], identity: float) -> dict[str, str]:
    """Each protein's family, named by its first member in sorted order: proteins at least
    ``identity`` identical (:func:`protein_identity`) are one family, and so is a chain of them.

    Examples
    --------
    >>> protein_families({"FOXB": "MKVLAWHH", "FOXA": "MKVLAWGG", "ZNF": "CCCCCCCC"}, identity=0.5)
    {'FOXB': 'FOXA', 'FOXA': 'FOXA', 'ZNF': 'ZNF'}
    """
    names = sorted(proteins)
    family = {name: name for name in names}
    for i, first in enumerate(names):
        for second in names[i + 1 :]:
            if protein_identity(proteins[first], proteins[second]) >= identity:
                joined, into = family[second], family[first]
                family = {name: into if lead == joined else lead for name, lead in family.items()}
    return {name: min(n for n in names if family[n] == family[name]) for name in proteins}


def family_label_protein(family: str, length: int = 300) -> str:
    """A stand-in protein that says only which family a TF is of: random residues seeded by the family's name.

    Every member of a family gets the same sequence and no two families
    share one, so a model given these reads a family label and nothing of
    the protein itself (the control the protein branch has to beat).

    Examples
    --------
    >>> family_label_protein("FOXA1") == family_label_protein("FOXA1") != family_label_protein("CTCF")
    True
    """
    seed = int.from_bytes(hashlib.sha256(family.encode()).digest()[:8], "little")
    residues = np.random.default_rng(seed).choice(list(AMINO_ACIDS), length)
    return "".join(residues)
