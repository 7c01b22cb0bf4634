"""Writers for the generated files: FASTA + .fai, sizes, BED and narrowPeak.

Every gzip member is written with ``mtime=0`` and no file name, so the same
content always gives the same bytes (the generator is tested for that).
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np

from tfbs.formats.motifs import decode_dna

#: The ten narrowPeak columns, in order.
NARROWPEAK_COLUMNS = ("chrom", "start", "end", "name", "score", "strand", "signal", "p", "q", "peak")


def write_gzip(path: str | os.PathLike[str], text: str) -> None:
    """Write text gzipped, reproducibly (no timestamp, no name in the header)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as sink:
        sink.write(text.encode("ascii"))


def write_fasta(path: str | os.PathLike[str], chromosomes: dict[str, np.ndarray], line_width: int = 60) -> None:
    """Write base codes as FASTA and a samtools-style ``.fai`` next to it.

    Parameters
    ----------
    path
        The ``.fa`` file; the index is ``path + ".fai"``.
    chromosomes
        ``{name: uint8 codes}`` in the order to write.
    line_width
        Bases per line (all lines full except each record's last).

    Notes
    -----
    The index is computed rather than left to pyfaidx so it exists even for
    readers that refuse to rebuild one (``Fasta(..., rebuild=False)``).
    Columns: name, length, byte offset of the first base, bases per line,
    bytes per line.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    index_lines = []
    offset = 0
    with open(path, "wb") as out:
        for name, codes in chromosomes.items():
            header = f">{name}\n".encode("ascii")
            out.write(header)
            offset += len(header)
            index_lines.append(f"{name}\t{len(codes)}\t{offset}\t{line_width}\t{line_width + 1}\n")
            text = decode_dna(codes)
            full = len(text) // line_width * line_width
            # Reshape the full lines into a (rows, width) block and add a
            # newline column: one buffer, no per-line Python work.
            block = np.frombuffer(text[:full], dtype=np.uint8).reshape(-1, line_width)
            newline = np.full((block.shape[0], 1), ord("\n"), dtype=np.uint8)
            body = np.hstack([block, newline]).tobytes()
            if full < len(text):
                body += text[full:] + b"\n"
            out.write(body)
            offset += len(body)
    Path(str(path) + ".fai").write_text("".join(index_lines))


def write_chrom_sizes(path: str | os.PathLike[str], sizes: dict[str, int]) -> None:
    """Two-column ``chrom<TAB>size`` file, sorted by name like hg19.autoX.chrom.sizes."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("".join(f"{name}\t{sizes[name]}\n" for name in sorted(sizes)))


def write_bed_gz(path: str | os.PathLike[str], intervals: list[tuple[str, int, int]]) -> None:
    """Gzipped BED3, sorted by chromosome name then start."""
    rows = sorted(intervals, key=lambda row: (row[0], row[1], row[2]))
    write_gzip(path, "".join(f"{c}\t{s}\t{e}\n" for c, s, e in rows))


def format_narrowpeak(peaks: dict[str, np.ndarray], chrom_names: list[str]) -> str:
    """Render peaks as 10-column narrowPeak text, sorted by position.

    Parameters
    ----------
    peaks
        Column arrays: ``chrom`` (index into ``chrom_names``), ``start``,
        ``end``, ``score`` (0-1000), ``signal``, ``p``, ``q`` (-log10) and
        ``peak`` (summit offset from ``start``).
    chrom_names
        Chromosome names by index.

    Returns
    -------
    str
        One line per peak: ``chrom start end . score . signal p q peak``;
        rows ordered by chromosome name, start, end.
    """
    # Rank chromosomes by name so rows come out as `sort -k1,1 -k2,2n` would.
    rank = np.argsort(np.argsort(np.asarray(chrom_names)))
    order = np.lexsort((peaks["end"], peaks["start"], rank[peaks["chrom"]]))
    lines = [
        f"{chrom_names[peaks['chrom'][i]]}\t{peaks['start'][i]}\t{peaks['end'][i]}\t.\t{peaks['score'][i]}\t.\t"
        f"{peaks['signal'][i]:.5f}\t{peaks['p'][i]:.5f}\t{peaks['q'][i]:.5f}\t{peaks['peak'][i]}\n"
        for i in order.tolist()
    ]
    return "".join(lines)


def write_narrowpeak_gz(path: str | os.PathLike[str], peaks: dict[str, np.ndarray], chrom_names: list[str]) -> int:
    """Write peaks as gzipped narrowPeak; returns the number of peaks."""
    write_gzip(path, format_narrowpeak(peaks, chrom_names))
    return int(len(peaks["start"]))


def concat_peaks(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Stack several peak column dicts into one."""
    keys = [key for key in NARROWPEAK_COLUMNS if key not in ("name", "strand")]  # constant columns
    return {key: np.concatenate([part[key] for part in parts]) for key in keys}
