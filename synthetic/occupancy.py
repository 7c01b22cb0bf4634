"""Simulate who binds where: sites of every TF, open chromatin, occupancy.

The building blocks and the biology they encode are in
:mod:`synthetic.sites`; this module runs them in order over the
whole genome and returns one :class:`Occupancy`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from synthetic.background import Islands
from synthetic.genome import base_frequencies
from synthetic.partners import partner_offsets, partner_presence
from synthetic.sites import (
    MOTIFLESS,
    STRONG,
    WEAK,
    Sites,
    assign_sites,
    binding_chances,
    free_slots,
    join_sites,
    match_scores,
    open_chromatin,
    plant_motifs,
    site_counts,
    strength_from_scores,
)
from tfbs.config import GenerateConfig, TFSpec
from tfbs.errors import ConfigError
from tfbs.formats.motifs import log_odds

#: Mean probability that an open site is bound, strong motifs / other kinds
#: (see :func:`binding_probability`); used to size the site sets.
P_STRONG, P_OTHER = 0.75, 0.9


@dataclass
class Occupancy:
    """The simulated state of every location, TF and cell."""

    chrom: np.ndarray  # chromosome index of each location
    centre: np.ndarray  # centre of each location
    is_open: np.ndarray  # (locations, cells) open chromatin
    background: np.ndarray  # ids of the open-region locations without a site
    sites: dict[str, Sites]  # per TF
    bound: dict[str, np.ndarray]  # per TF, (sites, cells)
    #: Per TF, (sites, cells): the chance each was bound with (:func:`synthetic.sites.binding_chances`).
    chance: dict[str, np.ndarray] = field(default_factory=dict)
    #: (partners, cells): which cells express each partner of the realistic profile; None in the basic one.
    present: np.ndarray | None = None
    #: Realistic profile: the CpG islands, each an open promoter location (ids ``promoters``).
    islands: Islands | None = None
    promoters: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    #: Realistic profile: open regions holding a partner's motif and no TF site.
    decoys: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))


@dataclass
class SlotPool:
    """Free genome slots handed out in a random order, one feature each."""

    chrom: np.ndarray
    start: np.ndarray
    order: np.ndarray
    slot: int
    used: int = 0

    def take(self, n: int, what: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Chromosome index and a jittered centre for ``n`` new features."""
        if self.used + n > self.order.shape[0]:
            raise ConfigError(
                f"generate: the genome has {self.order.shape[0]} free {self.slot} bp slots, too few for the "
                f"{what}; lower sites_per_mb / dnase_background_per_mb or enlarge generate.chromosomes"
            )
        picked = self.order[self.used : self.used + n]
        self.used += n
        centre = self.start[picked] + self.slot // 2 + rng.integers(-50, 51, size=n)
        return self.chrom[picked], centre


def simulate_occupancy(
    gen: GenerateConfig,
    genome: list[np.ndarray],
    masks: list[np.ndarray],
    pwms: dict[str, np.ndarray],
    rngs: tuple[np.random.Generator, np.random.Generator],
    islands: Islands | None = None,
) -> Occupancy:
    """Plant every TF's sites into ``genome`` and decide occupancy per cell.

    Parameters
    ----------
    gen
        Rates, fractions, TFs (in order; the first of a family leads it) and cells.
    genome
        Per chromosome base codes, modified in place (motifs are planted).
    masks
        Per chromosome, True where a base is N or blacklisted (kept free).
    pwms
        Probability matrix of each TF, and of each partner (realistic profile).
    rngs
        ``(sites_rng, chromatin_rng)``: placement and planting, then
        chromatin and binding draws.
    islands
        Realistic profile: the CpG islands (:func:`synthetic.background.apply_background`),
        each an open promoter.

    Returns
    -------
    Occupancy
    """
    site_rng, chromatin_rng = rngs
    gc, slot = gen.gc_content, gen.slot_bp
    slot_chrom, slot_start = free_slots(masks, slot)
    pool = SlotPool(slot_chrom, slot_start, site_rng.permutation(slot_chrom.shape[0]), slot)
    usable_mb = float(sum(int((~m).sum()) for m in masks)) / 1e6
    base_freqs = base_frequencies(gc)

    realistic = gen.profile == "realistic"
    placed = _Placed()
    for spec in gen.tfs:
        _place_sites(spec, gen, genome, pwms, pool, placed, usable_mb, base_freqs, site_rng)

    # Open regions without a site come from a pool shared by the cells, so
    # background DNase peaks recur across cell types as real ones do.
    pool_share = 2.0 / 3.0
    chrom, centre = pool.take(
        math.ceil(gen.dnase_background_per_mb * usable_mb / pool_share), "DNase background regions", site_rng
    )
    background = np.arange(placed.n_locations, placed.n_locations + chrom.shape[0])
    n_cells = len(gen.cells)
    profile = gen.realistic
    correlation = profile.open_correlation if realistic else 0.25
    is_open = np.concatenate(
        [
            open_chromatin(
                np.concatenate(placed.strength_parts), n_cells, gen.open_fraction, chromatin_rng, correlation
            ),
            open_chromatin(
                chromatin_rng.random(size=int(chrom.shape[0])), n_cells, pool_share, chromatin_rng, strength_weight=0.0
            ),
        ]
    )
    extra = _Extra(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, n_cells), bool))
    present = None
    if realistic:
        extra = _realistic_locations(gen, genome, pwms, pool, usable_mb, islands, (site_rng, chromatin_rng))
        is_open = np.concatenate([is_open, extra.is_open])
        present = partner_presence(gen, chromatin_rng)
    dice = chromatin_rng.random(is_open.shape)
    leak, closed = (profile.partner_leak, profile.closed_binding) if realistic else (0.0, 0.0)
    chance = {tf: binding_chances(s, is_open, P_OTHER, present, leak, closed) for tf, s in placed.sites.items()}
    bound = {tf: dice[s.loc] < chance[tf] for tf, s in placed.sites.items()}
    n_placed = placed.n_locations + chrom.shape[0]
    n_decoys = extra.decoy_count
    return Occupancy(
        chrom=np.concatenate([*placed.chrom_parts, chrom, extra.chrom]).astype(np.int64),
        centre=np.concatenate([*placed.centre_parts, centre, extra.centre]).astype(np.int64),
        is_open=is_open,
        background=np.concatenate([background, np.arange(n_placed, n_placed + extra.chrom.shape[0])]),
        sites=placed.sites,
        bound=bound,
        chance=chance,
        present=present,
        islands=islands,
        promoters=np.arange(n_placed + n_decoys, n_placed + extra.chrom.shape[0]),
        decoys=np.arange(n_placed, n_placed + n_decoys),
    )


