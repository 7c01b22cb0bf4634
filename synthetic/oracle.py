"""The generator's oracle: the probability each bin is labelled B, from the simulation itself.

A model only sees sequence, the cell and DNase peaks; the generator knows,
for every TF site, its kind, its strength and whether its location is open
in each cell, and it decided binding by a coin with probability
:func:`~synthetic.sites.binding_probability`. The oracle scores a
bin with that probability, times the chance that a bound site's peak covers
the bin enough for the official rule to call it B (the peak's width and
summit are random, :func:`label_geometry`). Scored like a submission, it is
the one reference here no model of these inputs is expected to pass: it is
the exact chance of B given the hidden state (it knows the coin's odds, not
its outcome, and it sees the motif-less sites no sequence model can).

:func:`coarse_pwm_chances` is a second, weaker reference: the generator's
mean binding probability within coarse classes of the TF's PWM match. It is
not a bound: a model reads more than those classes and passes it on long
motifs.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from synthetic.formats import write_gzip
from synthetic.occupancy import P_OTHER, Occupancy
from synthetic.peaks import CHIP_SUMMIT_SD, CHIP_WIDTH_RANGE
from synthetic.sites import binding_chances

#: Bins farther than this from a site's centre cannot touch its peak.
_REACH_BP = 600


def label_geometry(
    bin_size: int = 200,
    width_range: tuple[int, int] = CHIP_WIDTH_RANGE,
    summit_sd: float = CHIP_SUMMIT_SD,
    samples: int = 4000,
    seed: int = 0,
) -> np.ndarray:
    """P(a bin is B | a bound site) by the bin's start relative to the site centre.

    The conservative peak of a bound site is drawn as in
    :func:`~synthetic.peaks.peaks_around`; a bin is B when the
    peak covers half the bin or half the peak (``bedtools intersect -f 0.5
    -F 0.5 -e``, the official rule).

    Returns
    -------
    numpy.ndarray
        ``float64`` of length ``2 * 600 + 1``; entry ``i`` is for a bin
        starting ``i - 600`` bp from the centre.

    Examples
    --------
    >>> table = label_geometry()
    >>> round(float(table[600 - 100]), 2), float(table[0])  # bin centred on the site, bin far away
    (1.0, 0.0)
    """
    rng = np.random.default_rng(seed)
    width = rng.integers(width_range[0], width_range[1] + 1, samples)
    left = np.rint(width * rng.uniform(0.35, 0.65, samples)).astype(np.int64)
    start = np.rint(rng.normal(0.0, summit_sd, samples)).astype(np.int64) - left
    end = start + width
    bin_start = np.arange(-_REACH_BP, _REACH_BP + 1)[:, None]
    overlap = np.clip(np.minimum(end, bin_start + bin_size) - np.maximum(start, bin_start), 0, None)
    return ((overlap >= bin_size / 2) | (overlap >= width / 2)).mean(axis=1)


def oracle_scores(
    occupancy: Occupancy, tf: str, chrom_index: int, starts: np.ndarray, geometry: np.ndarray
) -> np.ndarray:
    """P(B) of each bin of one chromosome for ``tf``, per cell.

    Parameters
    ----------
    occupancy
        The simulation.
    tf
        The TF.
    chrom_index
        The chromosome's index in the generated genome.
    starts
        Bin starts on that chromosome.
    geometry
        :func:`label_geometry`.

    Returns
    -------
    numpy.ndarray
        ``float64`` (bins, cells): one minus the chance that no nearby site is
        bound and labels the bin.
    """
    # (sites, cells): the very chances the labels were drawn with.
    return bin_chances(occupancy, occupancy.sites[tf].loc, site_chances(occupancy, tf), chrom_index, starts, geometry)


def bin_chances(
    occupancy: Occupancy,
    loc: np.ndarray,
    p_bound: np.ndarray,
    chrom_index: int,
    starts: np.ndarray,
    geometry: np.ndarray,
) -> np.ndarray:
    """P(B) per bin and cell when location ``loc[i]`` is bound with probability ``p_bound[i]`` (per cell)."""
    on_chrom = np.flatnonzero(occupancy.chrom[loc] == chrom_index)
    centre = occupancy.centre[loc[on_chrom]]
    order = np.argsort(centre, kind="stable")
    centre, on_chrom = centre[order], on_chrom[order]
    p_bound = p_bound[on_chrom]
    first = np.searchsorted(centre, starts - _REACH_BP)
    last = np.searchsorted(centre, starts + _REACH_BP, side="right")
    unlabelled = np.ones((starts.shape[0], p_bound.shape[1]))
    for k in range(int((last - first).max(initial=0))):
        site = first + k
        near = site < last
        site = np.where(near, site, 0)
        offset = np.clip(starts - centre[site] + _REACH_BP, 0, 2 * _REACH_BP)
        chance = np.where(near, geometry[offset], 0.0)[:, None] * p_bound[site]
        unlabelled *= 1.0 - chance
    return 1.0 - unlabelled


#: Quantile classes of the TF's best PWM match over all locations (the coarse-PWM reference).
#: Chosen on the demo's own data (20 classes: mean test auPRC 0.71, 40: 0.73, 80: 0.73).
SCORE_CLASSES = 40


def site_chances(occupancy: Occupancy, tf: str) -> np.ndarray:
    """``(sites, cells)``: the chance each of ``tf``'s sites was bound with (the basic rule if none was kept)."""
    if tf in occupancy.chance:
        return occupancy.chance[tf]
    return binding_chances(occupancy.sites[tf], occupancy.is_open, P_OTHER)


