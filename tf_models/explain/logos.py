"""Sequence logos (logomaker): a learned pattern above its best database match."""

from __future__ import annotations

import numpy as np

from tfbs.motifs import ALPHABET


def _information_frame(ppm: np.ndarray):
    import logomaker
    import pandas as pd

    frame = pd.DataFrame(np.asarray(ppm, dtype=np.float64), columns=list(ALPHABET))
    return logomaker.transform_matrix(frame, from_type="probability", to_type="information")


def reverse_complement_ppm(ppm: np.ndarray) -> np.ndarray:
    """The reverse complement of a ``(width, 4)`` ACGT matrix."""
    return np.asarray(ppm)[::-1, ::-1]


def draw_pair(pattern: np.ndarray, match: np.ndarray | None, path: str, title: str, match_title: str = "") -> None:
    """Write a PNG: the pattern's logo in bits, and below it the match's (oriented as it matched).

    Parameters
    ----------
    pattern, match
        ``(width, 4)`` probabilities; ``match`` None draws the pattern alone.
    path
        Local PNG path.
    """
    import logomaker
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [(pattern, title)] + ([(match, match_title)] if match is not None else [])
    width = max(len(ppm) for ppm, _ in rows)
    figure, axes = plt.subplots(len(rows), 1, figsize=(max(4.0, 0.35 * width), 1.8 * len(rows)), squeeze=False)
    for axis, (ppm, label) in zip(axes[:, 0], rows):
        logomaker.Logo(_information_frame(ppm), ax=axis, color_scheme="classic")
        axis.set_ylim(0, 2)
        axis.set_xlim(-0.5, width - 0.5)
        axis.set_ylabel("bits")
        axis.set_title(label, fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
