"""Where TFs bind: planted motif sites, open chromatin and occupancy.

The model, in the terms of the ENCODE-DREAM data it imitates:

* A *location* is a genomic position with a chromatin state per cell:
  open with probability ``open_fraction``, correlated across cells (a
  Gaussian copula with a part shared by all cells) and with the strength of
  the site there, as constitutive strong sites (CTCF's) are open in most
  cell types.
* A TF's *sites* are locations of three kinds: strong motif instances drawn
  from its (sharpened) PWM, weak (degraded) instances, and motif-less sites
  bound through a cofactor. A strong site's strength in [0, 1] follows the
  rank of the TF's best PWM match there, with noise; other sites get a
  uniform strength.
* A site is bound in a cell only if its location is open there; then with
  probability ``0.5 + 0.5 * strength`` for strong motifs and a high fixed
  probability for weak and motif-less sites (they exist *because* they are
  bound). Many strong motifs sit in closed chromatin and stay unbound, so a
  motif scan cannot separate bound from unbound bins.
* TFs of one family reuse many of the first member's sites (same location
  and sequence, strength re-rated with their own PWM), which is what lets a
  model that reads the TF's protein transfer what it learnt between them.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from tfbs.formats.motifs import (
    degrade_instances,
    reverse_complement_codes,
    sample_instances,
    scan_positions,
)

#: Site kinds.
STRONG, WEAK, MOTIFLESS = 0, 1, 2


@dataclass
class Sites:
    """One TF's sites (arrays aligned by site)."""

    loc: np.ndarray  # location id
    kind: np.ndarray  # STRONG, WEAK or MOTIFLESS
    strength: np.ndarray  # in [0, 1]
    shared: np.ndarray  # True if inherited from the family's first TF
    #: Index into ``generate.realistic.partners`` of the partner the site binds through, -1 for none: a
    #: motif site that binds only where the partner is expressed, or (MOTIFLESS) an indirect one.
    partner: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.partner is None:
            self.partner = np.full(self.loc.shape[0], -1, dtype=np.int16)

    @property
    def partners(self) -> np.ndarray:
        """:attr:`partner`, never None."""
        assert self.partner is not None
        return self.partner


def free_slots(gap_masks: list[np.ndarray], slot: int) -> tuple[np.ndarray, np.ndarray]:
    """Fixed-size slots of sequence containing no N and no blacklisted base.

    Parameters
    ----------
    gap_masks
        Per chromosome, True where a base is N or blacklisted.
    slot
        Slot length; one slot holds at most one feature, so sites and their
        peaks do not pile on each other.

    Returns
    -------
    tuple[numpy.ndarray, numpy.ndarray]
        Chromosome index and start of each free slot.
    """
    chroms, starts = [], []
    for index, mask in enumerate(gap_masks):
        n_slots = mask.shape[0] // slot
        blocked = np.asarray(mask[: n_slots * slot].reshape(n_slots, slot).any(axis=1))
        # Neighbouring a gap is also refused: peaks reach ~250 bp beyond a centre.
        near = blocked.copy()
        near[1:] |= blocked[:-1]
        near[:-1] |= blocked[1:]
        blocked = near
        free = np.flatnonzero(~blocked)
        chroms.append(np.full(free.shape[0], index, dtype=np.int32))
        starts.append(free.astype(np.int64) * slot)
    return np.concatenate(chroms), np.concatenate(starts)


def site_counts(
    motif_sites: float,
    weak_fraction: float,
    motifless_fraction: float,
    p_strong: float,
    p_other: float,
    rng: np.random.Generator,
) -> tuple[int, int, int]:
    """How many strong, weak and motif-less sites a TF gets.

    ``motif_sites`` motif instances (strong + weak) are split so that, in
    expectation, weak ones make ``weak_fraction`` and motif-less ones
    ``motifless_fraction`` of *bound* sites, given the kinds' binding
    probabilities; each count is then a Poisson draw.

    Returns
    -------
    tuple[int, int, int]
        ``(strong, weak, motifless)``.
    """
    strong_share = 1.0 - weak_fraction - motifless_fraction
    weak_per_strong = weak_fraction / strong_share * p_strong / p_other
    strong = motif_sites / (1.0 + weak_per_strong)
    weak = motif_sites - strong
    motifless = motifless_fraction / strong_share * strong * p_strong / p_other
    return int(rng.poisson(strong)), int(rng.poisson(weak)), int(rng.poisson(motifless))


def binding_probability(kind: np.ndarray, strength: np.ndarray, p_other: float = 0.9) -> np.ndarray:
    """Probability that an open site is bound: ``0.5 + 0.5 * strength`` for strong motifs."""
    return np.where(kind == STRONG, 0.5 + 0.5 * strength, p_other)


