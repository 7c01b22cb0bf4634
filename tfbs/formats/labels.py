"""ENCODE-DREAM label files from ChIP-seq peaks, with the official rule.

The challenge labelled every 200 bp bin (50 bp step) of the genome per cell
type from two peak files:

1. merge each peak file (``bedtools sort | bedtools merge``);
2. ``optimal`` = number of merged *conservative* (IDR) peaks hitting the bin
   with ``bedtools intersect -c -f 0.5 -F 0.5 -e`` (half the bin or half the
   peak covered);
3. ``relaxed`` = number of merged *relaxed* peaks with any overlap
   (``bedtools intersect -c``);
4. label ``A`` where the two counts differ, else ``B`` if ``optimal > 0``,
   else ``U``.

Every interval operation is done by the ``bedtools`` binary on whole files;
Python only parses the count columns (pyarrow's multi-threaded CSV reader)
and combines them with numpy, so nothing loops per bin and the same code
serves the 48 M-bin genome-wide case.
"""

from __future__ import annotations

import functools
import gzip
import io
import logging
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from tfbs.errors import BadInputError, MissingInputError
from tfbs.formats.bed import read_bed
from tfbs.formats.bedtools import run_bedtools
from tfbs.formats.dream import BIN_SIZE, BIN_STEP, read_chrom_sizes
from tfbs.storage import PARTIAL_SUFFIX, local_path

#: Rows formatted per slice when writing TSV (about 25 MB of text).
_WRITE_ROWS = 1 << 20


def make_bins(
    sizes_path: str,
    workdir: Path,
    blacklist_path: str | None = None,
    bin_size: int = BIN_SIZE,
    step: int = BIN_STEP,
) -> tuple[Path, pa.Table]:
    """The labelled bins: full windows on a fixed grid, minus the blacklist.

    Parameters
    ----------
    sizes_path
        Chromosome sizes, already restricted and sorted as the output must be.
    workdir
        Where intermediate BED files go.
    blacklist_path
        BED(.gz) of excluded regions; a bin touching one by even 1 bp is
        dropped (``bedtools intersect -v``).
    bin_size, step
        Window width and step (DREAM: 200 and 50).

    Returns
    -------
    tuple[Path, pyarrow.Table]
        The BED3 file of bins (input of every later intersect) and the same
        bins as a table with columns ``chr`` (dictionary), ``start``, ``stop``.
    """
    windows = workdir / "windows.bed"
    run_bedtools(["makewindows", "-g", sizes_path, "-w", str(bin_size), "-s", str(step)], windows)
    if blacklist_path is not None:
        kept = workdir / "windows.noblacklist.bed"
        run_bedtools(["intersect", "-v", "-a", windows, "-b", local_path(blacklist_path)], kept)
        windows = kept
    table = _read_bed3(windows, wide=max(read_chrom_sizes(sizes_path).values(), default=0) >= 2**31)
    # makewindows also emits the truncated windows at each chromosome end;
    # DREAM bins are always full 200 bp windows.
    full = pc.equal(pc.subtract(table["stop"], table["start"]), bin_size)
    table = table.filter(full)
    bins = workdir / "bins.bed"
    _write_tsv(table, bins, header=None)
    return bins, table


def check_peak_files(peaks: dict[str, tuple[str, str]], sizes: dict[str, int], blacklist_path: str | None) -> None:
    """Check every peak line and the blacklist against the chromosome sizes, before bedtools sees them.

    bedtools accepts much that is wrong (a peak past the chromosome end, a
    start after its end) and rejects the rest with a message that names
    neither file nor line. Lines on chromosomes outside the sizes file are
    ignored and counted in the log: they have no bins (hg19.autoX, the
    challenge's sizes, leaves out chrY; the DREAM blacklist lists chrM and
    unplaced contigs). A file none of whose lines is on one is refused.

    Raises
    ------
    MissingInputError
        If a peak file is missing.
    BadInputError
        Naming file, line and reason (see :func:`tfbs.formats.bed.read_bed`).
    """
    for cell, pair in sorted(peaks.items()):
        for kind, path in zip(("conservative", "relaxed"), pair):
            if not os.path.isfile(local_path(path)):
                raise MissingInputError(f"{path}: {kind} peak file of {cell} not found")
            read_bed(path, sizes, unknown_chroms="skip")
    if blacklist_path is not None:
        read_bed(blacklist_path, sizes, unknown_chroms="skip", past_end="allow")


