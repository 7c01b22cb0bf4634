"""The embedded ENCODE-DREAM-format data set, generated from a seed.

:func:`generate_dataset` writes, under the :class:`~tfbs.config.DataConfig`
layout, everything the pipeline reads for a real DREAM run:

* ``genome.fa`` (+ ``.fai``), chromosome sizes, a blacklist BED.gz;
* per TF and cell, ChIP-seq ``conservative.train`` and ``relaxed``
  narrowPeak.gz files; per cell a DNase conservative narrowPeak.gz;
* the TF protein FASTA;
* per TF the label file ``<TF>.train.labels.tsv.gz``, built from those peaks
  with the official bedtools rule (:mod:`preprocess.labels`) on *all*
  chromosomes, test chromosomes included, so the demo can be evaluated;
* ``baseline_motif_scan.json``: how well the PWM alone ranks the test bins.

The biology it simulates is described in :mod:`preprocess.synthetic.sites`.
Each component draws from its own generator keyed by the seed and a name, so
the output is byte-for-byte reproducible.
"""

from __future__ import annotations

import json
import logging
import math
import time
import zlib
from pathlib import Path

import numpy as np

from preprocess.labels import build_labels
from preprocess.motifs import N_CODE, read_meme
from preprocess.synthetic.baseline import motif_scan_baseline
from preprocess.synthetic.formats import (
    concat_peaks,
    write_bed_gz,
    write_chrom_sizes,
    write_fasta,
    write_narrowpeak_gz,
)
from preprocess.synthetic.genome import blacklist_intervals, simulate_chromosome
from preprocess.synthetic.peaks import artifact_peaks, peaks_around
from preprocess.synthetic.proteins import write_protein_fasta
from preprocess.synthetic.sites import (
    MOTIFLESS,
    STRONG,
    WEAK,
    Locations,
    Sites,
    assign_sites,
    binding_probability,
    free_slots,
    join_sites,
    open_chromatin,
    plant_motifs,
    site_counts,
    strength_from_scores,
)
from tfbs.config import DREAM_TEST_CHROMS, DataConfig, GenerateConfig
from tfbs.uri import local_path


def _rng(seed: int, key: str) -> np.random.Generator:
    """A generator for one component, keyed by a stable hash of its name."""
    return np.random.default_rng([seed, zlib.crc32(key.encode("utf-8"))])


def _local(uri: str, what: str) -> Path:
    """The local path of an output URI; remote outputs are refused clearly."""
    try:
        return Path(local_path(uri))
    except ValueError:
        raise ValueError(f"generate writes local files only; data.{what} is {uri}") from None


def _check(gen: GenerateConfig, data: DataConfig) -> None:
    """Refuse configurations the generator cannot honour, naming the key."""
    names = [tf.name for tf in gen.tfs]
    if len(gen.cells) < 3:
        raise ValueError(f"generate.cells: need at least 3 cell types for cross-cell splits, got {gen.cells}")
    if len(set(names)) != len(names) or len(set(gen.cells)) != len(gen.cells):
        raise ValueError("generate.tfs / generate.cells: names must be unique")
    missing_tfs = [tf for tf in data.tfs if tf not in names]
    if missing_tfs:
        raise ValueError(f"data.tfs: {missing_tfs} are not generated (generate.tfs has {names})")
    missing_cells = [c for c in data.cells or [] if c not in gen.cells]
    if missing_cells:
        raise ValueError(f"data.cells: {missing_cells} are not generated (generate.cells has {gen.cells})")
    if gen.weak_motif_fraction + gen.motifless_bound_fraction >= 0.9:
        raise ValueError("generate.weak_motif_fraction + motifless_bound_fraction must stay below 0.9")
    if min(gen.chromosomes.values()) < 20_000:
        raise ValueError("generate.chromosomes: every chromosome needs at least 20000 bp")


def _load_pwms(gen: GenerateConfig) -> dict[str, np.ndarray]:
    """The PWM of each TF, from the MEME file."""
    path = local_path(gen.motif_db)
    if not Path(path).is_file():
        raise FileNotFoundError(f"generate.motif_db: MEME file not found: {gen.motif_db}")
    motifs = read_meme(path)
    pwms = {}
    for tf in gen.tfs:
        if tf.motif not in motifs:
            close = sorted(m for m in motifs if m.split("_")[0] == tf.motif.split("_")[0])
            raise ValueError(f"generate.tfs[{tf.name}].motif: {tf.motif!r} not in {path}; same TF: {close}")
        pwms[tf.name] = motifs[tf.motif]
    return pwms


