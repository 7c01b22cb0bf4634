"""overlap_flags by the real bedtools: bins of 200 bp against named interval
sources on one chromosome, half-open coordinates, checked on tiny inputs."""

from __future__ import annotations

import numpy as np
import pytest

from tfbs.formats.annotate import SUMMIT_REACH_BP, dnase_proximity, overlap_flags, peak_proximity
from tfbs.formats.dream import BIN_SIZE, BIN_STEP, read_dnase_peaks


def _intervals(*pairs: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """``(starts, ends)`` arrays from ``(start, end)`` pairs."""
    starts = np.array([p[0] for p in pairs], dtype=np.int64)
    ends = np.array([p[1] for p in pairs], dtype=np.int64)
    return starts, ends


def _brute_force(bin_starts: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """A bin overlaps when it shares a base with an interval: [s, s+200) vs [start, end)."""
    bin_ends = bin_starts + BIN_SIZE
    return ((starts[None, :] < bin_ends[:, None]) & (ends[None, :] > bin_starts[:, None])).any(axis=1)


def test_intervals_are_half_open_at_both_ends():
    bins = np.array([1000])
    touching = {
        "ends_at_bin_start": _intervals((800, 1000)),
        "starts_at_bin_end": _intervals((1200, 1400)),
        "first_base": _intervals((900, 1001)),
        "last_base": _intervals((1199, 1300)),
        "inside": _intervals((1050, 1060)),
        "covering": _intervals((0, 5000)),
    }
    flags = overlap_flags("chr2", bins, touching)
    assert {name: bool(flag[0]) for name, flag in flags.items()} == {
        "ends_at_bin_start": False,
        "starts_at_bin_end": False,
        "first_base": True,
        "last_base": True,
        "inside": True,
        "covering": True,
    }


def test_overlapping_grid_bins_each_get_their_own_flag():
    # Bins on the 50 bp grid overlap each other: a 10 bp peak at 420-430
    # lies in the bins starting at 250 ... 400, not in 200 or 450.
    bins = np.arange(0, 1000, BIN_STEP)
    flags = overlap_flags("chr2", bins, {"dnase:K562": _intervals((420, 430))})
    assert bins[flags["dnase:K562"]].tolist() == [250, 300, 350, 400]


def test_several_sources_in_one_pass_are_told_apart():
    bins = np.arange(0, 2000, BIN_SIZE)  # 0, 200, ..., 1800
    sources = {
        "blacklist": _intervals((0, 10)),
        "dnase:GM12878": _intervals((450, 460), (1850, 1900)),
        "dnase:K562": _intervals((1000, 1001)),
    }
    flags = overlap_flags("chr2", bins, sources)
    assert set(flags) == set(sources)
    assert bins[flags["blacklist"]].tolist() == [0]
    assert bins[flags["dnase:GM12878"]].tolist() == [400, 1800]
    assert bins[flags["dnase:K562"]].tolist() == [1000]


def test_empty_sources_and_bins_give_all_false_flags_for_every_source():
    bins = np.array([0, 200, 400])
    empty = (np.array([], dtype=np.int64), np.array([], dtype=np.int64))
    flags = overlap_flags("chr2", bins, {"blacklist": empty, "dnase:K562": _intervals((0, 1000))})
    assert flags["blacklist"].tolist() == [False, False, False]
    assert flags["dnase:K562"].tolist() == [True, True, True]

    only_empty = overlap_flags("chr2", bins, {"blacklist": empty})
    assert only_empty["blacklist"].dtype == bool and not only_empty["blacklist"].any()
    assert overlap_flags("chr2", bins, {}) == {}
    no_bins = overlap_flags("chr2", np.array([], dtype=np.int64), {"blacklist": _intervals((0, 10))})
    assert no_bins["blacklist"].shape == (0,)


def test_no_hit_at_all_gives_false_flags():
    flags = overlap_flags("chr2", np.array([0, 200]), {"dnase:K562": _intervals((5000, 6000))})
    assert flags["dnase:K562"].tolist() == [False, False]


def test_unsorted_and_nested_intervals_are_sorted_before_bedtools():
    # bedtools -sorted needs sorted input; the function sorts the intervals
    # itself, so sources may arrive in any order and nest inside each other.
    bins = np.arange(0, 3000, BIN_SIZE)
    sources = {
        "blacklist": _intervals((2500, 2510), (100, 2000), (150, 160)),
        "dnase:K562": _intervals((2900, 2950), (10, 20)),
    }
    flags = overlap_flags("chr2", bins, sources)
    for name, (starts, ends) in sources.items():
        assert flags[name].tolist() == _brute_force(bins, starts, ends).tolist(), name


def test_unsorted_bins_are_rejected_not_misflagged():
    # The docstring asks for sorted bins; others are refused rather than
    # answered for the wrong bins (bedtools -sorted would refuse them too).
    with pytest.raises(ValueError, match="chr2: bin starts out of order"):
        overlap_flags("chr2", np.array([400, 0, 200]), {"blacklist": _intervals((0, 10))})


def test_random_bins_and_intervals_agree_with_brute_force_overlap():
    rng = np.random.default_rng(7)
    bins = np.unique(rng.integers(0, 400, 250)) * BIN_STEP
    sources = {}
    for name in ("blacklist", "dnase:A549", "dnase:HepG2", "dnase:K562"):
        starts = rng.integers(0, 21000, 25)
        sources[name] = (starts, starts + rng.integers(1, 3000, 25))
    flags = overlap_flags("chr5", bins, sources)
    for name, (starts, ends) in sources.items():
        expected = _brute_force(bins, starts, ends)
        assert 0 < expected.sum() < len(bins), name  # the case is not trivial
        assert flags[name].tolist() == expected.tolist(), name


def test_scratch_directory_is_left_clean(tmp_path):
    flags = overlap_flags("chr2", np.array([0, 200]), {"blacklist": _intervals((250, 260))}, scratch=str(tmp_path))
    assert flags["blacklist"].tolist() == [False, True]
    assert list(tmp_path.iterdir()) == []


def test_proximity_falls_from_the_summit_and_is_zero_outside_the_peaks():
    # One peak [1000, 1600) with its summit at 1100; bins every 100 bp.
    bins = np.arange(600, 2000, 100)
    proximity = peak_proximity("chr2", bins, {"dnase:K562": (np.array([1000]), np.array([1600]), np.array([1100]))})
    centre_distance = np.abs(bins + BIN_SIZE // 2 - 1100)
    inside = (bins + BIN_SIZE > 1000) & (bins < 1600)
    expected = np.where(inside, 1 - np.minimum(centre_distance, SUMMIT_REACH_BP) / (2 * SUMMIT_REACH_BP), 0)
    np.testing.assert_allclose(proximity["dnase:K562"], expected, rtol=1e-6)
    assert proximity["dnase:K562"][bins == 1000][0] == 1.0  # the bin centred on the summit
    assert proximity["dnase:K562"].min() == 0 and np.all(proximity["dnase:K562"][inside] >= 0.5)


def test_a_bin_in_two_peaks_takes_the_nearer_summit_and_midpoints_stand_in():
    bins = np.array([1000])  # centre 1100
    two = {"dnase:K562": (np.array([900, 1050]), np.array([1300, 1500]), np.array([1000, 1150]))}
    assert peak_proximity("chr2", bins, two)["dnase:K562"].tolist() == [pytest.approx(1 - 50 / 1000)]
    no_summits = {"dnase:K562": (np.array([1000]), np.array([1400]))}  # midpoint 1200
    assert peak_proximity("chr2", bins, no_summits)["dnase:K562"].tolist() == [pytest.approx(0.9)]
    # Bins in any order and repeated, per cell.
    peaks = {"K562": {"chr2": two["dnase:K562"]}, "HepG2": {}}
    got = dnase_proximity("chr2", np.array([1000, 0, 1000]), peaks)
    assert got["K562"].tolist() == [pytest.approx(0.95), 0.0, pytest.approx(0.95)]
    assert got["HepG2"].tolist() == [0.0, 0.0, 0.0]


def test_dnase_peaks_are_read_with_their_summits(tmp_path):
    lines = [
        "chr2\t100\t300\t.\t500\t.\t9\t4\t3\t40\n",  # summit at 140
        "chr2\t500\t800\t.\t500\t.\t9\t4\t3\t-1\n",  # none called: the midpoint, 650
        "chr5\t0\t10\t.\t500\t.\t9\t4\t3\t0\n",
    ]
    path = tmp_path / "d.narrowPeak"
    path.write_text("".join(lines))
    peaks = read_dnase_peaks(str(path))
    assert {chrom: [c.tolist() for c in columns] for chrom, columns in peaks.items()} == {
        "chr2": [[100, 500], [300, 800], [140, 650]],
        "chr5": [[0], [10], [0]],
    }
    bed3 = tmp_path / "d.bed"
    bed3.write_text("chr2\t100\t300\n")
    assert [c.tolist() for c in read_dnase_peaks(str(bed3))["chr2"]] == [[100], [300], [200]]