def binding_chances(
    sites: Sites,
    is_open: np.ndarray,
    p_other: float,
    present: np.ndarray | None = None,
    partner_leak: float = 0.0,
    closed_binding: float = 0.0,
) -> np.ndarray:
    """Chance each site is bound in each cell: what the labels are drawn from, and the oracle reads.

    Parameters
    ----------
    sites
        One TF's sites.
    is_open
        ``(locations, cells)`` open chromatin.
    p_other
        Binding probability of weak and motif-less sites (:func:`binding_probability`).
    present
        ``(partners, cells)``: the partner is expressed; None when no site has a partner.
    partner_leak
        Relative chance a partner's site binds where the partner is absent.
    closed_binding
        Relative chance a site binds where its location is closed (0: only open sites bind).

    Returns
    -------
    numpy.ndarray
        ``float64`` ``(sites, cells)``.

    Examples
    --------
    >>> s = Sites(np.array([0, 1]), np.array([STRONG, MOTIFLESS], np.int8), np.array([1.0, 0.5]), np.zeros(2, bool),
    ...           np.array([-1, 0], np.int16))
    >>> binding_chances(s, np.array([[True, False], [True, True]]), 0.9, np.array([[True, False]]), 0.1, 0.5).tolist()
    [[1.0, 0.5], [0.9, 0.09000000000000001]]
    """
    open_here = is_open[sites.loc]
    chance = binding_probability(sites.kind, sites.strength, p_other)[:, None] * np.where(
        open_here, 1.0, closed_binding
    )
    partnered = sites.partners >= 0
    if present is not None and partnered.any():
        chance[partnered] *= np.where(present[sites.partners[partnered]], 1.0, partner_leak)
    return chance


def strength_from_scores(scores: np.ndarray, rng: np.random.Generator, fidelity: float = 0.8) -> np.ndarray:
    """Site strengths that follow motif quality, with noise.

    Better matches are occupied more, as in vivo; ``fidelity`` is the
    correlation (on the normal scale) between the score rank and strength.

    Parameters
    ----------
    scores
        Log-odds score of each planted instance.
    rng
        Source of randomness.
    fidelity
        In [0, 1]; 1 makes strength a function of the score alone.

    Returns
    -------
    numpy.ndarray
        Strengths in (0, 1).
    """
    n = scores.shape[0]
    if n == 0:
        return np.zeros(0)
    ranks = (np.argsort(np.argsort(scores, kind="stable"), kind="stable") + 0.5) / n
    normal = NormalDist()
    latent = fidelity * np.array([normal.inv_cdf(r) for r in ranks]) + np.sqrt(1 - fidelity**2) * rng.standard_normal(n)
    return np.array([normal.cdf(x) for x in latent])


def plant_motifs(
    genome: list[np.ndarray],
    chrom: np.ndarray,
    center: np.ndarray,
    pwm: np.ndarray,
    weak: np.ndarray,
    rng: np.random.Generator,
    sharpen: float,
    offset_sd: float | None = None,
    offset_max: int = 100,
) -> None:
    """Write motif instances into the genome codes, centred near each site.

    Parameters
    ----------
    genome
        Per chromosome ``uint8`` codes, modified in place.
    chrom, center
        Site positions.
    pwm
        The TF's probability matrix.
    weak
        True where the instance is degraded (:func:`degrade_instances`).
    rng
        Source of randomness (instances, strand, small offset).
    sharpen
        Instances are drawn from ``pwm ** sharpen`` (rows renormalised):
        ChIP-bound sites are enriched for near-consensus matches, and a
        plain PWM draw of a short motif (FOXA's 11 bp) scores no higher
        than chance matches in a few hundred kb of random sequence.
    offset_sd, offset_max
        The instance's centre lies a normal offset of this SD (clipped to
        ``offset_max``) from the site's centre; None: within 10 bp (the
        basic profile).
    """
    n = chrom.shape[0]
    if n == 0:
        return
    width = pwm.shape[0]
    sharp = pwm**sharpen
    instances = sample_instances(sharp / sharp.sum(axis=1, keepdims=True), n, rng)
    if weak.any():
        instances[weak] = degrade_instances(instances[weak], pwm, rng)
    minus = rng.random(n) < 0.5
    instances[minus] = reverse_complement_codes(instances[minus])
    if offset_sd is None:
        offsets = rng.integers(-10, 11, size=n)
    else:
        offsets = np.clip(np.rint(rng.normal(0.0, offset_sd, n)), -offset_max, offset_max).astype(np.int64)
    starts = center - width // 2 + offsets
    for index in range(n):
        genome[chrom[index]][starts[index] : starts[index] + width] = instances[index]


