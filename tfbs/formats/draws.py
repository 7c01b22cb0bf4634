"""Which unbound bins a negative draw keeps, deterministically.

Every (draw, TF, cell, bin) gets a uniform number from a hash of the seed
and its coordinates, so a draw does not depend on how Spark partitioned the
data, and reruns draw the same bins. Draw ``d`` keeps an unbound bin when its
number falls below the probability of its class (open or closed chromatin,
:func:`draw_threshold`).

Preprocessing draws with it (:mod:`preprocess.segregate`); the evaluation
redraws with it to tell the default sampling's rows from the ones
``preprocess.cross_cell_negatives`` added (:func:`drawn_by_default`).
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


def draw_threshold(proximity: np.ndarray, p_open: float, p_closed: float) -> np.ndarray:
    """Each bin's probability of being drawn: ``p_open`` inside the cell's DNase peaks (proximity above 0)."""
    return np.where(proximity > 0, p_open, p_closed)


def drawn_by_default(
    seed: int,
    tf: str,
    cell: str,
    chrom: str,
    starts: np.ndarray,
    draws: np.ndarray,
    proximity: np.ndarray,
    probabilities: tuple[float, float],
) -> np.ndarray:
    """Which training rows of one (TF, cell, chromosome) the sampling would hold without cross-cell negatives.

    A shard's row holds a positive (``draw`` -1) or an unbound bin a draw
    kept. ``preprocess.cross_cell_negatives`` makes every draw also keep the
    bins bound in another cell; this redraws each negative row's own draw and
    keeps it only if the hash alone picks it.

    Parameters
    ----------
    seed
        ``preprocess.seed`` of the run that wrote the rows.
    tf, cell, chrom
        The rows' coordinates.
    starts, draws, proximity
        The rows' ``start``, ``draw`` and ``dnase`` columns.
    probabilities
        ``(p_open, p_closed)`` of this TF and cell on the train split (the manifest's ``draw_probabilities``).

    Examples
    --------
    >>> drawn_by_default(13, "CTCF", "K562", "chr2", np.array([0, 50]), np.array([-1, 0]), np.zeros(2), (1.0, 0.0))
    array([ True, False])
    """
    kept = draws < 0
    threshold = draw_threshold(proximity, *probabilities)
    for draw in np.unique(draws[draws >= 0]):
        rows = draws == draw
        kept[rows] = uniform_draw(seed, int(draw), tf, cell, chrom, starts[rows]) < threshold[rows]
    return kept
