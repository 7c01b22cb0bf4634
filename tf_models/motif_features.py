"""Motif match features of DREAM bins, from one scan of each chromosome.

The challenge's winning methods scored bins with motif features beside
DNase: the best match of each motif in the bin and around it. Scanning each
row's window would scan every base once per row that holds it (a bin sits in
20 overlapping 1 kb windows, and in one row per cell); here each chromosome
is scanned once per motif, the best match starting in each 50 bp block is
kept (:func:`block_maxima`), and a bin's features are maxima over the
blocks of a few widths centred on it (:func:`bin_features`). DREAM bins
start on the 50 bp grid, so the blocks are exact: a match *starting* in a
width counts for it (it may end a motif's width past it).
"""

from __future__ import annotations

import numpy as np

from tfbs.formats.dream import BIN_SIZE, BIN_STEP
from tfbs.formats.motifs import encode_dna, scan_positions

#: Bases scanned at a time: bounds memory on long chromosomes (two float32 per base and motif).
_CHUNK_BP = 4_000_000
#: A block without any scannable position (a run of N, the chromosome's end).
NO_MATCH = np.float32(-1e3)
#: The widths centred on a bin whose best matches are its features: the bin's middle, the bin, the bin
#: with 50 and 100 bp either side (where a bin's own site lies, as the labelling rule and motif offsets
#: place it) and the shards' 1 kb window.
WIDTHS = (100, 200, 300, 400, 1000)


def block_maxima(bases: np.ndarray, motifs: list[np.ndarray], block: int = BIN_STEP) -> np.ndarray:
    """Best log-odds match (either strand) of each motif starting in each block of a chromosome.

    Parameters
    ----------
    bases
        The chromosome as ``uint8`` ASCII (:func:`tfbs.formats.genome.load_chromosome`).
    motifs
        ``(w, 4)`` log-odds matrices.
    block
        Block length (the DREAM bin step).

    Returns
    -------
    numpy.ndarray
        ``float32`` ``(ceil(len / block), len(motifs))``; :data:`NO_MATCH` where
        no match of the motif starts in the block.

    Examples
    --------
    >>> from tfbs.formats.motifs import log_odds
    >>> acgt = log_odds(np.eye(4) * 0.97 + 0.01)
    >>> blocks = block_maxima(np.frombuffer(b"T" * 60 + b"ACGT" + b"T" * 36, np.uint8), [acgt], block=50)
    >>> blocks.shape, bool(blocks[1, 0] > 5 > blocks[0, 0])
    ((2, 1), True)
    """
    length = bases.shape[0]
    n_blocks = -(-length // block)
    out = np.full((n_blocks, len(motifs)), NO_MATCH, dtype=np.float32)
    codes = encode_dna(bases.tobytes())
    for column, scores in enumerate(motifs):
        width = scores.shape[0]
        for first in range(0, length, _CHUNK_BP):
            # Matches starting in [first, last): the chunk plus the motif's overhang.
            last = min(first + _CHUNK_BP, length)
            piece = codes[first : min(last + width - 1, length)]
            if piece.shape[0] < width:
                continue
            matches = scan_positions(piece, scores)[: last - first]
            padded = np.full(-(-matches.shape[0] // block) * block, NO_MATCH, dtype=np.float32)
            padded[: matches.shape[0]] = matches
            best = padded.reshape(-1, block).max(axis=1)
            out[first // block : first // block + best.shape[0], column] = np.maximum(
                out[first // block : first // block + best.shape[0], column], best
            )
    return out


def _window_max(blocks: np.ndarray, first: np.ndarray, count: int) -> np.ndarray:
    """Max of ``blocks[first + k]`` for ``k < count`` per row (blocks outside the chromosome count as no match)."""
    index = first[:, None] + np.arange(count)[None, :]
    inside = (index >= 0) & (index < blocks.shape[0])
    values = blocks[np.clip(index, 0, blocks.shape[0] - 1)]
    values[~inside] = NO_MATCH
    return values.max(axis=1)


def bin_features(blocks: np.ndarray, starts: np.ndarray, block: int = BIN_STEP) -> np.ndarray:
    """Per bin and motif: the best match starting in each of :data:`WIDTHS` bp centred on the bin.

    Parameters
    ----------
    blocks
        :func:`block_maxima` of the bins' chromosome.
    starts
        Bin starts (multiples of ``block``).

    Returns
    -------
    numpy.ndarray
        ``float32`` ``(n, len(WIDTHS) * motifs)``: every motif's maxima over
        the narrowest width, then the next width's, and so on.

    Examples
    --------
    >>> blocks = np.arange(40, dtype=np.float32)[:, None]  # block k's best match is k
    >>> bin_features(blocks, np.array([1000])).tolist()  # the bin is blocks 20-23
    [[22.0, 23.0, 24.0, 25.0, 31.0]]
    """
    if np.any(starts % block):
        raise ValueError(f"bin starts must lie on the {block} bp grid")
    centre = starts // block + BIN_SIZE // (2 * block)
    columns = [_window_max(blocks, centre - width // (2 * block), width // block) for width in WIDTHS]
    return np.concatenate(columns, axis=1).astype(np.float32)


def _stretch_features(bases: np.ndarray, motifs: list[np.ndarray], starts: np.ndarray) -> np.ndarray:
    """:func:`bin_features` of bins close together, scanning only the stretch of ``bases`` their widths reach."""
    reach = max(WIDTHS) // 2
    first_block = max(0, (int(starts.min()) + BIN_SIZE // 2 - reach) // BIN_STEP)
    end_block = (int(starts.max()) + BIN_SIZE // 2 + reach) // BIN_STEP
    # A match starting in the last block needed ends a motif's width past it.
    first_bp = first_block * BIN_STEP
    stop_bp = min(bases.shape[0], end_block * BIN_STEP + max(m.shape[0] for m in motifs) - 1)
    return bin_features(block_maxima(bases[first_bp:stop_bp], motifs), starts - first_bp)


def region_features(bases: np.ndarray, motifs: list[np.ndarray], starts: np.ndarray) -> np.ndarray:
    """:func:`bin_features` of bins of one chromosome, scanning only around them.

    What prediction reads for a regions file or a part of the genome: the
    bins are grouped where they lie within a window of each other, and each
    group's stretch is scanned once, so dense bins cost one scan of their
    stretch and scattered ones a window each. The result equals
    :func:`bin_features` of the whole chromosome's :func:`block_maxima`.

    Parameters
    ----------
    bases
        The chromosome as ``uint8`` ASCII.
    motifs
        ``(w, 4)`` log-odds matrices.
    starts
        Bin starts (multiples of the bin step), in any order.

    Returns
    -------
    numpy.ndarray
        ``float32`` ``(n, len(WIDTHS) * motifs)``, rows in the order of ``starts``.
    """
    out = np.empty((starts.shape[0], len(WIDTHS) * len(motifs)), dtype=np.float32)
    if starts.shape[0] == 0:
        return out
    order = np.argsort(starts, kind="stable")
    ordered = starts[order]
    # A new group where the next bin's widths no longer overlap the last one's.
    breaks = np.flatnonzero(np.diff(ordered) > max(WIDTHS) + BIN_SIZE) + 1
    for group in np.split(np.arange(ordered.shape[0]), breaks):
        out[order[group]] = _stretch_features(bases, motifs, ordered[group])
    return out
