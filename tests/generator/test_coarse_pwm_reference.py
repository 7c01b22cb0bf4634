"""The coarse-PWM reference: the generator's chance of binding by class of PWM match, and the oracle."""

from __future__ import annotations

import numpy as np

from synthetic.occupancy import Occupancy
from synthetic.oracle import coarse_pwm_chances, coarse_pwm_scores, label_geometry, oracle_scores
from synthetic.sites import MOTIFLESS, STRONG, Sites


def _occupancy() -> Occupancy:
    """Two strong motif sites (strength 0 and 1), one motif-less site and one background region, two cells."""
    sites = Sites(
        loc=np.array([0, 1, 2]),
        kind=np.array([STRONG, STRONG, MOTIFLESS], dtype=np.int8),
        strength=np.array([0.0, 1.0, 0.5]),
        shared=np.zeros(3, dtype=bool),
    )
    is_open = np.array([[True, False], [True, True], [True, False], [True, True]])
    return Occupancy(
        chrom=np.zeros(4, dtype=np.int64),
        centre=np.array([1000, 3000, 5000, 7000]),
        is_open=is_open,
        background=np.array([3]),
        sites={"TF": sites},
        bound={"TF": is_open[:3]},
    )


def test_a_hand_checked_case() -> None:
    occupancy = _occupancy()
    # The motif-less site (2) scores like the background region (3): nothing in the sequence tells them apart.
    match = {"TF": np.array([1.0, 2.0, 0.0, 0.0])}
    _, chance = coarse_pwm_chances(occupancy, "TF", "TF", match)
    # Each location keeps the mean binding probability of its score class where
    # open: 0.5 + 0.5 * strength for the two motif sites; the motif-less site
    # (bound with 0.9) is one of three open (location, cell)s of its class.
    expected = np.array([[0.5, 0.0], [1.0, 1.0], [0.3, 0.0], [0.3, 0.3]])
    np.testing.assert_allclose(chance, expected)
    geometry = label_geometry()
    starts = np.array([2900, 4900, 6900, 9000])  # bins centred on locations 1, 2, 3, and far from all
    scores = coarse_pwm_scores(occupancy, chance, 0, starts, geometry)
    np.testing.assert_allclose(scores[:, 0], [1.0, 0.3, 0.3, 0.0], atol=0.01)
    np.testing.assert_allclose(scores[:, 1], [1.0, 0.0, 0.3, 0.0], atol=0.01)
    # The oracle knows the background region is no site, and the motif-less site is one.
    oracle = oracle_scores(occupancy, "TF", starts=starts, chrom_index=0, geometry=geometry)
    np.testing.assert_allclose(oracle[:, 0], [1.0, 0.9, 0.0, 0.0], atol=0.01)


def test_a_paralogue_is_told_by_which_pwm_matches_better() -> None:
    """For a family member, the lead's better match at a location is an observable of its own."""
    occupancy = _occupancy()
    occupancy.sites["LEAD"] = Sites(
        loc=np.array([0, 1]), kind=np.array([STRONG, STRONG], np.int8), strength=np.zeros(2), shared=np.zeros(2, bool)
    )
    same_score = np.array([1.0, 1.0, 0.0, 0.0])
    lead_better = {"TF": same_score, "LEAD": np.array([2.0, 0.0, -1.0, -1.0])}
    _, split = coarse_pwm_chances(occupancy, "TF", "LEAD", lead_better)
    _, pooled = coarse_pwm_chances(occupancy, "TF", "LEAD", {"TF": same_score, "LEAD": same_score - 1})
    np.testing.assert_allclose(split[:2, 0], [0.5, 1.0])
    # One score class without the lead's score: the mean over the three open (location, cell)s.
    np.testing.assert_allclose(pooled[:2, 0], [(0.5 + 1.0 + 1.0) / 3] * 2)
