"""The generator's oracle with what no model can know taken out: how high a top of the ranking can go.

The oracle (:mod:`synthetic.oracle`) scores each location with the very
chance its labels were drawn with. Three things in that chance no input
tells a model, and each function here averages one out:

* :func:`family_blind_chances`: which of its family lead's sites a later
  member took over (:func:`synthetic.sites.assign_sites` draws them apart
  from the sequence);
* :func:`match_rank_chances`: a strong site's strength beyond what its PWM
  match rank tells (:func:`synthetic.sites.strength_from_scores` adds noise);
* :func:`pooled_featureless`: where a motif-less site without a partner
  lies, among the open regions without any site (no motif marks it).

Each takes and returns per-location chances, ``(locations, cells)``, that
:func:`synthetic.oracle.bin_chances` turns into P(B) per bin. What remains
still knows more than a model (exact site centres and kinds, which cells
express a partner): on a test set large enough to tell, its recall is above
what a model of these inputs can expect.
"""

from __future__ import annotations

import inspect
from statistics import NormalDist

import numpy as np

from synthetic.genome import base_frequencies
from synthetic.occupancy import Occupancy, match_reach
from synthetic.sites import MOTIFLESS, STRONG, binding_probability, match_scores, strength_from_scores
from tfbs.config import GenerateConfig
from tfbs.formats.motifs import log_odds


def family_blind_chances(
    occupancy: Occupancy, member: str, lead: str, member_chance: np.ndarray, lead_chance: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``member``'s chances without knowing which of ``lead``'s sites it took over.

    Each of the lead's sites of a kind scores the share of that kind the
    member took over times the chance it has for the member (a taken-over
    site) or would have (a site the member left: the lead's own chance there,
    the same kind, partner and openness, its strength from the lead's PWM).
    The member's own new sites keep their chance.

    Parameters
    ----------
    occupancy
        The simulation.
    member, lead
        A family's later member and its lead (the family's first TF).
    member_chance, lead_chance
        ``(sites, cells)`` chances of each TF's sites, in :attr:`Occupancy.sites` order.

    Returns
    -------
    tuple[numpy.ndarray, numpy.ndarray]
        Locations (the lead's sites, then the member's own) and their ``(locations, cells)`` chances.
    """
    own, theirs = occupancy.sites[member], occupancy.sites[lead]
    taken = own.shared
    chance_at = dict(zip(theirs.loc.tolist(), lead_chance))
    chance_at.update(zip(own.loc[taken].tolist(), member_chance[taken]))
    share = {
        int(kind): taken[own.kind == kind].sum() / max(int((theirs.kind == kind).sum()), 1)
        for kind in np.unique(theirs.kind)
    }
    lead_part = np.array([share[int(kind)] * chance_at[loc] for kind, loc in zip(theirs.kind, theirs.loc.tolist())])
    locs = np.concatenate([theirs.loc, own.loc[~taken]]).astype(np.int64)
    return locs, np.concatenate([lead_part.reshape(-1, member_chance.shape[1]), member_chance[~taken]])


def match_rank_chances(
    gen: GenerateConfig,
    occupancy: Occupancy,
    genome: list[np.ndarray],
    pwms: dict[str, np.ndarray],
    tf: str,
    chance: np.ndarray,
) -> np.ndarray:
    """``chance`` with each strong site's strength replaced by its expectation given the site's PWM match rank.

    :func:`synthetic.sites.strength_from_scores` makes a strength
    ``Phi(f z + sqrt(1 - f^2) e)`` of the match rank's normal score ``z``
    and noise ``e``; its expectation given ``z`` is ``Phi(f z / sqrt(2 -
    f^2))``. The ranks are taken again from ``genome`` (motifs planted) with
    ``tf``'s PWM, where the generator took them.

    Returns
    -------
    numpy.ndarray
        ``(sites, cells)``, a copy; weak and motif-less sites as they were.
    """
    fidelity = inspect.signature(strength_from_scores).parameters["fidelity"].default
    sites, out = occupancy.sites[tf], chance.copy()
    strong = np.flatnonzero(sites.kind == STRONG)
    if strong.size == 0:
        return out
    loc = sites.loc[strong]
    matrix = log_odds(pwms[tf], base_frequencies(gen.gc_content))
    matched = match_scores(genome, occupancy.chrom[loc], occupancy.centre[loc], matrix, match_reach(gen))
    ranks = (np.argsort(np.argsort(matched, kind="stable"), kind="stable") + 0.5) / strong.shape[0]
    normal = NormalDist()
    scale = fidelity / np.sqrt(2.0 - fidelity**2)
    expected = np.array([normal.cdf(scale * normal.inv_cdf(r)) for r in ranks])
    kinds = sites.kind[strong]
    out[strong] *= (binding_probability(kinds, expected) / binding_probability(kinds, sites.strength[strong]))[:, None]
    return out


def pooled_featureless(
    occupancy: Occupancy, tfs: list[str], loc: np.ndarray, chance: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Chances where a motif-less site without a partner (of any of ``tfs``) and an open region without a site
    share one chance per cell, their mean where open: a model sees no motif at either, only the DNase peak.

    The expected number of bound sites per cell is kept: the pooled total is shared among the open locations.

    Returns
    -------
    tuple[numpy.ndarray, numpy.ndarray]
        Locations (``loc``, then the open regions without a site) and their ``(locations, cells)`` chances.

    Examples
    --------
    >>> from synthetic.sites import Sites
    >>> occ = Occupancy(chrom=np.zeros(3, np.int64), centre=np.arange(3) * 1000, is_open=np.ones((3, 1), bool),
    ...     background=np.array([2]), sites={"T": Sites(np.array([0, 1]), np.array([STRONG, MOTIFLESS], np.int8),
    ...     np.array([0.5, 0.5]), np.zeros(2, bool))}, bound={})
    >>> locs, pooled = pooled_featureless(occ, ["T"], np.array([0, 1]), np.array([[0.75], [0.9]]))
    >>> locs.tolist(), pooled[:, 0].round(2).tolist()
    ([0, 1, 2], [0.75, 0.45, 0.45])
    """
    bare: set[int] = set()
    for tf in tfs:
        sites = occupancy.sites[tf]
        bare.update(sites.loc[(sites.kind == MOTIFLESS) & (sites.partners < 0)].tolist())
    locs = np.concatenate([loc, occupancy.background]).astype(np.int64)
    chances = np.concatenate([chance, np.zeros((occupancy.background.shape[0], chance.shape[1]))])
    pooled = np.concatenate([np.isin(loc, sorted(bare)), np.ones(occupancy.background.shape[0], bool)])
    opened = occupancy.is_open[locs[pooled]]
    mean = chances[pooled].sum(axis=0) / np.maximum(opened.sum(axis=0), 1)
    chances[pooled] = opened * mean
    return locs, chances
