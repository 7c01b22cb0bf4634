"""The embedded ENCODE-DREAM-format data set, generated from a seed.

:func:`generate_dataset` writes, under the :class:`~tfbs.config.DataConfig`
layout, everything the pipeline reads for a real DREAM run:

* ``genome.fa`` (+ ``.fai``), chromosome sizes, a blacklist BED.gz;
* per TF and cell, ChIP-seq ``conservative.train`` and ``relaxed``
  narrowPeak.gz files; per cell a DNase conservative narrowPeak.gz;
* the TF protein FASTA;
* per TF the label file ``<TF>.train.labels.tsv.gz``, built from those peaks
  with the official bedtools rule (:mod:`tfbs.formats.labels`) on *all*
  chromosomes, test chromosomes included, so the demo can be evaluated;
* per TF the oracle ``<TF>.oracle.tsv.gz``: for each test bin and cell, the
  probability the simulation gave it of being labelled B
  (:mod:`synthetic.oracle`), which evaluation reports beside the model, and
  the coarse-PWM reference ``<TF>.coarse_pwm.tsv.gz``
  (:func:`synthetic.oracle.coarse_pwm_chances`).

The biology it simulates is described in :mod:`synthetic.sites`.
Each component draws from its own generator keyed by the seed and a name, so
the output is byte-for-byte reproducible.
"""

from __future__ import annotations

import logging
import time
import zlib
from pathlib import Path

import numpy as np

from synthetic.background import apply_background
from synthetic.formats import (
    concat_peaks,
    write_bed_gz,
    write_chrom_sizes,
    write_fasta,
    write_narrowpeak_gz,
)
from synthetic.genome import base_frequencies, blacklist_intervals, simulate_chromosome
from synthetic.occupancy import Occupancy, match_reach, relaxed_only_locations, simulate_occupancy
from synthetic.oracle import coarse_pwm_chances, partner_states, write_oracle_table
from synthetic.partners import BIOREPS, expression_tables, write_expression
from synthetic.peaks import CHIP_WIDTH_RANGE, artifact_peaks, peaks_around
from synthetic.proteins import write_protein_fasta
from synthetic.sites import MOTIFLESS, STRONG, WEAK, match_scores
from tfbs import storage
from tfbs.config import DataConfig, GenerateConfig
from tfbs.errors import ConfigError, MissingInputError
from tfbs.formats.dream import DREAM_TEST_CHROMS
from tfbs.formats.labels import build_labels
from tfbs.formats.motifs import N_CODE, log_odds, read_meme
from tfbs.storage import local_path


