"""Sequence logos (logomaker): a learned pattern above its best database match."""

from __future__ import annotations

import numpy as np

from tfbs.formats.motifs import ALPHABET


def _information_frame(ppm: np.ndarray, first: int = 0):
    import logomaker
    import pandas as pd

    frame = pd.DataFrame(
        np.asarray(ppm, dtype=np.float64), columns=list(ALPHABET), index=np.arange(first, first + len(ppm))
    )
    return logomaker.transform_matrix(frame, from_type="probability", to_type="information")


def reverse_complement_ppm(ppm: np.ndarray) -> np.ndarray:
    """The reverse complement of a ``(width, 4)`` ACGT matrix."""
    return np.asarray(ppm)[::-1, ::-1]


def draw_pair(
    pattern: np.ndarray, match: np.ndarray | None, path: str, title: str, match_title: str = "", offset: int = 0
) -> None:
    """Write a PNG: the pattern's logo in bits, and below it the match's, aligned as TOMTOM aligned them.

    Parameters
    ----------
    pattern, match
        ``(width, 4)`` probabilities; ``match`` None draws the pattern
        alone. ``match`` is oriented as it matched (reverse-complemented
        for a reverse-strand match).
    path
        Local PNG path.
    offset
        The match's column facing the pattern's first column (memelite's
        offset; negative when the pattern starts before the match).
    """
    import logomaker
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Both rows on one axis of columns: the match's column ``offset`` under the pattern's first.
    rows = [(pattern, title, max(0, offset))]
    if match is not None:
        rows.append((match, match_title, max(0, -offset)))
    left, right = 0, max(first + len(ppm) for ppm, _, first in rows)
    figure, axes = plt.subplots(len(rows), 1, figsize=(max(4.0, 0.35 * right), 1.8 * len(rows)), squeeze=False)
    for axis, (ppm, label, first) in zip(axes[:, 0], rows):
        logomaker.Logo(_information_frame(ppm, first), ax=axis, color_scheme="classic")
        axis.set_ylim(0, 2)
        axis.set_xlim(left - 0.5, right - 0.5)
        axis.set_ylabel("bits")
        axis.set_title(label, fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
