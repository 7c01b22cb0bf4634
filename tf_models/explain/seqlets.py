"""Seqlets: the windows of high attribution, aligned into one pattern per TF (TF-MoDISco-style).

Patterns come from the attributions, not from the first-layer filters: a
filter is only part of what the model reads (filters split a motif, repeat
it, or serve another TF through the protein gate), while attributions say
which bases drove each top prediction, whatever the architecture.

A seqlet is centred where a sliding sum of the contributions peaks; its
bases, cut a little wider than the pattern, are aligned (offset and strand)
to a seed, the best-attributed seqlet, and to the profile they build, a
few times over; seqlets that match the profile worse than background
(motif-less sites, a second motif) are left out. The profile is trimmed to
its informative columns.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tfbs.formats.motifs import encode_dna, reverse_complement_codes

#: Pseudocount per base and column of a profile (seqlet counts are small).
PSEUDOCOUNT = 0.25


@dataclass(frozen=True)
class Pattern:
    """A position probability matrix built from aligned seqlets.

    Attributes
    ----------
    ppm
        ``(width, 4)`` probabilities in ACGT order.
    n_seqlets
        Seqlets that built it.
    n_candidates
        Seqlets offered (one or more per window).
    """

    ppm: np.ndarray
    n_seqlets: int
    n_candidates: int


def seqlet_centres(scores: np.ndarray, core: int, per_window: int = 1, min_fraction: float = 0.5) -> list[int]:
    """Centres of the highest-scoring ``core``-wide windows of one contribution track.

    Greedy: the best window, then the best not overlapping it, and so on;
    a window must add up to more than zero and to ``min_fraction`` of the
    best.

    Examples
    --------
    >>> seqlet_centres(np.array([0, 0, 5, 5, 0, 0, 0, 3, 3, 0.0]), core=2, per_window=2)
    [3, 8]
    """
    sums = np.convolve(scores, np.ones(core), mode="valid")
    centres: list[int] = []
    taken = np.zeros(len(sums), dtype=bool)
    best = float(sums.max()) if len(sums) else 0.0
    while len(centres) < per_window and not taken.all():
        start = int(np.argmax(np.where(taken, -np.inf, sums)))
        if sums[start] <= 0 or sums[start] < min_fraction * best:
            break
        centres.append(start + core // 2)
        taken[max(0, start - core + 1) : start + core] = True
    return centres


def cut(window: np.ndarray, centre: int, width: int) -> np.ndarray | None:
    """Base codes of ``window`` (ASCII bytes) in ``width`` bp centred on ``centre``; None past an edge."""
    begin = centre - width // 2
    if begin < 0 or begin + width > len(window):
        return None
    return encode_dna(window[begin : begin + width].tobytes())


def profile(codes: np.ndarray) -> np.ndarray:
    """Position probability matrix ``(width, 4)`` of aligned base codes ``(n, width)``; N counts nowhere."""
    counts = np.stack([(codes == base).sum(axis=0) for base in range(4)], axis=1).astype(np.float64)
    counts += PSEUDOCOUNT
    return counts / counts.sum(axis=1, keepdims=True)


def _best_placements(codes: np.ndarray, log_odds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each seqlet's best-scoring ``(width,)`` slice on either strand, and its score."""
    width = len(log_odds)
    padded = np.concatenate([log_odds, np.zeros((1, 4))])  # N scores 0
    candidates = []
    for strand in (codes, np.stack([reverse_complement_codes(row) for row in codes])):
        for offset in range(codes.shape[1] - width + 1):
            piece = strand[:, offset : offset + width]
            candidates.append((piece, padded[np.arange(width), np.minimum(piece, 4)].sum(axis=1)))
    scores = np.stack([score for _, score in candidates])
    best = scores.argmax(axis=0)
    pieces = np.stack([candidates[choice][0][row] for row, choice in enumerate(best)])
    return pieces, scores[best, np.arange(len(codes))]


def align(codes: np.ndarray, width: int, iterations: int = 4) -> tuple[np.ndarray, int]:
    """Align seqlets into one profile.

    Parameters
    ----------
    codes
        ``(n, cut_width)`` base codes, most attributed first; ``cut_width``
        leaves room to shift each seqlet against the others.
    width
        Width of the profile (at most ``cut_width``).

    Returns
    -------
    tuple
        The ``(width, 4)`` profile and how many seqlets built it.
    """
    margin = (codes.shape[1] - width) // 2
    background = np.log(0.25)
    # The seed is the best-attributed seqlet, softened so others can move it.
    ppm = 0.5 * profile(codes[:1, margin : margin + width]) + 0.5 * 0.25
    kept = np.ones(len(codes), dtype=bool)
    for _ in range(iterations):
        pieces, scores = _best_placements(codes, np.log(ppm) - background)
        kept = scores > 0
        if not kept.any():
            kept[0] = True
        ppm = profile(pieces[kept])
    return ppm, int(kept.sum())


def information(ppm: np.ndarray) -> np.ndarray:
    """Information content (bits) of each column of a ``(width, 4)`` profile."""
    return 2.0 + (ppm * np.log2(np.clip(ppm, 1e-12, 1))).sum(axis=1)


def trim(ppm: np.ndarray, min_bits: float) -> np.ndarray:
    """The span from the first to the last column with at least ``min_bits`` (the whole profile if none)."""
    informative = np.flatnonzero(information(ppm) >= min_bits)
    if len(informative) == 0:
        return ppm
    return ppm[informative[0] : informative[-1] + 1]


def build_pattern(
    windows: list[np.ndarray],
    tracks: list[np.ndarray],
    offset: int,
    core: int,
    width: int,
    shift: int,
    per_window: int = 1,
    min_bits: float = 0.3,
) -> Pattern | None:
    """One TF's pattern from its windows and their contribution tracks.

    Parameters
    ----------
    windows
        ASCII bases of each window (``uint8``).
    tracks
        Contributions of ``window[offset:offset + len(track)]``.
    core
        Width of the sliding sum that places a seqlet.
    width
        Width of the profile before trimming.
    shift
        How far (bp) a seqlet may move against the others when aligned.

    Returns
    -------
    Pattern or None
        None when no window has a seqlet.
    """
    found: list[tuple[float, np.ndarray]] = []
    for window, track in zip(windows, tracks):
        for centre in seqlet_centres(track, core, per_window):
            codes = cut(window, offset + centre, width + 2 * shift)
            if codes is not None:
                strength = float(track[max(0, centre - core // 2) : centre + core // 2 + 1].sum())
                found.append((strength, codes))
    if not found:
        return None
    found.sort(key=lambda item: -item[0])
    ppm, n = align(np.stack([codes for _, codes in found]), width)
    return Pattern(ppm=trim(ppm, min_bits), n_seqlets=n, n_candidates=len(found))