def generate_dataset(
    gen: GenerateConfig,
    data: DataConfig,
    *,
    jobs: int = 2,
) -> dict:
    """Generate the embedded ENCODE-DREAM-format data set.

    Parameters
    ----------
    gen
        What to simulate (genome, TFs, cells >= 3, rates, seed).
    data
        Where to write it (``file://`` URIs or local paths only).
    jobs
        Cells labelled concurrently by :func:`tfbs.formats.labels.build_labels`.

    Returns
    -------
    dict
        ``paths`` of every file, ``genome`` figures, per TF its ``sites`` by
        kind and per cell ``bound_sites`` (by kind), peak counts, label
        counts ``U``/``B``/``A``, ``bins`` and ``bound_fraction`` (B bins /
        all bins), and ``seconds``.

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
    pwms = load_pwms(gen)
    root = local_output(data.root, "root")
    root.mkdir(parents=True, exist_ok=True)

    genome, blacklist, occupancy = simulate(gen, pwms)
    paths: dict = {"root": str(root)}
    genome_summary = _write_reference(gen, data, genome, blacklist, paths)
    _write_dnase(gen, data, occupancy, blacklist, paths)
    tf_summary = _write_chip(gen, data, occupancy, blacklist, paths)
    if gen.profile == "realistic":
        genome_summary["cpg_islands"] = int(occupancy.promoters.shape[0])
        genome_summary["partners"] = _write_rnaseq(gen, data, occupancy, paths)

    test_chroms = [c for c in DREAM_TEST_CHROMS if c in gen.chromosomes]
    paths["labels"], paths["oracle"], paths["coarse_pwm"] = {}, {}, {}
    for spec in gen.tfs:
        tf = spec.name
        out = local_output(data.labels_uri(tf), "labels_dir")
        peaks = {cell: (files["conservative"], files["relaxed"]) for cell, files in paths["chip"][tf].items()}
        counts = build_labels(paths["chrom_sizes"], peaks, str(out), paths.get("blacklist"), jobs=jobs)
        log.info("wrote %s: %d bins, %s", out, counts["bins"], counts["cells"])
        paths["labels"][tf] = str(out)
        for cell, tally in counts["cells"].items():
            fraction = tally["B"] / max(counts["bins"], 1)
            tf_summary[tf]["cells"][cell].update(bins=counts["bins"], **tally, bound_fraction=fraction)
        oracle = local_output(data.oracle_uri(tf), "oracle_dir")
        n_bins = write_oracle_table(
            occupancy, tf, str(out), list(gen.chromosomes), list(gen.cells), test_chroms, str(oracle)
        )
        log.info("wrote %s: the oracle's P(B) of %d test bins", oracle, n_bins)
        paths["oracle"][tf] = str(oracle)
        reference = local_output(data.coarse_pwm_uri(tf), "oracle_dir")
        chance = coarse_pwm_reference(gen, occupancy, genome, pwms, tf)
        write_oracle_table(
            occupancy, tf, str(out), list(gen.chromosomes), list(gen.cells), test_chroms, str(reference), chance
        )
        log.info("wrote %s: the coarse-PWM reference's P(B) of %d test bins", reference, n_bins)
        paths["coarse_pwm"][tf] = str(reference)

    seconds = time.perf_counter() - started
    log.info("generated data set in %s in %.1f s", root, seconds)
    return {"seed": gen.seed, "paths": paths, "genome": genome_summary, "tfs": tf_summary, "seconds": seconds}


def simulate(
    gen: GenerateConfig, pwms: dict[str, np.ndarray]
) -> tuple[list[np.ndarray], list[tuple[int, int, int]], Occupancy]:
    """The genome (motifs planted), its blacklist and who binds where: all of ``gen``'s randomness, none written.

    The same ``gen`` (its seed) gives the same simulation, so a benchmark can
    read what a data set's labels were drawn from (``bench/paralogue_ceiling.py``).
    """
    genome, masks, blacklist = _simulate_genome(gen, gen.gc_content)
    islands = None
    if gen.profile == "realistic":
        islands = apply_background(genome, masks, gen.realistic, gen.gc_content, _rng(gen.seed, "background"))
    rngs = (_rng(gen.seed, "sites"), _rng(gen.seed, "chromatin"))
    return genome, blacklist, simulate_occupancy(gen, genome, masks, pwms, rngs, islands)


def coarse_pwm_reference(
    gen: GenerateConfig, occupancy: Occupancy, genome: list[np.ndarray], pwms: dict[str, np.ndarray], tf: str
) -> np.ndarray:
    """Per location and cell, the chance ``tf`` binds by its class of PWM match (:func:`synthetic.oracle.coarse_pwm_chances`)."""
    family_of = {spec.name: spec.family for spec in gen.tfs}
    lead = next(spec.name for spec in gen.tfs if spec.family == family_of[tf])
    base_freqs = base_frequencies(gen.gc_content)
    reach = match_reach(gen)
    match = {
        member: match_scores(genome, occupancy.chrom, occupancy.centre, log_odds(pwms[member], base_freqs), reach)
        for member in {tf, lead}
    }
    states = None
    spec = next(spec for spec in gen.tfs if spec.name == tf)
    if gen.profile == "realistic" and spec.partners:
        names = [p.name for p in gen.realistic.partners]
        reach_partner = reach + gen.realistic.partner_offset_bp[1]
        partner_match, thresholds = {}, {}
        for name in spec.partners:
            scores = log_odds(pwms[name], base_freqs)
            partner_match[names.index(name)] = match_scores(
                genome, occupancy.chrom, occupancy.centre, scores, reach_partner
            )
            # A coarse reading: a match of at least 60 % of the best possible score counts as the motif.
            thresholds[names.index(name)] = 0.6 * float(scores.max(axis=1).sum())
        states = partner_states(occupancy, partner_match, thresholds)
    return coarse_pwm_chances(occupancy, tf, lead, match, states)[1]


def _rng(seed: int, key: str) -> np.random.Generator:
    """A generator for one component, keyed by a stable hash of its name."""
    return np.random.default_rng([seed, zlib.crc32(key.encode("utf-8"))])


def local_output(uri: str, what: str) -> Path:
    """The local path of an output URI; remote outputs are refused clearly."""
    try:
        return Path(local_path(uri))
    except ValueError:
        raise ConfigError(f"generate writes local files only; data.{what} is {uri}") from None


def check_generated_names(gen: GenerateConfig, data: DataConfig) -> None:
    """Refuse duplicate TF/cell names, and data TFs/cells the generator does not write."""
    names = [tf.name for tf in gen.tfs]
    if len(set(names)) != len(names) or len(set(gen.cells)) != len(gen.cells):
        raise ConfigError("generate.tfs / generate.cells: names must be unique")
    missing_tfs = [tf for tf in data.tfs if tf not in names]
    if missing_tfs:
        raise ConfigError(f"data.tfs: {missing_tfs} are not generated (generate.tfs has {names})")
    missing_cells = [c for c in data.cells or [] if c not in gen.cells]
    if missing_cells:
        raise ConfigError(f"data.cells: {missing_cells} are not generated (generate.cells has {gen.cells})")


def _check(gen: GenerateConfig, data: DataConfig) -> None:
    """Refuse configurations the generator cannot honour, naming the key."""
    if len(gen.cells) < 3:
        raise ConfigError(f"generate.cells: need at least 3 cell types for cross-cell splits, got {gen.cells}")
    check_generated_names(gen, data)
    if gen.weak_motif_fraction + gen.motifless_bound_fraction >= 0.9:
        raise ConfigError("generate.weak_motif_fraction + motifless_bound_fraction must stay below 0.9")
    small = [c for c, n in gen.chromosomes.items() if n < 20_000]
    if small:
        raise ConfigError(f"generate.chromosomes: {small} shorter than 20000 bp")


def load_pwms(gen: GenerateConfig) -> dict[str, np.ndarray]:
    """The PWM of each TF, from the MEME file."""
    # Through the storage layer: a motif database on gs:// or hdfs:// reads like a local one.
    if not storage.exists(gen.motif_db):
        raise MissingInputError(f"generate.motif_db: MEME file not found: {gen.motif_db}")
    motifs = read_meme(gen.motif_db)
    pwms = {}
    named = [(f"tfs[{tf.name}]", tf.name, tf.motif) for tf in gen.tfs]
    if gen.profile == "realistic":
        named += [(f"realistic.partners[{p.name}]", p.name, p.motif) for p in gen.realistic.partners]
    for key, name, motif in named:
        if motif not in motifs:
            close = sorted(m for m in motifs if m.split("_")[0] == motif.split("_")[0])
            raise ConfigError(f"generate.{key}.motif: {motif!r} not in {gen.motif_db}; same TF: {close}")
        pwms[name] = motifs[motif]
    return pwms


def _simulate_genome(
    gen: GenerateConfig, gc: float
) -> tuple[list[np.ndarray], list[np.ndarray], list[tuple[int, int, int]]]:
    """Base codes, masks (N or blacklisted) and blacklist ``(chrom index, start, end)``."""
    genome, masks = [], []
    for name, length in gen.chromosomes.items():
        # One generator per chromosome: adding a chromosome leaves the others as they were.
        codes, _gaps = simulate_chromosome(length, gc, _rng(gen.seed, f"genome:{name}"))
        genome.append(codes)
        masks.append(codes == N_CODE)
    rng = _rng(gen.seed, "blacklist")
    blacklist = []
    for index, mask in enumerate(masks):
        for start, stop in blacklist_intervals(mask, gen.blacklist_regions, rng):
            blacklist.append((index, start, stop))
            mask[start:stop] = True
    return genome, masks, blacklist


def _write_reference(
    gen: GenerateConfig, data: DataConfig, genome: list[np.ndarray], blacklist: list, paths: dict
) -> dict:
    """Write the FASTA (+ .fai), chromosome sizes, blacklist and protein FASTA."""
    log = logging.getLogger("tfbs.generate")
    names = list(gen.chromosomes)
    fasta = local_output(data.genome_fasta, "genome_fasta")
    write_fasta(fasta, dict(zip(names, genome)))
    bases = np.concatenate(genome)
    acgt = bases != N_CODE
    gc_real = float(np.isin(bases[acgt], (1, 2)).mean())
    log.info(
        "wrote %s (+ .fai): %d chromosomes, %d bp (%d N), GC %.3f",
        fasta,
        len(names),
        bases.size,
        int((~acgt).sum()),
        gc_real,
    )
    sizes = local_output(data.chrom_sizes, "chrom_sizes")
    write_chrom_sizes(sizes, dict(gen.chromosomes))
    log.info("wrote %s: %d chromosomes", sizes, len(names))
    paths.update(genome_fasta=str(fasta), chrom_sizes=str(sizes))
    if data.blacklist is not None:
        target = local_output(data.blacklist, "blacklist")
        write_bed_gz(target, [(names[c], s, e) for c, s, e in blacklist])
        log.info("wrote %s: %d regions", target, len(blacklist))
        paths["blacklist"] = str(target)
    proteins_path = local_output(data.proteins_fasta, "proteins_fasta")
    proteins = write_protein_fasta(proteins_path, [(tf.name, tf.family) for tf in gen.tfs], gen.seed)
    log.info("wrote %s: %d proteins, lengths %s", proteins_path, len(proteins), [len(p) for p in proteins.values()])
    paths["proteins_fasta"] = str(proteins_path)
    return {
        "chromosomes": len(names),
        "bases": int(bases.size),
        "n_bases": int((~acgt).sum()),
        "gc": gc_real,
        "blacklist_regions": len(blacklist),
    }


def _write_dnase(gen: GenerateConfig, data: DataConfig, occ: Occupancy, blacklist: list, paths: dict) -> None:
    """One DNase peak per open location of each cell, plus blacklist artefacts."""
    log = logging.getLogger("tfbs.generate")
    names = list(gen.chromosomes)
    lengths = np.array(list(gen.chromosomes.values()), dtype=np.int64)
    paths["dnase"] = {}
    for column, cell in enumerate(gen.cells):
        rng = _rng(gen.seed, f"dnase:{cell}")
        opened = np.flatnonzero(occ.is_open[:, column])
        parts = [
            peaks_around(
                occ.chrom[opened],
                occ.centre[opened],
                rng.uniform(0.2, 1.0, opened.shape[0]),
                rng,
                lengths,
                width_range=(150, 600),
                signal_range=(5.0, 150.0),
                summit_sd=gen.realistic.dnase_summit_sd if gen.profile == "realistic" else 30.0,
            )
        ]
        if blacklist:
            parts.append(artifact_peaks(blacklist, rng, lengths))
        target = local_output(data.dnase_peaks_uri(cell), "dnase_dir")
        count = write_narrowpeak_gz(target, concat_peaks(parts), names)
        log.info("wrote %s: %d peaks (%d open locations)", target, count, opened.shape[0])
        paths["dnase"][cell] = str(target)


def _write_rnaseq(gen: GenerateConfig, data: DataConfig, occ: Occupancy, paths: dict) -> dict:
    """Each cell's RSEM expression files (two replicates); returns which cells express each partner."""
    log = logging.getLogger("tfbs.generate")
    assert occ.present is not None
    rng = _rng(gen.seed, "rnaseq")
    tables = expression_tables(gen, occ.present, rng)
    paths["rnaseq"] = {}
    for cell, replicates in tables.items():
        for rep, tpm in zip(BIOREPS, replicates):
            target = local_output(data.expression_uri(cell, rep), "rnaseq_dir")
            write_expression(target, tpm, rng)
            paths["rnaseq"][f"{cell}.biorep{rep}"] = str(target)
    presence = {
        partner.name: [cell for cell, on in zip(gen.cells, occ.present[row]) if on]
        for row, partner in enumerate(gen.realistic.partners)
    }
    log.info("wrote RNA-seq of %d cells; partners expressed in %s", len(tables), presence)
    return presence


