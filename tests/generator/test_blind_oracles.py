"""The oracle with what no model can know taken out (synthetic.blind_oracles), on a small realistic simulation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from synthetic.blind_oracles import family_blind_chances, match_rank_chances, pooled_featureless
from synthetic.generate import load_pwms, simulate
from synthetic.oracle import site_chances
from synthetic.sites import MOTIFLESS, STRONG
from tfbs.config import GenerateConfig, TFSpec
from tfbs.config.profile import PartnerSpec, RealisticConfig

ROOT = Path(__file__).resolve().parents[2]
GEN = GenerateConfig(
    seed=11,
    motif_db=str(ROOT / "data" / "dream" / "annotations" / "HOCOMOCOv9.meme"),
    chromosomes={"chr1": 150_000, "chr2": 600_000, "chr8": 60_000, "chr11": 60_000, "chr21": 60_000},
    profile="realistic",
    realistic=RealisticConfig(partners=[PartnerSpec(name="HNF4A", motif="HNF4A_f1", expressed_in=["HepG2"])]),
    tfs=[
        TFSpec(name="FOXA1", motif="FOXA1_f1", family="forkhead", partners=["HNF4A"]),
        TFSpec(name="FOXA2", motif="FOXA2_f1", family="forkhead", partners=["HNF4A"]),
    ],
    cells=["GM12878", "HepG2", "K562"],
    sites_per_mb=85.0,
    motifless_bound_fraction=0.3,
)


@pytest.fixture(scope="module")
def simulation():
    pwms = load_pwms(GEN)
    genome, _, occupancy = simulate(GEN, pwms)
    return occupancy, genome, pwms


def test_the_family_blind_oracle_scores_the_lead_s_sites_by_the_share_taken_over(simulation) -> None:
    occupancy, _, _ = simulation
    lead, member = occupancy.sites["FOXA1"], occupancy.sites["FOXA2"]
    lead_chance, member_chance = site_chances(occupancy, "FOXA1"), site_chances(occupancy, "FOXA2")
    locs, chances = family_blind_chances(occupancy, "FOXA2", "FOXA1", member_chance, lead_chance)
    taken = member.shared
    assert 0 < taken.sum() < member.loc.shape[0]  # the member has sites of both origins
    assert sorted(locs.tolist()) == sorted(set(lead.loc.tolist()) | set(member.loc.tolist()))  # each once
    row = {loc: i for i, loc in enumerate(locs.tolist())}
    for kind in np.unique(lead.kind):
        share = taken[member.kind == kind].sum() / (lead.kind == kind).sum()
        assert 0 < share < 1
        for i in np.flatnonzero(lead.kind == kind):  # a left site: the lead's chance, as likely taken as any
            expected = lead_chance[i]
            if lead.loc[i] in set(member.loc[taken].tolist()):
                expected = member_chance[member.loc.tolist().index(lead.loc[i])]
            np.testing.assert_allclose(chances[row[int(lead.loc[i])]], share * expected)
    for i in np.flatnonzero(~taken):  # the member's own sites: nothing hidden
        np.testing.assert_array_equal(chances[row[int(member.loc[i])]], member_chance[i])


def test_match_rank_chances_follow_the_rank_and_leave_the_other_kinds(simulation) -> None:
    occupancy, genome, pwms = simulation
    sites, chance = occupancy.sites["FOXA2"], site_chances(occupancy, "FOXA2")
    by_rank = match_rank_chances(GEN, occupancy, genome, pwms, "FOXA2", chance)
    strong = sites.kind == STRONG
    np.testing.assert_array_equal(by_rank[~strong], chance[~strong])
    # Strong sites open in the first cell: each binds with 0.5 + 0.5 * strength, drawn or expected.
    rows = chance[strong][:, 0] > 0
    ratio = by_rank[strong][rows, 0] / chance[strong][rows, 0]
    assert rows.sum() > 50 and ratio.min() >= 0.5 and ratio.max() <= 2.0
    drawn = sites.strength[strong][rows]
    expected = ratio * (0.5 + 0.5 * drawn)
    # The ranks taken again are the generator's: the expectation tracks the drawn strength (fidelity 0.8).
    assert np.corrcoef(np.argsort(np.argsort(expected)), np.argsort(np.argsort(drawn)))[0, 1] > 0.6


def test_pooling_the_featureless_sites_keeps_each_cell_s_expected_bound_sites(simulation) -> None:
    occupancy, _, _ = simulation
    sites, chance = occupancy.sites["FOXA1"], site_chances(occupancy, "FOXA1")
    locs, pooled = pooled_featureless(occupancy, ["FOXA1"], sites.loc, chance)
    assert locs.shape[0] == sites.loc.shape[0] + occupancy.background.shape[0]
    np.testing.assert_allclose(pooled.sum(axis=0), chance.sum(axis=0))
    bare = (sites.kind == MOTIFLESS) & (sites.partners < 0)
    assert bare.any()
    background = pooled[sites.loc.shape[0] :]
    for cell in range(pooled.shape[1]):
        opened = occupancy.is_open[locs, cell]
        # Every open featureless location, site or not, has the same chance; a site with a motif keeps its own.
        same = np.concatenate([bare, np.ones(background.shape[0], bool)]) & opened
        assert np.ptp(pooled[same, cell]) < 1e-12 and pooled[same, cell][0] > 0
        np.testing.assert_array_equal(pooled[: sites.loc.shape[0]][~bare, cell], chance[~bare, cell])
