"""Drawing unbound bins for the U:B ratio, deterministically.

Every (draw, TF, cell, bin) gets a uniform number from a hash of the seed
and its coordinates, so a draw does not depend on how Spark partitioned the
data, and reruns draw the same bins. Draw ``d`` keeps an unbound bin when its
number falls below the probability of its class (open or closed chromatin).
"""

from __future__ import annotations

import hashlib

import numpy as np


def _splitmix64(values: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser: a fast, well-mixed 64-bit hash, computed in place on ``values`` (uint64)."""
    scratch = np.empty_like(values)
    with np.errstate(over="ignore"):
        values += np.uint64(0x9E3779B97F4A7C15)
        for shift, factor in ((30, 0xBF58476D1CE4E5B9), (27, 0x94D049BB133111EB)):
            np.right_shift(values, np.uint64(shift), out=scratch)
            values ^= scratch
            values *= np.uint64(factor)
        np.right_shift(values, np.uint64(31), out=scratch)
        values ^= scratch
    return values


def uniform_draw(seed: int, draw: int, tf: str, cell: str, chrom: str, starts: np.ndarray) -> np.ndarray:
    """A reproducible uniform number in [0, 1) per bin.

    Examples
    --------
    >>> a = uniform_draw(13, 0, "CTCF", "K562", "chr2", np.array([0, 50]))
    >>> bool(np.all(a == uniform_draw(13, 0, "CTCF", "K562", "chr2", np.array([0, 50]))))
    True
    """
    digest = hashlib.blake2b(f"{seed}\t{draw}\t{tf}\t{cell}\t{chrom}".encode(), digest_size=8).digest()
    salt = np.uint64(int.from_bytes(digest, "little"))
    # In place, in one array and a scratch one: the whole genome's bins pass here once per cell and draw.
    hashed = np.array(starts, dtype=np.uint64)
    hashed ^= salt
    hashed = _splitmix64(hashed)
    hashed >>= np.uint64(11)
    uniform = hashed.astype(np.float64)
    uniform /= float(1 << 53)
    return uniform


def draw_probabilities(
    n_bound: int, n_open: int, n_closed: int, negatives_per_positive: float, hard_negative_fraction: float
) -> tuple[float, float]:
    """Probabilities of keeping an open and a closed unbound bin.

    The expected number of U drawn is ``negatives_per_positive * n_bound``,
    ``hard_negative_fraction`` of them from open chromatin: those are the
    negatives a model cannot reject on accessibility alone. If there are too
    few open ones, closed ones make up the rest.

    Examples
    --------
    >>> draw_probabilities(10, 100, 1000, 2.0, 0.5)
    (0.1, 0.01)
    """
    wanted = n_bound * negatives_per_positive
    wanted_open = min(n_open, wanted * hard_negative_fraction)
    p_open = min(1.0, wanted_open / max(n_open, 1))
    p_closed = min(1.0, (wanted - wanted_open) / max(n_closed, 1))
    return p_open, p_closed