def generate_dataset(
    gen: GenerateConfig,
    data: DataConfig,
    *,
    gc: float = 0.41,
    family_share: float = 0.6,
    slot: int = 600,
    sharpen: float = 2.0,
    jobs: int = 2,
) -> dict:
    """Generate the embedded ENCODE-DREAM-format data set.

    Parameters
    ----------
    gen
        What to simulate (genome, TFs, cells, rates, seed).
    data
        Where to write it (``file://`` URIs only).
    gc
        Background G+C content (hg19: 41 %).
    family_share
        Expected share of a TF's sites taken over from the first TF of its
        family.
    slot
        Genome slot per feature (bp); at most one site or open region per slot.
    sharpen
        Exponent applied to the PWM before drawing planted instances (see
        :func:`preprocess.synthetic.sites.plant_motifs`).
    jobs
        Cells labelled concurrently by :func:`preprocess.labels.build_labels`.

    Returns
    -------
    dict
        ``paths`` of every file, ``genome`` figures, per TF ``sites`` and per
        cell ``bound_sites``, peak counts, label counts and ``bound_fraction``
        (B bins / all bins), the motif-scan ``baseline`` per TF and cell on
        the test chromosomes, and ``seconds``.

    Raises
    ------
    ValueError
        On a configuration it cannot honour (the message names the key) or a
        remote output URI.
    FileNotFoundError
        If the motif file is missing.
    """
    log = logging.getLogger("tfbs.generate")
    started = time.perf_counter()
    _check(gen, data)
    pwms = _load_pwms(gen)
    names = list(gen.chromosomes)
    lengths = np.array([gen.chromosomes[c] for c in names], dtype=np.int64)
    cells = list(gen.cells)
    root = _local(data.root, "root")
    root.mkdir(parents=True, exist_ok=True)

    # 1. Genome, gaps and blacklist.
    genome: list[np.ndarray] = []
    masks: list[np.ndarray] = []
    for name, length in zip(names, lengths.tolist()):
        codes, _gaps = simulate_chromosome(length, gc, _rng(gen.seed, f"genome:{name}"))
        genome.append(codes)
        masks.append(codes == N_CODE)
    blacklist_rng = _rng(gen.seed, "blacklist")
    blacklist: list[tuple[int, int, int]] = []
    for index, mask in enumerate(masks):
        for start, stop in blacklist_intervals(mask, gen.blacklist_regions, blacklist_rng):
            blacklist.append((index, start, stop))
            mask[start:stop] = True
    usable_mb = float(sum(int((~m).sum()) for m in masks)) / 1e6

    # 2. TF sites, planted family by family in configuration order.
    slot_chrom, slot_start = free_slots(masks, slot)
    site_rng = _rng(gen.seed, "sites")
    order = site_rng.permutation(slot_chrom.shape[0])
    cursor = 0

    def take(n: int, what: str) -> tuple[np.ndarray, np.ndarray]:
        nonlocal cursor
        if cursor + n > order.shape[0]:
            raise ValueError(
                f"generate: the genome has {order.shape[0]} free {slot} bp slots, too few for the {what}; "
                "lower sites_per_mb / dnase_background_per_mb or enlarge generate.chromosomes"
            )
        picked = order[cursor : cursor + n]
        cursor += n
        centre = slot_start[picked] + slot // 2 + site_rng.integers(-50, 51, size=n)
        return slot_chrom[picked], centre

    locations = Locations()
    loc_strength: list[np.ndarray] = []
    sites: dict[str, Sites] = {}
    family_lead: dict[str, str] = {}
    p_strong, p_other = 0.75, 0.9  # mean binding probabilities, see binding_probability
    at = (1.0 - gc) / 2.0
    base_freqs = (at, gc / 2.0, gc / 2.0, at)
    for spec in gen.tfs:
        counts = site_counts(
            gen.sites_per_mb * usable_mb, gen.weak_motif_fraction, gen.motifless_bound_fraction, p_strong, p_other, site_rng
        )
        lead = sites.get(family_lead.get(spec.family, ""))
        inherited, new_kinds = assign_sites(counts, lead, family_share, site_rng)
        chrom, centre = take(new_kinds.shape[0], f"sites of {spec.name}")
        has_motif = new_kinds != MOTIFLESS
        motif_scores = plant_motifs(
            genome, chrom[has_motif], centre[has_motif], pwms[spec.name], new_kinds[has_motif] == WEAK, site_rng,
            sharpen=sharpen, background=base_freqs,
        )
        # Strong sites are occupied according to their match quality; weak
        # and motif-less sites are bound through partners, whatever their motif.
        strength = site_rng.random(new_kinds.shape[0])
        strong = np.flatnonzero(new_kinds == STRONG)
        strength[strong] = strength_from_scores(motif_scores[new_kinds[has_motif] == STRONG], site_rng)
        fresh = Sites(
            loc=locations.add(chrom, centre),
            kind=new_kinds,
            strength=strength,
            shared=np.zeros(new_kinds.shape[0], dtype=bool),
        )
        loc_strength.append(strength)
        sites[spec.name] = join_sites(inherited, fresh)
        family_lead.setdefault(spec.family, spec.name)

    # 3. Open regions without a site (a pool shared by the cells, so that
    #    background DNase peaks recur across cell types as real ones do).
    pool_share = 2.0 / 3.0
    n_pool = math.ceil(gen.dnase_background_per_mb * usable_mb / pool_share)
    background = locations.add(*take(n_pool, "DNase background regions"))
    loc_chrom = np.asarray(locations.chrom, dtype=np.int64)
    loc_centre = np.asarray(locations.center, dtype=np.int64)

    # 4. Chromatin per cell and occupancy per TF and cell.
    chromatin_rng = _rng(gen.seed, "chromatin")
    is_open = np.concatenate(
        [
            open_chromatin(np.concatenate(loc_strength), len(cells), gen.open_fraction, chromatin_rng),
            open_chromatin(chromatin_rng.random(background.shape[0]), len(cells), pool_share, chromatin_rng,
                           strength_weight=0.0),
        ]
    )
    dice = chromatin_rng.random(is_open.shape)
    bound = {
        tf: is_open[s.loc] & (dice[s.loc] < binding_probability(s.kind, s.strength, p_other)[:, None])
        for tf, s in sites.items()
    }

    # 5. Files: genome, sizes, blacklist, proteins.
    paths: dict = {"root": str(root)}
    fasta = _local(data.genome_fasta, "genome_fasta")
    write_fasta(fasta, dict(zip(names, genome)))
    bases = np.concatenate(genome)
    acgt = bases != N_CODE
    gc_real = float(np.isin(bases[acgt], (1, 2)).mean())
    log.info("wrote %s: %d chromosomes, %d bp (%d N), GC %.3f", fasta, len(names), bases.size, int((~acgt).sum()), gc_real)
    sizes_path = _local(data.chrom_sizes, "chrom_sizes")
    write_chrom_sizes(sizes_path, dict(zip(names, lengths.tolist())))
    log.info("wrote %s: %d chromosomes", sizes_path, len(names))
    paths.update(genome_fasta=str(fasta), chrom_sizes=str(sizes_path))
    blacklist_path = None
    if data.blacklist is not None:
        blacklist_path = _local(data.blacklist, "blacklist")
        write_bed_gz(blacklist_path, [(names[c], s, e) for c, s, e in blacklist])
        log.info("wrote %s: %d regions", blacklist_path, len(blacklist))
        paths["blacklist"] = str(blacklist_path)
    proteins_path = _local(data.proteins_fasta, "proteins_fasta")
    proteins = write_protein_fasta(proteins_path, [(tf.name, tf.family) for tf in gen.tfs], gen.seed)
    log.info("wrote %s: %d proteins, lengths %s", proteins_path, len(proteins), [len(p) for p in proteins.values()])
    paths["proteins_fasta"] = str(proteins_path)

    # 6. DNase peaks per cell: every open location plus blacklist artefacts.
    paths["dnase"] = {}
    for column, cell in enumerate(cells):
        rng = _rng(gen.seed, f"dnase:{cell}")
        opened = np.flatnonzero(is_open[:, column])
        parts = [
            peaks_around(loc_chrom[opened], loc_centre[opened], rng.uniform(0.2, 1.0, opened.shape[0]), rng, lengths,
                         width_range=(150, 600), signal_range=(5.0, 150.0), summit_sd=30.0)
        ]
        if blacklist:
            parts.append(artifact_peaks(blacklist, rng, lengths))
        target = _local(data.dnase_peaks_uri(cell), "dnase_dir")
        count = write_narrowpeak_gz(target, concat_peaks(parts), names)
        log.info("wrote %s: %d peaks (%d open sites)", target, count, opened.shape[0])
        paths["dnase"][cell] = str(target)

    # 7. ChIP-seq peaks per TF and cell.
    summary_tfs: dict = {}
    paths["chip"] = {}
    for spec in gen.tfs:
        tf, s = spec.name, sites[spec.name]
        summary_tfs[tf] = {
            "motif": spec.motif,
            "family": spec.family,
            "sites": {
                "strong": int((s.kind == STRONG).sum()),
                "weak": int((s.kind == WEAK).sum()),
                "motifless": int((s.kind == MOTIFLESS).sum()),
                "shared_with_family": int(s.shared.sum()),
            },
            "cells": {},
        }
        paths["chip"][tf] = {}
        for column, cell in enumerate(cells):
            rng = _rng(gen.seed, f"chip:{tf}:{cell}")
            hit = bound[tf][:, column]
            conservative = [peaks_around(loc_chrom[s.loc[hit]], loc_centre[s.loc[hit]], s.strength[hit], rng, lengths,
                                         width_range=(150, 300))]
            if blacklist:
                conservative.append(artifact_peaks(blacklist, rng, lengths))
            extra = _relaxed_only(s, hit, is_open[:, column], background, gen.relaxed_only_fraction, rng)
            weak_peaks = peaks_around(loc_chrom[extra], loc_centre[extra], rng.uniform(0.0, 0.1, extra.shape[0]), rng,
                                      lengths, width_range=(150, 300), signal_range=(3.0, 40.0), summit_sd=20.0)
            cons_path = _local(data.chip_peaks_uri(cell, tf, "conservative"), "peaks_dir")
            rel_path = _local(data.chip_peaks_uri(cell, tf, "relaxed"), "peaks_dir")
            n_cons = write_narrowpeak_gz(cons_path, concat_peaks(conservative), names)
            n_rel = write_narrowpeak_gz(rel_path, concat_peaks([*conservative, weak_peaks]), names)
            log.info("wrote %s: %d peaks (%d bound sites); %s: %d peaks", cons_path.name, n_cons, int(hit.sum()), rel_path.name, n_rel)
            paths["chip"][tf][cell] = {"conservative": str(cons_path), "relaxed": str(rel_path)}
            summary_tfs[tf]["cells"][cell] = {
                "bound_sites": int(hit.sum()),
                "conservative_peaks": n_cons,
                "relaxed_peaks": n_rel,
            }

    # 8. Labels with the official rule, then the motif-scan baseline.
    paths["labels"] = {}
    chromosomes = dict(zip(names, genome))
    test_chroms = [c for c in DREAM_TEST_CHROMS if c in chromosomes]
    baseline: dict = {}
    for spec in gen.tfs:
        tf = spec.name
        out = _local(data.labels_uri(tf), "labels_dir")
        peaks = {cell: (paths["chip"][tf][cell]["conservative"], paths["chip"][tf][cell]["relaxed"]) for cell in cells}
        counts = build_labels(str(sizes_path), peaks, str(out), None if blacklist_path is None else str(blacklist_path), jobs=jobs)
        log.info("wrote %s: %d bins, %s", out, counts["bins"], counts["cells"])
        paths["labels"][tf] = str(out)
        for cell, tally in counts["cells"].items():
            entry = summary_tfs[tf]["cells"][cell]
            entry.update(bins=counts["bins"], **tally, bound_fraction=tally["B"] / max(counts["bins"], 1))
        baseline[tf] = motif_scan_baseline(str(out), chromosomes, pwms[tf], test_chroms, base_freqs)
        for cell, figures in baseline[tf].items():
            if "error" in figures:
                log.warning("baseline %s %s: %s", tf, cell, figures["error"])
            else:
                log.info("baseline %s %s: auROC %.3f auPRC %.3f (%d B, %d U)", tf, cell, figures["auroc"],
                         figures["auprc"], figures["n_pos"], figures["n_neg"])

    baseline_path = root / "baseline_motif_scan.json"
    report = {
        "method": "max PWM log-odds (both strands) of a motif fully inside each 200 bp bin; A bins removed",
        "chromosomes": test_chroms,
        "motifs": {tf.name: tf.motif for tf in gen.tfs},
        "results": baseline,
    }
    baseline_path.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    log.info("wrote %s", baseline_path)
    paths["baseline"] = str(baseline_path)
    seconds = time.perf_counter() - started
    log.info("generated data set in %s in %.1f s", root, seconds)
    return {
        "seed": gen.seed,
        "paths": paths,
        "genome": {"chromosomes": len(names), "bases": int(bases.size), "n_bases": int((~acgt).sum()), "gc": gc_real,
                   "blacklist_regions": len(blacklist)},
        "tfs": summary_tfs,
        "baseline": baseline,
        "seconds": seconds,
    }


def _relaxed_only(
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