def _write_chip(gen: GenerateConfig, data: DataConfig, occ: Occupancy, blacklist: list, paths: dict) -> dict:
    """Conservative (bound sites) and relaxed (plus weak) peaks per TF and cell; returns the TF summary."""
    log = logging.getLogger("tfbs.generate")
    names = list(gen.chromosomes)
    lengths = np.array(list(gen.chromosomes.values()), dtype=np.int64)
    kinds = {"strong": STRONG, "weak": WEAK, "motifless": MOTIFLESS}
    summary: dict = {}
    paths["chip"] = {}
    for spec in gen.tfs:
        tf, s = spec.name, occ.sites[spec.name]
        summary[tf] = {
            "motif": spec.motif,
            "family": spec.family,
            "sites": {k: int((s.kind == v).sum()) for k, v in kinds.items()}
            | {"shared_with_family": int(s.shared.sum())},
            "cells": {},
        }
        paths["chip"][tf] = {}
        for column, cell in enumerate(gen.cells):
            rng = _rng(gen.seed, f"chip:{tf}:{cell}")
            hit = occ.bound[tf][:, column]
            where = s.loc[hit]
            conservative = [
                peaks_around(
                    occ.chrom[where], occ.centre[where], s.strength[hit], rng, lengths, width_range=CHIP_WIDTH_RANGE
                )
            ]
            if blacklist:
                conservative.append(artifact_peaks(blacklist, rng, lengths))
            extra = relaxed_only_locations(
                s, hit, occ.is_open[:, column], occ.background, gen.relaxed_only_fraction, rng
            )
            weak = peaks_around(
                occ.chrom[extra],
                occ.centre[extra],
                rng.uniform(0.0, 0.1, size=int(extra.shape[0])),
                rng,
                lengths,
                width_range=CHIP_WIDTH_RANGE,
                signal_range=(3.0, 40.0),
                summit_sd=20.0,
            )
            cons_path = local_output(data.chip_peaks_uri(cell, tf, "conservative"), "peaks_dir")
            rel_path = local_output(data.chip_peaks_uri(cell, tf, "relaxed"), "peaks_dir")
            n_cons = write_narrowpeak_gz(cons_path, concat_peaks(conservative), names)
            n_rel = write_narrowpeak_gz(rel_path, concat_peaks([*conservative, weak]), names)
            log.info(
                "wrote %s: %d peaks (%d bound sites); %s: %d peaks",
                cons_path,
                n_cons,
                int(hit.sum()),
                rel_path.name,
                n_rel,
            )
            paths["chip"][tf][cell] = {"conservative": str(cons_path), "relaxed": str(rel_path)}
            summary[tf]["cells"][cell] = {
                "bound_sites": int(hit.sum()),
                "bound_closed": int((hit & ~occ.is_open[s.loc, column]).sum()),
                "bound_through_partner": int((hit & (s.partners >= 0)).sum()),
                "bound_by_kind": {k: int((hit & (s.kind == v)).sum()) for k, v in kinds.items()},
                "conservative_peaks": n_cons,
                "relaxed_peaks": n_rel,
            }
    return summary
