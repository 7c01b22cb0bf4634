"""A genome-scale data set around real ChIP-seq peaks (``generate.mode: genome_scale``).

No hg19 FASTA can be had here, yet the real ENCODE-DREAM peaks and chromosome
sizes are bundled. :func:`generate_genome_scale` writes what is missing for a
full-size run, under the :class:`~tfbs.config.DataConfig` layout:

* ``genome.fa`` (+ ``.fai``) with exactly the sizes of ``data.chrom_sizes``:
  i.i.d. bases at ``gc_content``, 10 kb N runs at both telomeres (as hg19),
  and each TF's motif planted at the summits of its real *conservative*
  peaks, pooled over cells and merged within ``summit_merge_bp``;
* per cell a DNase ``conservative`` narrowPeak.gz: a peak at a share
  ``dnase_peak_fraction`` of that cell's real *relaxed* peaks of every TF,
  plus cell-specific background open regions (``dnase_background_per_mb``);
* the TF protein FASTA (synthetic, as in the embedded data set);
* ``genome_scale_summary.json``: the counts (no paths, no timings, so it is
  byte-identical for one seed).

It writes no labels and no ChIP peaks: ``tfbs labels`` builds the labels from
the real peaks in ``data.peaks_dir``, on ``data.chrom_sizes`` minus
``data.blacklist``, so bound bins are exactly where the motifs were planted.
"""

from __future__ import annotations

import json
import logging
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from synthetic.formats import concat_peaks, write_narrowpeak_gz
from synthetic.generate import check_generated_names, load_pwms, local_output
from synthetic.peaks import peaks_around
from synthetic.proteins import write_protein_fasta
from synthetic.sites import plant_motifs
from synthetic.stream_genome import random_codes, write_fasta_stream
from tfbs.config import DataConfig, GenerateConfig, TFSpec
from tfbs.errors import ConfigError
from tfbs.formats.dream import read_chrom_sizes
from tfbs.formats.motifs import N_CODE
from tfbs.storage import local_path, require

#: N run at each chromosome end, as hg19's telomeres (capped at 2 % of a chromosome).
TELOMERE_BP = 10_000
#: plant_motifs moves an instance up to 10 bp off its centre.
_PLANT_JITTER = 10


def _rng(seed: int, key: str) -> np.random.Generator:
    """A generator for one component, keyed by a stable hash of its name."""
    return np.random.default_rng([seed, zlib.crc32(key.encode("utf-8"))])


