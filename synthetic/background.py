"""A structured background for the realistic profile: CpG-island promoters and a repeat family.

Random sequence of the genome's G+C content is the easy background: every
GC-rich motif match in it is chance, and nothing recurs. Real genomes have
GC-rich, CpG-dense islands at most promoters, open in nearly every cell
type, where GC-rich motifs (EGR1's, CTCF's) match by chance, and about half
their sequence in repeats, whose copies repeat whatever motif matches their
consensus holds. Both are written into the base codes before any site is
placed (sites may overwrite repeat copies, never islands).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from synthetic.genome import background_codes
from tfbs.config.profile import RealisticConfig


@dataclass(frozen=True)
class Islands:
    """CpG islands of the genome: chromosome index, start and end of each (half-open)."""

    chrom: np.ndarray
    start: np.ndarray
    end: np.ndarray

    @property
    def centre(self) -> np.ndarray:
        return (self.start + self.end) // 2


def cpg_island_codes(length: int, gc: float, rng: np.random.Generator) -> np.ndarray:
    """Bases of one CpG island: G+C rich, with CpG at the rate its bases give (no depletion).

    Examples
    --------
    >>> codes = cpg_island_codes(20_000, 0.65, np.random.default_rng(0))
    >>> round(float(np.isin(codes, (1, 2)).mean()), 2)
    0.65
    """
    return background_codes(length, gc, rng)


def deplete_cpg(codes: np.ndarray, rng: np.random.Generator, keep: float = 0.25) -> None:
    """Mutate most CpG dinucleotides of bulk sequence to TpG/CpA, in place, as methylation does.

    Outside islands the human genome holds about a quarter of the CpG its
    G+C content predicts; islands are where it does not.
    """
    cg = np.flatnonzero((codes[:-1] == 1) & (codes[1:] == 2))
    mutate = cg[rng.random(cg.shape[0]) >= keep]
    # C->T on the forward strand or G->A (C->T on the reverse), at random.
    forward = rng.random(mutate.shape[0]) < 0.5
    codes[mutate[forward]] = 3
    codes[mutate[~forward] + 1] = 0


def place_islands(
    masks: list[np.ndarray], profile: RealisticConfig, rng: np.random.Generator
) -> tuple[Islands, list[tuple[int, int, int]]]:
    """Where the CpG islands go: in sequenced DNA, apart from gaps and each other.

    Returns
    -------
    tuple[Islands, list]
        The islands, and the same as ``(chrom index, start, end)``.
    """
    low, high = profile.cpg_island_bp
    chroms, starts, ends = [], [], []
    for index, mask in enumerate(masks):
        length = mask.shape[0]
        taken = mask.copy()
        for _ in range(int(rng.poisson(profile.cpg_islands_per_mb * length / 1e6))):
            size = int(rng.integers(low, high + 1))
            for _attempt in range(20):
                start = int(rng.integers(0, max(length - size, 1)))
                # 1 kb apart from gaps and other islands, so each is a promoter of its own.
                if not taken[max(0, start - 1_000) : start + size + 1_000].any():
                    taken[start : start + size] = True
                    chroms.append(index)
                    starts.append(start)
                    ends.append(start + size)
                    break
    islands = Islands(np.array(chroms, np.int64), np.array(starts, np.int64), np.array(ends, np.int64))
    return islands, list(zip(chroms, starts, ends))


def write_islands(genome: list[np.ndarray], islands: Islands, gc: float, rng: np.random.Generator) -> None:
    """Overwrite each island's bases with CpG-island sequence, in place."""
    for chrom, start, end in zip(islands.chrom.tolist(), islands.start.tolist(), islands.end.tolist()):
        genome[chrom][start:end] = cpg_island_codes(end - start, gc, rng)


def mutate(codes: np.ndarray, rate: float, rng: np.random.Generator) -> np.ndarray:
    """A copy of ``codes`` with a share ``rate`` of its bases replaced by another base."""
    copy = codes.copy()
    hit = np.flatnonzero(rng.random(copy.shape[0]) < rate)
    copy[hit] = (copy[hit] + rng.integers(1, 4, size=hit.shape[0])) % 4
    return copy


def write_repeats(
    genome: list[np.ndarray], masks: list[np.ndarray], profile: RealisticConfig, gc: float, rng: np.random.Generator
) -> int:
    """Insert diverged copies of one repeat consensus until they cover ``repeat_fraction``; returns the copies.

    Copies land on either strand, never over an N, a blacklisted base or an
    island (``masks``).
    """
    if profile.repeat_fraction == 0:
        return 0
    consensus = background_codes(profile.repeat_bp, min(gc + 0.1, 0.6), rng)
    # Copies age as the bulk does: their CpG decays the same way.
    deplete_cpg(consensus, rng)
    copies = 0
    for chrom, mask in zip(genome, masks):
        length = chrom.shape[0]
        wanted = int(profile.repeat_fraction * length / profile.repeat_bp)
        for _ in range(wanted):
            start = int(rng.integers(0, max(length - profile.repeat_bp, 1)))
            stop = start + profile.repeat_bp
            if stop > length or mask[start:stop].any():
                continue
            copy = mutate(consensus, profile.repeat_divergence, rng)
            if rng.random() < 0.5:
                copy = (3 - copy)[::-1]
            chrom[start:stop] = copy
            copies += 1
    return copies


def apply_background(
    genome: list[np.ndarray], masks: list[np.ndarray], profile: RealisticConfig, gc: float, rng: np.random.Generator
) -> Islands:
    """CpG depletion of the bulk, islands, then repeats; ``masks`` gain the islands (no site goes there).

    Returns
    -------
    Islands
    """
    for chrom in genome:
        deplete_cpg(chrom, rng)
    islands, _ = place_islands(masks, profile, rng)
    write_islands(genome, islands, profile.cpg_island_gc, rng)
    for chrom, start, end in zip(islands.chrom.tolist(), islands.start.tolist(), islands.end.tolist()):
        masks[chrom][start:end] = True
    write_repeats(genome, masks, profile, gc, rng)
    return islands