@dataclass
class _Extra:
    """The realistic profile's site-less locations: partner decoys, then promoters."""

    chrom: np.ndarray
    centre: np.ndarray
    is_open: np.ndarray  # (locations, cells)
    decoy_count: int = 0


def _realistic_locations(
    gen: GenerateConfig,
    genome: list[np.ndarray],
    pwms: dict[str, np.ndarray],
    pool: SlotPool,
    usable_mb: float,
    islands: Islands | None,
    rngs: tuple[np.random.Generator, np.random.Generator],
) -> _Extra:
    """Partner decoys (a partner's motif in an open region no TF binds) and the islands' promoters."""
    site_rng, chromatin_rng = rngs
    profile, n_cells = gen.realistic, len(gen.cells)
    parts_chrom, parts_centre, parts_open = [], [], []
    n_decoys = 0
    if profile.partners and profile.partner_decoys_per_mb > 0:
        chrom, centre = pool.take(
            int(site_rng.poisson(profile.partner_decoys_per_mb * usable_mb)), "partner decoys", site_rng
        )
        which = site_rng.integers(0, len(profile.partners), size=chrom.shape[0])
        for index, partner in enumerate(profile.partners):
            picked = which == index
            plant_motifs(
                genome, chrom[picked], centre[picked], pwms[partner.name],
                np.zeros(int(picked.sum()), bool), site_rng, sharpen=gen.motif_sharpen, offset_sd=0.0,
            )  # fmt: skip
        parts_chrom.append(chrom)
        parts_centre.append(centre)
        parts_open.append(
            open_chromatin(chromatin_rng.random(size=int(chrom.shape[0])), n_cells, 2.0 / 3.0, chromatin_rng, 0.25, 0.0)
        )
        n_decoys = chrom.shape[0]
    if islands is not None and islands.chrom.size:
        parts_chrom.append(islands.chrom)
        parts_centre.append(islands.centre)
        parts_open.append(chromatin_rng.random((islands.chrom.shape[0], n_cells)) < profile.promoter_open_fraction)
    if not parts_chrom:
        return _Extra(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, n_cells), bool))
    return _Extra(np.concatenate(parts_chrom), np.concatenate(parts_centre), np.concatenate(parts_open), n_decoys)


@dataclass
class _Placed:
    """The locations placed so far, in order (their chromosome, centre and strength), and each TF's sites."""

    chrom_parts: list[np.ndarray] = field(default_factory=list)
    centre_parts: list[np.ndarray] = field(default_factory=list)
    strength_parts: list[np.ndarray] = field(default_factory=list)
    n_locations: int = 0
    sites: dict[str, Sites] = field(default_factory=dict)
    #: The first TF of each family, whose sites the others share.
    family_lead: dict[str, str] = field(default_factory=dict)