def read_summits(path: str, chrom_names: list[str]) -> tuple[np.ndarray, np.ndarray, int]:
    """Summits of a narrowPeak(.gz) file, as chromosome index and position.

    Parameters
    ----------
    path
        Local path of a narrowPeak file, optionally gzipped. Columns past
        the tenth are ignored: the DREAM relaxed files carry ten more (the
        replicates' peaks, as IDR writes them).
    chrom_names
        Chromosomes to keep, by index.

    Returns
    -------
    tuple[numpy.ndarray, numpy.ndarray, int]
        Chromosome index and summit (``start + peak``, or the midpoint where
        ``peak`` is -1) of each peak on a known chromosome, and the number
        of peaks dropped for being on another one.
    """
    # Column names f0, f1, ... are generated, so any width >= 10 parses.
    chrom_col, start_col, end_col, peak_col = "f0", "f1", "f2", "f9"
    table = pacsv.read_csv(
        path,
        read_options=pacsv.ReadOptions(autogenerate_column_names=True),
        parse_options=pacsv.ParseOptions(delimiter="\t", quote_char=False),
        convert_options=pacsv.ConvertOptions(
            include_columns=[chrom_col, start_col, end_col, peak_col],
            column_types={chrom_col: pa.string(), start_col: pa.int64(), end_col: pa.int64(), peak_col: pa.int64()},
        ),
    )
    index = pc.index_in(table[chrom_col], value_set=pa.array(chrom_names)).to_numpy(zero_copy_only=False)
    known = ~np.isnan(index.astype(np.float64))
    start = table[start_col].to_numpy()[known]
    end = table[end_col].to_numpy()[known]
    peak = table[peak_col].to_numpy()[known]
    summit = np.where(peak >= 0, start + peak, (start + end) // 2)
    return index[known].astype(np.int64), summit.astype(np.int64), int((~known).sum())


def merge_summits(chrom: np.ndarray, summit: np.ndarray, merge_bp: int) -> tuple[np.ndarray, np.ndarray]:
    """One site per cluster of summits closer than ``merge_bp`` (chained).

    The same binding site is called in several cells with summits a few bp
    apart; planting one motif per call would stack copies at one site.

    Parameters
    ----------
    chrom, summit
        Chromosome index and position of each summit, any order.
    merge_bp
        Neighbouring summits at most this far apart join a cluster.

    Returns
    -------
    tuple[numpy.ndarray, numpy.ndarray]
        Chromosome index and the median summit of each cluster, sorted.
    """
    if chrom.shape[0] == 0:
        return chrom.copy(), summit.copy()
    order = np.lexsort((summit, chrom))
    chrom, summit = chrom[order], summit[order]
    first = np.ones(chrom.shape[0], dtype=bool)
    first[1:] = (chrom[1:] != chrom[:-1]) | (summit[1:] - summit[:-1] > merge_bp)
    starts = np.flatnonzero(first)
    stops = np.append(starts[1:], chrom.shape[0]) - 1
    middle = (starts + stops) // 2
    return chrom[middle], summit[middle]


def telomere_run(length: int) -> int:
    """Length of the N run at each end of a chromosome."""
    return min(TELOMERE_BP, length // 50)


def generate_genome_scale(gen: GenerateConfig, data: DataConfig) -> dict:
    """Write the genome-scale data set around the real peaks (module docstring).

    Parameters
    ----------
    gen
        ``mode: genome_scale``; uses ``seed``, ``motif_db``, ``tfs``,
        ``cells``, ``gc_content``, ``motif_sharpen``, ``summit_merge_bp``,
        ``dnase_peak_fraction``, ``dnase_background_per_mb``.
    data
        Inputs ``chrom_sizes`` and ``peaks_dir`` (real files); outputs
        ``genome_fasta``, ``dnase_dir``, ``proteins_fasta`` (local only).

    Returns
    -------
    dict
        ``paths`` written, ``counts`` (as in ``genome_scale_summary.json``:
        genome size and GC, planted sites per TF, DNase peaks per cell) and
        ``seconds``.

    Raises
    ------
    ValueError
        On a configuration it cannot honour (the message names the key) or a
        remote output.
    tfbs.errors.MissingInputError
        If the sizes, a peak file or the motif file is missing.
    """
    log = logging.getLogger("tfbs.generate")
    started = time.perf_counter()
    _check(gen, data)
    sizes = read_chrom_sizes(require(data.chrom_sizes, "chromosome sizes (data.chrom_sizes)"))
    names = list(sizes)
    lengths = np.array([sizes[name] for name in names], dtype=np.int64)
    pwms = load_pwms(gen)
    paths = {
        "genome_fasta": str(local_output(data.genome_fasta, "genome_fasta")),
        "proteins_fasta": str(local_output(data.proteins_fasta, "proteins_fasta")),
        "summary": str(local_output(data.root, "root") / "genome_scale_summary.json"),
    }
    counts: dict = {"seed": gen.seed, "tfs": {}, "dnase": {}}

    sites = {spec.name: _tf_sites(gen, data, spec, names, lengths, pwms, counts) for spec in gen.tfs}
    base_counts = write_fasta_stream(paths["genome_fasta"], _chromosomes(gen, names, lengths, sites, pwms))
    counts["genome"] = _genome_counts(base_counts, len(names))
    log.info(
        "wrote %s (+ .fai): %d chromosomes, %d bp, GC %.4f",
        paths["genome_fasta"],
        len(names),
        counts["genome"]["bases"],
        counts["genome"]["gc"],
    )

    dnase_paths: dict[str, str] = {}
    for cell in gen.cells:
        target = local_output(data.dnase_peaks_uri(cell), "dnase_dir")
        counts["dnase"][cell] = _write_dnase(gen, data, cell, names, lengths, str(target))
        dnase_paths[cell] = str(target)
        log.info("wrote %s: %s", target, counts["dnase"][cell])

    proteins = write_protein_fasta(paths["proteins_fasta"], [(tf.name, tf.family) for tf in gen.tfs], gen.seed)
    log.info("wrote %s: %d proteins", paths["proteins_fasta"], len(proteins))
    Path(paths["summary"]).write_text(json.dumps(counts, indent=2, sort_keys=True) + "\n")
    seconds = time.perf_counter() - started
    log.info("generated the genome-scale data set in %.1f s", seconds)
    return {"paths": {**paths, "dnase": dnase_paths}, "counts": counts, "seconds": seconds}


def _tf_sites(
    gen: GenerateConfig,
    data: DataConfig,
    spec: TFSpec,
    names: list[str],
    lengths: np.ndarray,
    pwms: dict[str, np.ndarray],
    counts: dict,
) -> tuple[np.ndarray, np.ndarray]:
    """One TF's sites (chromosome index, position): its merged conservative summits clear of the telomeres.

    Adds the TF's entry to ``counts["tfs"]``.
    """
    log = logging.getLogger("tfbs.generate")
    chrom, summit, other = _pooled_summits(gen, data, spec.name, "conservative", names)
    site_chrom, site_pos = merge_summits(chrom, summit, gen.summit_merge_bp)
    reach = pwms[spec.name].shape[0] + _PLANT_JITTER
    tel = np.array([telomere_run(int(n)) for n in lengths])[site_chrom]
    inside = (site_pos >= tel + reach) & (site_pos < lengths[site_chrom] - tel - reach)
    counts["tfs"][spec.name] = {
        "motif": spec.motif,
        "summits": int(chrom.shape[0]),
        "summits_on_other_chromosomes": other,
        "sites": int(inside.sum()),
        "sites_near_ends_dropped": int((~inside).sum()),
    }
    log.info(
        "%s: %d conservative summits over %d cells -> %d sites (%d merged, %d off the sized chromosomes)",
        spec.name,
        chrom.shape[0],
        len(gen.cells),
        int(inside.sum()),
        chrom.shape[0] - site_chrom.shape[0],
        other,
    )
    return site_chrom[inside], site_pos[inside]


def _chromosomes(
    gen: GenerateConfig,
    names: list[str],
    lengths: np.ndarray,
    sites: dict[str, tuple[np.ndarray, np.ndarray]],
    pwms: dict[str, np.ndarray],
) -> Iterator[tuple[str, np.ndarray]]:
    """Each chromosome's bases, one at a time: random, N at the telomeres, every TF's motif at its sites."""
    for index, name in enumerate(names):
        codes = random_codes(int(lengths[index]), gen.gc_content, _rng(gen.seed, f"genome:{name}"))
        tel = telomere_run(codes.shape[0])
        codes[:tel] = N_CODE
        codes[codes.shape[0] - tel :] = N_CODE
        for spec in gen.tfs:
            site_chrom, site_pos = sites[spec.name]
            here = site_pos[site_chrom == index]
            plant_motifs(
                [codes],
                np.zeros(here.shape[0], dtype=np.int64),
                here,
                pwms[spec.name],
                np.zeros(here.shape[0], dtype=bool),
                _rng(gen.seed, f"motif:{spec.name}:{name}"),
                gen.motif_sharpen,
            )
        yield name, codes


def _genome_counts(base_counts: dict, n_chromosomes: int) -> dict:
    """The summary's ``genome`` entry from :func:`write_fasta_stream`'s base counts per chromosome."""
    total = np.sum(list(base_counts.values()), axis=0)
    acgt = int(total[:N_CODE].sum())
    return {
        "chromosomes": n_chromosomes,
        "bases": int(total.sum()),
        "n_bases": int(total[N_CODE]),
        "gc": round(float(total[1] + total[2]) / max(acgt, 1), 6),
    }


def _write_dnase(
    gen: GenerateConfig, data: DataConfig, cell: str, names: list[str], lengths: np.ndarray, target: str
) -> dict:
    """One cell's DNase peaks: most of its relaxed ChIP peaks, plus background; returns counts."""
    rng = _rng(gen.seed, f"dnase:{cell}")
    chrom, summit, _other = _pooled_summits(gen, data, None, "relaxed", names, cells=[cell])
    opened = rng.random(size=int(chrom.shape[0])) < gen.dnase_peak_fraction
    at_sites = peaks_around(
        chrom[opened],
        summit[opened],
        rng.uniform(0.3, 1.0, int(opened.sum())),
        rng,
        lengths,
        width_range=(150, 600),
        signal_range=(5.0, 150.0),
        summit_sd=30.0,
    )
    # Background: uniform over the sequenced (non-telomere) part of the genome.
    tel = np.array([telomere_run(int(n)) for n in lengths], dtype=np.int64)
    usable = lengths - 2 * tel
    n_background = int(rng.poisson(gen.dnase_background_per_mb * lengths.sum() / 1e6))
    where = rng.integers(0, int(usable.sum()), size=n_background)
    bounds = np.cumsum(usable)
    bg_chrom = np.searchsorted(bounds, where, side="right")
    bg_centre = where - (bounds[bg_chrom] - usable[bg_chrom]) + tel[bg_chrom]
    background = peaks_around(
        bg_chrom,
        bg_centre,
        rng.uniform(0.0, 0.6, n_background),
        rng,
        lengths,
        width_range=(150, 600),
        signal_range=(5.0, 150.0),
        summit_sd=30.0,
    )
    written = write_narrowpeak_gz(target, concat_peaks([at_sites, background]), names)
    return {
        "peaks": written,
        "relaxed_peaks": int(chrom.shape[0]),
        "at_relaxed_peaks": int(opened.sum()),
        "background": n_background,
    }


def _pooled_summits(
    gen: GenerateConfig,
    data: DataConfig,
    tf: str | None,
    kind: Literal["conservative", "relaxed"],
    names: list[str],
    cells: list[str] | None = None,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Summits of one kind of real peaks, pooled over cells (and over TFs if ``tf`` is None)."""
    tfs = [spec.name for spec in gen.tfs] if tf is None else [tf]
    chroms, summits, other = [], [], 0
    for name in tfs:
        for cell in cells or gen.cells:
            uri = require(data.chip_peaks_uri(cell, name, kind), f"{kind} peaks of {name} in {cell} (data.peaks_dir)")
            chrom, summit, dropped = read_summits(local_path(uri), names)
            chroms.append(chrom)
            summits.append(summit)
            other += dropped
    return np.concatenate(chroms), np.concatenate(summits), other


def _check(gen: GenerateConfig, data: DataConfig) -> None:
    """Refuse configurations this mode cannot honour, naming the key."""
    if gen.mode != "genome_scale":
        raise ConfigError(f"generate.mode: {gen.mode!r}; this writer is for genome_scale")
    check_generated_names(gen, data)