def peak_counts(
    bins: Path, conservative: str, relaxed: str, workdir: Path, tag: str, keep: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Per-bin counts of merged conservative (strict) and relaxed (any) overlaps.

    Parameters
    ----------
    bins
        BED3 bins from :func:`make_bins`.
    conservative, relaxed
        The cell's peak files (narrowPeak, optionally gzipped).
    workdir
        Where intermediate files go.
    tag
        A file-name-safe prefix for the intermediates (e.g. the cell).
    keep
        Keep the two count files; otherwise they are deleted once read.

    Returns
    -------
    tuple[numpy.ndarray, numpy.ndarray]
        ``(optimal, relaxed)`` int32 counts, one per bin, in bin order.
    """
    merged = {}
    for kind, path in (("conservative", conservative), ("relaxed", relaxed)):
        source = local_path(path)
        if not os.path.isfile(source):
            raise MissingInputError(f"{path}: {kind} peak file of {tag} not found")
        ordered = workdir / f"{tag}.{kind}.sorted.bed"
        merged[kind] = workdir / f"{tag}.{kind}.merged.bed"
        run_bedtools(["sort", "-i", source], ordered)
        run_bedtools(["merge", "-i", ordered], merged[kind])
    strict = workdir / f"{tag}.optimal.counts.bed"
    loose = workdir / f"{tag}.relaxed.counts.bed"
    # -e: either fraction suffices, so a short peak wholly inside a bin
    # counts even though it covers less than half of the bin.
    run_bedtools(["intersect", "-a", bins, "-b", merged["conservative"], "-c", "-f", "0.5", "-F", "0.5", "-e"], strict)
    run_bedtools(["intersect", "-a", bins, "-b", merged["relaxed"], "-c"], loose)
    counts = _read_count_column(strict), _read_count_column(loose)
    if not keep:
        # Genome-wide, each of these is ~1.3 GB of text; free the disk early.
        strict.unlink()
        loose.unlink()
    return counts


def official_rule(optimal: np.ndarray, relaxed: np.ndarray) -> np.ndarray:
    """Apply the DREAM rule to count columns.

    Parameters
    ----------
    optimal, relaxed
        Per-bin counts from :func:`peak_counts`.

    Returns
    -------
    numpy.ndarray
        ``uint8`` ASCII codes of ``'A'`` (counts differ), ``'B'``
        (``optimal > 0``) or ``'U'``.
    """
    codes = np.where(optimal > 0, ord("B"), ord("U")).astype(np.uint8)
    codes[optimal != relaxed] = ord("A")
    return codes


def build_labels(
    chrom_sizes_path: str,
    peaks: dict[str, tuple[str, str]],
    out_path: str,
    blacklist_path: str | None = None,
    chroms: list[str] | None = None,
    workdir: str | None = None,
    jobs: int = 1,
) -> dict:
    """Write a DREAM ``<TF>.train.labels.tsv.gz`` from per-cell peak files.

    The output has the header ``chr start stop <cell>...`` (cells in
    alphabetical order) and one full 200 bp bin per row on a 50 bp grid,
    rows sorted by chromosome name (byte order, as ``sort -k1,1 -k2,2n``)
    then start, values ``U``/``B``/``A`` by the official rule (see the module
    docstring). Blacklisted bins are absent.

    Unlike the challenge's training files, which omit the held-out chr1, chr8
    and chr21, this labels every chromosome of ``chrom_sizes_path`` (or
    ``chroms``): the embedded demo needs test-chromosome labels to evaluate.
    Pass ``chroms`` to reproduce a training-only file.

    Parameters
    ----------
    chrom_sizes_path
        ``chrom<TAB>size`` file (local path or ``file://`` URI).
    peaks
        ``{cell: (conservative_path, relaxed_path)}``, narrowPeak(.gz).
    out_path
        The ``.tsv.gz`` to write (local path or ``file://`` URI); written to
        a temporary name first, then renamed.
    blacklist_path
        Optional BED(.gz); bins overlapping it are dropped.
    chroms
        Restrict to these chromosomes (each must be in the sizes file).
    workdir
        Keep the intermediate BED files here; by default a temporary
        directory that is removed afterwards.
    jobs
        Cells processed concurrently (each runs its own bedtools processes).

    Returns
    -------
    dict
        ``{"path", "bins", "cells": {cell: {"U", "B", "A"}}, "seconds"}``.

    Raises
    ------
    ValueError
        If no cell is given or a requested chromosome is unknown.
    FileNotFoundError
        If a peak file is missing.
    BadInputError
        A malformed sizes, peak or blacklist line (:func:`check_peak_files`).
    tfbs.formats.bedtools.BedtoolsError
        If bedtools is missing or fails.
    """
    log = logging.getLogger("tfbs.formats.labels")
    started = time.perf_counter()
    if not peaks:
        raise ValueError("build_labels: no cell given in peaks")
    cells = sorted(peaks)
    sizes = _checked_sizes(chrom_sizes_path, peaks, blacklist_path, chroms)
    out = Path(local_path(out_path))
    out.parent.mkdir(parents=True, exist_ok=True)

    with tempfile.TemporaryDirectory(prefix="tfbs-labels-") as scratch:
        work = Path(workdir) if workdir is not None else Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        genome = work / "genome.sizes"
        # Sorted by name so that makewindows emits rows in the DREAM order.
        genome.write_text("".join(f"{c}\t{sizes[c]}\n" for c in sorted(sizes)))
        bins_path, bins = make_bins(str(genome), work, blacklist_path)
        log.info("%s: %d bins on %d chromosomes", out.name, bins.num_rows, len(sizes))
        one_cell = functools.partial(_cell_codes, peaks, bins_path, bins.num_rows, work, workdir is not None)
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            codes = dict(zip(cells, pool.map(one_cell, cells)))

    counts = _write_labels(out, bins, cells, codes)
    seconds = time.perf_counter() - started
    log.info(
        "wrote %s: %d bins x %d cells (%s) in %.1f s",
        out,
        bins.num_rows,
        len(cells),
        ", ".join(f"{c} B={n['B']} A={n['A']}" for c, n in counts.items()),
        seconds,
    )
    return {"path": str(out), "bins": bins.num_rows, "cells": counts, "seconds": seconds}


def _checked_sizes(
    chrom_sizes_path: str, peaks: dict[str, tuple[str, str]], blacklist_path: str | None, chroms: list[str] | None
) -> dict[str, int]:
    """The sizes of the chromosomes to label, once every input line has been checked.

    Raises
    ------
    BadInputError
        A malformed sizes, peak or blacklist line, or a requested chromosome
        missing from the sizes file.
    """
    sizes = read_chrom_sizes(chrom_sizes_path)
    check_peak_files(peaks, sizes, blacklist_path)
    if chroms is not None:
        unknown = [c for c in chroms if c not in sizes]
        if unknown:
            raise BadInputError(chrom_sizes_path, 0, f"chromosomes {unknown} not in the sizes file")
        sizes = {c: sizes[c] for c in chroms}
    return sizes


def _cell_codes(
    peaks: dict[str, tuple[str, str]], bins_path: Path, n_bins: int, work: Path, keep: bool, cell: str
) -> np.ndarray:
    """One cell's label codes of every bin (:func:`official_rule` of its :func:`peak_counts`)."""
    conservative, relaxed = peaks[cell]
    tag = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in cell)
    optimal, loose = peak_counts(bins_path, conservative, relaxed, work, tag, keep=keep)
    if len(optimal) != n_bins or len(loose) != n_bins:
        raise RuntimeError(f"{cell}: bedtools returned {len(optimal)}/{len(loose)} rows for {n_bins} bins")
    return official_rule(optimal, loose)


def _write_labels(
    out: Path, bins: pa.Table, cells: list[str], codes: dict[str, np.ndarray]
) -> dict[str, dict[str, int]]:
    """Write the labels file at ``out`` (by a temporary name, then renamed); returns each cell's U/B/A counts."""
    columns = {"chr": bins["chr"], "start": bins["start"], "stop": bins["stop"]}
    counts = {}
    for cell in cells:
        columns[cell] = _codes_to_strings(codes[cell])
        tally = np.bincount(codes[cell], minlength=256)
        counts[cell] = {label: int(tally[ord(label)]) for label in "UBA"}
    partial = out.with_name(out.name + PARTIAL_SUFFIX)
    _write_tsv(pa.table(columns), partial, header="\t".join(["chr", "start", "stop", *cells]), gzip_level=6)
    os.replace(partial, out)
    return counts


def _read_bed3(path: Path, wide: bool = False) -> pa.Table:
    """Read the first three BED columns with pyarrow (multi-threaded, no Python loop).

    Coordinates are int32 unless ``wide`` (a chromosome of 2^31 bp or more),
    which halves the memory of a 48 M-bin table.
    """
    names = ["chr", "start", "stop"]
    position = pa.int64() if wide else pa.int32()
    types = {"chr": pa.dictionary(pa.int32(), pa.string()), "start": position, "stop": position}
    if os.path.getsize(path) == 0:
        return pa.table({name: pa.array([], types[name]) for name in names})
    return pacsv.read_csv(
        path,
        read_options=pacsv.ReadOptions(column_names=names, block_size=1 << 24),
        parse_options=pacsv.ParseOptions(delimiter="\t", quote_char=False),
        convert_options=pacsv.ConvertOptions(include_columns=names, column_types=types),
    )


def _read_count_column(path: Path) -> np.ndarray:
    """The fourth column (``-c`` count) of a ``bedtools intersect`` output."""
    if os.path.getsize(path) == 0:
        return np.zeros(0, dtype=np.int32)
    table = pacsv.read_csv(
        path,
        read_options=pacsv.ReadOptions(column_names=["chr", "start", "stop", "n"], block_size=1 << 24),
        parse_options=pacsv.ParseOptions(delimiter="\t", quote_char=False),
        convert_options=pacsv.ConvertOptions(include_columns=["n"], column_types={"n": pa.int32()}),
    )
    return table["n"].to_numpy()


def _codes_to_strings(codes: np.ndarray) -> pa.Array:
    """One-character strings from ASCII codes, zero-copy (no per-bin objects)."""
    n = len(codes)
    offsets = np.arange(n + 1, dtype=np.int32)
    data = pa.py_buffer(np.ascontiguousarray(codes))
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), data])


def _write_tsv(table: pa.Table, path: Path, header: str | None, gzip_level: int | None = None) -> None:
    """Write a table as unquoted TSV, optionally gzipped, with a fixed header.

    Arrow quotes the header it writes itself, which DREAM files never do, so
    the header is written by hand. Compression goes through Python's gzip
    with ``mtime=0`` (equal tables give equal bytes) at level 6 like
    ``gzip``'s default; Arrow's own gzip stream uses level 9, four times
    slower for a 1 % smaller file.
    """
    options = pacsv.WriteOptions(include_header=False, delimiter="\t", quoting_style="none")
    with open(path, "wb") as raw:
        sink: BinaryIO | gzip.GzipFile = raw
        if gzip_level:
            sink = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=gzip_level)
        with sink:
            if header is not None:
                sink.write((header + "\n").encode())
            # Slices bound the memory of the text buffer at any genome size.
            for offset in range(0, table.num_rows, _WRITE_ROWS):
                text = io.BytesIO()
                pacsv.write_csv(table.slice(offset, _WRITE_ROWS), text, options)
                sink.write(text.getbuffer())