def _place_sites(
    spec: TFSpec,
    gen: GenerateConfig,
    genome: list[np.ndarray],
    pwms: dict[str, np.ndarray],
    pool: SlotPool,
    placed: _Placed,
    usable_mb: float,
    base_freqs: tuple[float, float, float, float],
    site_rng: np.random.Generator,
) -> None:
    """Place one TF's sites (some inherited from its family's lead), plant its motifs and add them to ``placed``."""
    sites, family_lead = placed.sites, placed.family_lead
    counts = site_counts(
        gen.sites_per_mb * usable_mb,
        gen.weak_motif_fraction,
        gen.motifless_bound_fraction,
        P_STRONG,
        P_OTHER,
        site_rng,
    )
    inherited, new_kinds = assign_sites(counts, sites.get(family_lead.get(spec.family, "")), gen.family_share, site_rng)
    chrom, centre = pool.take(new_kinds.shape[0], f"sites of {spec.name}", site_rng)
    realistic = gen.profile == "realistic"
    partner = _partner_sites(gen, spec, new_kinds, genome, pwms, chrom, centre, site_rng) if realistic else None
    has_motif = new_kinds != MOTIFLESS
    plant_motifs(
        genome,
        chrom[has_motif],
        centre[has_motif],
        pwms[spec.name],
        new_kinds[has_motif] == WEAK,
        site_rng,
        sharpen=gen.motif_sharpen,
        offset_sd=gen.realistic.motif_offset_sd if realistic else None,
        offset_max=gen.realistic.motif_offset_max,
    )
    fresh = Sites(
        loc=np.arange(placed.n_locations, placed.n_locations + new_kinds.shape[0]),
        kind=new_kinds,
        strength=site_rng.random(size=int(new_kinds.shape[0])),
        shared=np.zeros(new_kinds.shape[0], dtype=bool),
        partner=partner,
    )
    placed.n_locations += new_kinds.shape[0]
    placed.chrom_parts.append(chrom)
    placed.centre_parts.append(centre)
    both = join_sites(inherited, fresh)
    # Strong sites are occupied according to how well *this* TF's PWM
    # matches them (inherited family sites included, so paralogues differ
    # a little); weak and motif-less sites are bound through partners.
    strong = np.flatnonzero(both.kind == STRONG)
    all_chrom, all_centre = np.concatenate(placed.chrom_parts), np.concatenate(placed.centre_parts)
    matched = match_scores(
        genome,
        all_chrom[both.loc[strong]],
        all_centre[both.loc[strong]],
        log_odds(pwms[spec.name], base_freqs),
        reach=match_reach(gen),
    )
    both.strength[strong] = strength_from_scores(matched, site_rng)
    placed.strength_parts.append(both.strength[inherited.loc.shape[0] :])
    sites[spec.name] = both
    family_lead.setdefault(spec.family, spec.name)


def match_reach(gen: GenerateConfig) -> int:
    """How far from a site's centre its motif may lie: where strengths and the coarse reference look."""
    return gen.realistic.motif_offset_max + 10 if gen.profile == "realistic" else 40


def _partner_sites(
    gen: GenerateConfig,
    spec: TFSpec,
    kinds: np.ndarray,
    genome: list[np.ndarray],
    pwms: dict[str, np.ndarray],
    chrom: np.ndarray,
    centre: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """Give some of a TF's new sites a partner and plant its motif near them; the partner index per site."""
    partner = np.full(kinds.shape[0], -1, dtype=np.int16)
    if not spec.partners:
        return partner
    profile = gen.realistic
    names = [p.name for p in profile.partners]
    share = np.where(kinds == MOTIFLESS, profile.indirect_share, profile.partner_site_fraction)
    chosen = np.flatnonzero(rng.random(kinds.shape[0]) < share)
    own = np.array([names.index(name) for name in spec.partners], dtype=np.int16)
    partner[chosen] = own[rng.integers(0, own.shape[0], size=chosen.shape[0])]
    offsets = partner_offsets(chosen.shape[0], profile.partner_offset_bp, rng)
    for index in np.unique(partner[chosen]).tolist():
        picked = chosen[partner[chosen] == index]
        plant_motifs(
            genome, chrom[picked], centre[picked] + offsets[partner[chosen] == index], pwms[names[index]],
            np.zeros(picked.shape[0], bool), rng, sharpen=gen.motif_sharpen, offset_sd=0.0,
        )  # fmt: skip
    return partner


def relaxed_only_locations(
    tf_sites: Sites,
    bound: np.ndarray,
    is_open: np.ndarray,
    background: np.ndarray,
    per_bound: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """Locations of the weak peaks found only in the relaxed set of one TF and cell.

    Half sit at open but unbound motif sites of the TF (weak occupancy the
    IDR step rejects), half in open regions without a site; each half takes
    from the other when it runs short.

    Parameters
    ----------
    tf_sites
        The TF's sites.
    bound
        Per site, bound in this cell.
    is_open
        Per location, open in this cell.
    background
        Ids of the site-less open-region locations.
    per_bound
        Expected relaxed-only peaks per bound site.
    rng
        Source of randomness.

    Returns
    -------
    numpy.ndarray
        Location ids.
    """
    n = int(rng.poisson(per_bound * bound.sum()))
    motif_open = tf_sites.loc[(tf_sites.kind != MOTIFLESS) & is_open[tf_sites.loc] & ~bound]
    open_background = background[is_open[background]]
    from_sites = min(motif_open.shape[0], n - min(n // 2, open_background.shape[0]))
    from_background = min(open_background.shape[0], n - from_sites)
    return np.concatenate(
        [
            rng.choice(motif_open, size=from_sites, replace=False),
            rng.choice(open_background, size=from_background, replace=False),
        ]
    ).astype(np.int64)