def match_scores(
    genome: list[np.ndarray], chrom: np.ndarray, center: np.ndarray, scores: np.ndarray, reach: int = 40
) -> np.ndarray:
    """Best log-odds match (either strand) within ``reach`` bp of each site centre.

    Used to rate inherited family sites with the inheriting TF's own PWM.
    """
    width = scores.shape[0]
    offsets = np.arange(-reach - width // 2, reach + width - width // 2)
    if chrom.size == 0:
        return np.zeros(0)
    windows = np.stack([genome[c][x + offsets] for c, x in zip(chrom.tolist(), center.tolist())])
    return scan_positions(windows, scores).max(axis=-1)


def open_chromatin(
    strength: np.ndarray,
    n_cells: int,
    open_fraction: float,
    rng: np.random.Generator,
    correlation: float = 0.25,
    strength_weight: float = 0.5,
) -> np.ndarray:
    """Cell-specific open state of each location, correlated across cells.

    The latent accessibility of a location in a cell is a standard normal
    mixing a part common to all cells, a part following the site's strength
    (strong sites, like constitutive CTCF sites, are open in most cells) and
    a cell-specific part; the location is open where it falls below the
    ``open_fraction`` quantile, so that marginal is kept exactly.

    Parameters
    ----------
    strength
        Strength in (0, 1) of each location's site (uniform for sites-less
        regions).
    n_cells
        Number of cells.
    open_fraction
        Marginal probability of being open in one cell.
    rng
        Source of randomness.
    correlation, strength_weight
        Variance shares of the common and the strength parts.

    Returns
    -------
    numpy.ndarray
        Boolean ``(n_locations, n_cells)``.
    """
    normal = NormalDist()
    threshold = normal.inv_cdf(open_fraction)
    n = strength.shape[0]
    strength_part = -np.array([normal.inv_cdf(min(max(x, 1e-6), 1 - 1e-6)) for x in strength]).reshape(n, 1)
    common = rng.standard_normal((n, 1))
    own = rng.standard_normal((n, n_cells))
    latent = (
        np.sqrt(correlation) * common
        + np.sqrt(strength_weight) * strength_part
        + np.sqrt(1.0 - correlation - strength_weight) * own
    )
    return latent < threshold


def assign_sites(
    counts: tuple[int, int, int],
    lead: Sites | None,
    share: float,
    rng: np.random.Generator,
) -> tuple[Sites, np.ndarray]:
    """Choose a TF's sites: inherited from its family lead, plus new ones.

    Parameters
    ----------
    counts
        ``(strong, weak, motifless)`` from :func:`site_counts`.
    lead
        Sites of the family's first TF, or None for that first TF.
    share
        Expected share of each kind taken over from the lead.
    rng
        Source of randomness.

    Returns
    -------
    tuple[Sites, numpy.ndarray]
        The inherited part (``loc`` filled) and the kind of each new site
        still needing a location (the caller allocates and fills them).
    """
    inherited: dict[str, list] = {key: [] for key in ("loc", "kind", "strength", "partner")}
    new_kinds = []
    for kind, count in zip((STRONG, WEAK, MOTIFLESS), counts):
        taken = 0
        if lead is not None:
            pool = np.flatnonzero(lead.kind == kind)
            taken = min(int(rng.binomial(count, share)), pool.shape[0])
            chosen = np.sort(rng.choice(pool, size=taken, replace=False))
            inherited["loc"].append(lead.loc[chosen])
            inherited["kind"].append(lead.kind[chosen])
            inherited["strength"].append(lead.strength[chosen])
            inherited["partner"].append(lead.partners[chosen])
        new_kinds.append(np.full(count - taken, kind, dtype=np.int8))
    if inherited["loc"]:
        part = Sites(
            loc=np.concatenate(inherited["loc"]).astype(np.int64),
            kind=np.concatenate(inherited["kind"]).astype(np.int8),
            strength=np.concatenate(inherited["strength"]),
            shared=np.ones(sum(len(x) for x in inherited["loc"]), dtype=bool),
            partner=np.concatenate(inherited["partner"]).astype(np.int16),
        )
    else:
        part = Sites(np.zeros(0, np.int64), np.zeros(0, np.int8), np.zeros(0), np.zeros(0, bool))
    return part, np.concatenate(new_kinds)


def join_sites(first: Sites, second: Sites) -> Sites:
    """Concatenate two site tables."""
    return Sites(
        loc=np.concatenate([first.loc, second.loc]),
        kind=np.concatenate([first.kind, second.kind]),
        strength=np.concatenate([first.strength, second.strength]),
        shared=np.concatenate([first.shared, second.shared]),
        partner=np.concatenate([first.partners, second.partners]),
    )