def coarse_pwm_chances(
    occupancy: Occupancy,
    tf: str,
    lead: str,
    match: dict[str, np.ndarray],
    partner_state: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The coarse-PWM reference: the chance ``tf`` binds each location, by its class of PWM match.

    A (location, cell)'s class: whether the location is open in the cell (a
    DNase peak), the quantile class of the TF's best PWM match near its
    exact centre among all locations, for a family member other than the
    lead whether the lead's PWM matches better, and (realistic profile)
    ``partner_state``. The chance is the generator's own mean binding
    chance over the (location, cell)s of that class; whether a site was
    planted there at all, its kind and strength, and the motif-less sites
    are averaged over.

    It is a reference, not a bound. It knows each location's exact centre,
    which a model does not (it sees the DNase summit, tens of bp off), and
    it lacks what a model has: several matches and their positions, the
    other TFs' motifs, what rules a site out. A model passes it on long
    motifs (CTCF, EGR1) and stays below it on the short forkhead one.

    Parameters
    ----------
    occupancy
        The simulation.
    tf
        The TF.
    lead
        The first TF of its family (``tf`` itself when it leads).
    match
        Best log-odds match at every location (:func:`synthetic.sites.match_scores`)
        of ``tf`` and of ``lead``.
    partner_state
        Realistic profile: ``(locations, cells)`` small integers, e.g. 0 no
        partner motif near the location, 1 one whose partner the cell does
        not express, 2 one it does (:func:`partner_states`).

    Returns
    -------
    tuple[numpy.ndarray, numpy.ndarray]
        Location ids and their ``(locations, cells)`` chance of being bound.
    """
    n_locations = occupancy.is_open.shape[0]
    is_open = occupancy.is_open
    expected = np.zeros(is_open.shape)
    sites = occupancy.sites[tf]
    expected[sites.loc] = site_chances(occupancy, tf)
    score = match[tf]
    edges = np.quantile(score, np.linspace(0, 1, SCORE_CLASSES + 1)[1:-1])
    klass = np.searchsorted(edges, score, side="right")
    if lead != tf:
        klass = klass * 2 + (match[lead] > score)
    states = np.zeros(is_open.shape, np.int64) if partner_state is None else partner_state.astype(np.int64)
    chance = np.zeros(is_open.shape)
    for k in np.unique(klass):
        rows = np.flatnonzero(klass == k)
        for opened in (True, False):
            for state in np.unique(states[rows]):
                members = (is_open[rows] == opened) & (states[rows] == state)
                total = (expected[rows] * members).sum()
                if total:
                    chance[rows] += total / int(members.sum()) * members
    return np.arange(n_locations), chance


def partner_states(
    occupancy: Occupancy, partner_matches: dict[int, np.ndarray], thresholds: dict[int, float]
) -> np.ndarray:
    """Per (location, cell): 0 no partner motif, 1 one whose partner the cell lacks, 2 one it expresses.

    Parameters
    ----------
    occupancy
        The simulation (``present``: partners by cell).
    partner_matches
        ``{partner index: best match at every location}`` of the TF's partners.
    thresholds
        ``{partner index: score}`` above which a match counts as the partner's motif.
    """
    states = np.zeros(occupancy.is_open.shape, np.int8)
    assert occupancy.present is not None
    for index, scores in partner_matches.items():
        has = scores >= thresholds[index]
        expressed = occupancy.present[index][None, :]
        states = np.maximum(states, np.where(has[:, None], np.where(expressed, 2, 1), 0).astype(np.int8))
    return states


def coarse_pwm_scores(
    occupancy: Occupancy, chance: np.ndarray, chrom_index: int, starts: np.ndarray, geometry: np.ndarray
) -> np.ndarray:
    """P(B) of each bin of one chromosome from :func:`coarse_pwm_chances`' chances, per cell."""
    return bin_chances(occupancy, np.arange(chance.shape[0]), chance, chrom_index, starts, geometry)


