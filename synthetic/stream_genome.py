"""Genome-sized random sequence, written to FASTA one chromosome at a time.

:mod:`synthetic.genome` builds a few Mb with float draws and a
``searchsorted`` per base; at hg19 scale (3.1 Gbp) that would need ~16 bytes
of temporaries per base and minutes of CPU. Here each base is one 16-bit
integer draw mapped through a 65,536-entry table to a base code, in chunks,
and only one chromosome's ``uint8`` codes are ever held in memory (chr1 of
hg19: 249 MB).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from tfbs.formats.motifs import N_CODE

#: Bases per FASTA line (what UCSC's hg19.fa uses is 50; any fixed width is valid for a .fai).
LINE_WIDTH = 60
#: Bases per chunk: 16 M bases keep the temporaries under ~130 MB (bincount widens to int64).
_CHUNK = 1 << 24
#: FASTA lines formatted per write (16 MB of text at 60 bp per line).
_ROWS_PER_WRITE = 1 << 18
_ASCII = np.frombuffer(b"ACGTN", dtype=np.uint8)


def base_lookup(gc: float) -> np.ndarray:
    """Map every 16-bit value to a base code so that a uniform draw has the wanted GC.

    Parameters
    ----------
    gc
        G+C fraction in (0, 1); reached to within 2**-16.

    Returns
    -------
    numpy.ndarray
        ``uint8`` codes 0-3 (A, C, G, T) of length 65,536, with A and T each
        ``(1 - gc) / 2`` and C and G each ``gc / 2`` of the entries.
    """
    at = (1.0 - gc) / 2.0
    bounds = np.rint(np.array([at, 0.5, 0.5 + gc / 2.0]) * 65536).astype(np.int64)
    return np.searchsorted(bounds, np.arange(65536), side="right").astype(np.uint8)


def random_codes(length: int, gc: float, rng: np.random.Generator, chunk: int = _CHUNK) -> np.ndarray:
    """I.i.d. random bases of a given GC content, drawn chunk by chunk.

    Parameters
    ----------
    length
        Number of bases.
    gc
        G+C fraction.
    rng
        Source of randomness; the result depends on it and ``chunk`` only.
    chunk
        Bases per draw (bounds the temporary memory).

    Returns
    -------
    numpy.ndarray
        ``uint8`` codes 0-3.
    """
    lookup = base_lookup(gc)
    codes = np.empty(length, dtype=np.uint8)
    for start in range(0, length, chunk):
        stop = min(start + chunk, length)
        codes[start:stop] = lookup[rng.integers(0, 65536, size=stop - start, dtype=np.uint16)]
    return codes


def code_counts(codes: np.ndarray, chunk: int = _CHUNK) -> np.ndarray:
    """Count of each code 0-4 (A, C, G, T, N), chunk by chunk.

    ``np.bincount`` widens its input to 64-bit integers: on all of chr1
    that temporary alone would be 2 GB.
    """
    counts = np.zeros(N_CODE + 1, dtype=np.int64)
    for start in range(0, codes.shape[0], chunk):
        counts += np.bincount(codes[start : start + chunk], minlength=N_CODE + 1)[: N_CODE + 1]
    return counts


def write_fasta_stream(
    path: str | os.PathLike[str],
    records: Iterable[tuple[str, np.ndarray]],
    line_width: int = LINE_WIDTH,
) -> dict[str, np.ndarray]:
    """Write base codes as FASTA and a samtools-style ``.fai``, record by record.

    Parameters
    ----------
    path
        The ``.fa`` file; the index is ``path + ".fai"``.
    records
        ``(name, uint8 codes)`` pairs, consumed lazily: a generator that
        builds each chromosome on demand keeps one in memory at a time.
    line_width
        Bases per line (all lines full except each record's last).

    Returns
    -------
    dict[str, numpy.ndarray]
        Per record, the count of each code 0-4 (A, C, G, T, N).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    counts: dict[str, np.ndarray] = {}
    index_lines = []
    offset = 0
    block = np.empty((_ROWS_PER_WRITE, line_width + 1), dtype=np.uint8)
    block[:, line_width] = ord("\n")
    with open(path, "wb") as out:
        for name, codes in records:
            header = f">{name}\n".encode("ascii")
            out.write(header)
            offset += len(header)
            index_lines.append(f"{name}\t{codes.shape[0]}\t{offset}\t{line_width}\t{line_width + 1}\n")
            counts[name] = code_counts(codes)
            full_rows = codes.shape[0] // line_width
            for row in range(0, full_rows, _ROWS_PER_WRITE):
                n_rows = min(_ROWS_PER_WRITE, full_rows - row)
                lines = codes[row * line_width : (row + n_rows) * line_width].reshape(n_rows, line_width)
                # Fancy indexing into a preallocated block: no per-line Python work.
                block[:n_rows, :line_width] = _ASCII[lines]
                out.write(block[:n_rows].data)
            offset += full_rows * (line_width + 1)
            tail = codes[full_rows * line_width :]
            if tail.shape[0]:
                text = _ASCII[tail].tobytes() + b"\n"
                out.write(text)
                offset += len(text)
    Path(str(path) + ".fai").write_text("".join(index_lines))
    return counts
