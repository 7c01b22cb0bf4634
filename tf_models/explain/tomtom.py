"""Matching patterns against a MEME motif database with TOMTOM (memelite).

memelite returns p-values only; the q-value of a match is computed here the
way MEME's tomtom does, by Benjamini-Hochberg over all the query's p-values
(one per database motif), so it is the false discovery rate at which the
match would be reported.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Match:
    """A query's best database motif, and where a named motif stands.

    Attributes
    ----------
    motif
        Id of the best-matching database motif (smallest p-value).
    p_value, q_value
        Its TOMTOM p-value and q-value.
    reverse
        Whether it matched on the reverse strand.
    offset
        memelite's offset of the best alignment.
    """

    motif: str
    p_value: float
    q_value: float
    reverse: bool
    offset: int


def benjamini_hochberg(p_values: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg q-values of one set of p-values (same shape).

    Examples
    --------
    >>> benjamini_hochberg(np.array([0.01, 0.04, 0.03, 0.5])).round(3).tolist()
    [0.04, 0.053, 0.053, 0.5]
    """
    p = np.asarray(p_values, dtype=np.float64)
    order = np.argsort(p)
    ranked = p[order] * len(p) / np.arange(1, len(p) + 1)
    # Monotone from the largest p down, capped at 1.
    ranked = np.minimum.accumulate(ranked[::-1])[::-1].clip(max=1.0)
    q = np.empty_like(ranked)
    q[order] = ranked
    return q


def tomtom_q(queries: list[np.ndarray], database: dict[str, np.ndarray]) -> tuple[list[str], np.ndarray, dict]:
    """TOMTOM of every query against every database motif, with q-values.

    Parameters
    ----------
    queries
        ``(width, 4)`` probability matrices, ACGT order.
    database
        ``{motif id: (width, 4) probabilities}`` (:func:`tfbs.formats.motifs.read_meme`).

    Returns
    -------
    tuple
        The database ids (column order), the ``(n_queries, n_motifs)``
        q-values, and memelite's arrays (``p``, ``offsets``, ``strands``) of
        the same shape.
    """
    from memelite import tomtom

    names = list(database)
    targets = [np.ascontiguousarray(database[name].T, dtype=np.float64) for name in names]
    query_list = [np.ascontiguousarray(np.asarray(q, dtype=np.float64).T) for q in queries]
    # One thread: the Spark session and TensorFlow already use the cores.
    p, _, offsets, _, strands = tomtom(query_list, targets, n_jobs=1)
    q = np.stack([benjamini_hochberg(row) for row in p]) if len(p) else np.empty((0, len(names)))
    return names, q, {"p": p, "offsets": offsets, "strands": strands}


def compile_kernels() -> None:
    """Compile memelite's TOMTOM kernels into numba's cache, beside the package (run once when installing).

    numba compiles them at their first call in a fresh environment: about a
    minute on 2 busy cores, which the first ``tfbs explain`` (and the suite)
    would pay. A motif against itself calls every kernel a real search does.
    """
    motif = np.full((8, 4), 0.1)
    motif[np.arange(8), np.arange(8) % 4] = 0.7
    with warnings.catch_warnings():  # one target: its p-values mean nothing, and nobody reads them
        warnings.simplefilter("ignore", UserWarning)
        tomtom_q([motif], {"warm-up": motif})


def best_matches(queries: list[np.ndarray], database: dict[str, np.ndarray]) -> tuple[list[Match], np.ndarray, list]:
    """Each query's best match, the full q-value matrix and the database ids.

    Returns
    -------
    tuple
        ``[Match per query]``, ``(n_queries, n_motifs)`` q-values, ids.
    """
    names, q, arrays = tomtom_q(queries, database)
    matches = []
    for row in range(len(queries)):
        best = int(np.argmin(arrays["p"][row]))
        matches.append(
            Match(
                motif=names[best],
                p_value=float(arrays["p"][row, best]),
                q_value=float(q[row, best]),
                reverse=bool(arrays["strands"][row, best]),
                offset=int(arrays["offsets"][row, best]),
            )
        )
    return matches, q, names


def to_meme(patterns: dict[str, np.ndarray], counts: dict[str, int] | None = None) -> str:
    """Probability matrices as one MEME (version 4) text, readable by any TOMTOM.

    Parameters
    ----------
    patterns
        ``{motif id: (width, 4) probabilities}`` in ACGT order.
    counts
        ``{motif id: number of sites}`` for each ``nsites`` (default 20).
    """
    lines = ["MEME version 4", "", "ALPHABET= ACGT", "", "strands: + -", ""]
    lines += ["Background letter frequencies", "A 0.25 C 0.25 G 0.25 T 0.25", ""]
    for name, ppm in patterns.items():
        nsites = (counts or {}).get(name, 20)
        lines += [f"MOTIF {name}", f"letter-probability matrix: alength= 4 w= {len(ppm)} nsites= {nsites} E= 0"]
        lines += ["  ".join(f"{value:.6f}" for value in row) for row in ppm]
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    compile_kernels()