def read_label_table(path: str, chroms: list[str]) -> tuple[list[str], pa.Table]:
    """Rows of a DREAM label file on the given chromosomes.

    Returns
    -------
    tuple[list[str], pyarrow.Table]
        The cell names (header order) and a table ``chr, start, stop, <cells>``.
    """
    table = pacsv.read_csv(
        path,
        parse_options=pacsv.ParseOptions(delimiter="\t", quote_char=False),
        convert_options=pacsv.ConvertOptions(
            column_types={"chr": pa.string(), "start": pa.int64(), "stop": pa.int64()}
        ),
    )
    cells = table.column_names[3:]
    return cells, table.filter(pc.is_in(table["chr"], value_set=pa.array(list(chroms))))


def write_oracle_table(
    occupancy: Occupancy,
    tf: str,
    labels_path: str,
    chrom_names: list[str],
    cell_names: list[str],
    chroms: list[str],
    out_path: str,
    chance: np.ndarray | None = None,
) -> int:
    """Write the oracle of ``tf`` for the bins of its label file on ``chroms``.

    The file has the label file's layout, a probability in place of each
    label: header ``chr start stop <cells...>``, tab-separated, gzipped.
    ``chrom_names`` and ``cell_names`` are in the simulation's order (its
    chromosome indices and occupancy columns). With ``chance``
    (:func:`coarse_pwm_chances`), the file holds the coarse-PWM reference instead.

    Returns
    -------
    int
        Bins written.
    """
    cells, table = read_label_table(labels_path, chroms)
    chrom = table["chr"].to_numpy(zero_copy_only=False)
    starts = table["start"].to_numpy()
    bin_size = int(table["stop"][0].as_py() - starts[0]) if table.num_rows else 200
    geometry = label_geometry(bin_size)
    scores = np.zeros((table.num_rows, len(cells)))
    for name in chroms:
        rows = np.flatnonzero(chrom == name)
        if rows.size:
            index = chrom_names.index(name)
            by_cell = (
                oracle_scores(occupancy, tf, index, starts[rows], geometry)
                if chance is None
                else coarse_pwm_scores(occupancy, chance, index, starts[rows], geometry)
            )
            # The label file orders its cells alphabetically, the simulation as configured.
            scores[rows] = by_cell[:, [cell_names.index(cell) for cell in cells]]
    lines = [
        f"{c}\t{s}\t{e}\t" + "\t".join(f"{p:.4g}" for p in row)
        for c, s, e, row in zip(chrom, starts, table["stop"].to_numpy(), scores)
    ]
    write_gzip(out_path, "\t".join(["chr", "start", "stop", *cells]) + "\n" + "".join(line + "\n" for line in lines))
    return table.num_rows
