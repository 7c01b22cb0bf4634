"""Windows from an indexed FASTA: bases, padding, edges and N runs."""

from __future__ import annotations

import numpy as np
from pyfaidx import Fasta

from tfbs.formats.genome import (
    WINDOW_OK,
    WINDOW_OUT_OF_BOUNDS,
    WINDOW_TOO_MANY_N,
    gather_windows,
    load_chromosome,
    read_fai,
    window_status,
)


def _fasta(tmp_path) -> str:
    rng = np.random.default_rng(0)
    chr_a = "".join(rng.choice(list("ACGTacgt"), 1234))
    chr_b = "ACGT" * 100 + "N" * 300 + "acgt" * 100
    path = tmp_path / "genome.fa"
    with open(path, "w") as out:
        for name, seq in (("chrA", chr_a), ("chrB", chr_b)):
            out.write(f">{name}\n" + "".join(seq[i : i + 60] + "\n" for i in range(0, len(seq), 60)))
    Fasta(str(path))  # writes the .fai
    return f"file://{path}"


def test_chromosomes_match_pyfaidx_upper_cased(tmp_path):
    uri = _fasta(tmp_path)
    reference = Fasta(uri.removeprefix("file://"), as_raw=True, sequence_always_upper=True)
    for name, entry in read_fai(uri).items():
        assert load_chromosome(uri, entry).tobytes().decode() == reference[name][:]


def test_windows_are_centred_and_padded_with_n(tmp_path):
    uri = _fasta(tmp_path)
    chrom = load_chromosome(uri, read_fai(uri)["chrA"])
    windows = gather_windows(chrom, np.array([500, 0]), 400)
    assert windows[0].tobytes() == chrom[400:800].tobytes()  # bin 500-700, centre 600
    assert windows[1].tobytes() == b"N" * 100 + chrom[:300].tobytes()


def test_window_status_for_edges_and_n_runs(tmp_path):
    uri = _fasta(tmp_path)
    chrom = load_chromosome(uri, read_fai(uri)["chrB"])  # 400 ACGT, 300 N, 400 acgt
    starts = np.array([0, 100, 450, 850, 1000])
    dropped = window_status(chrom, starts, 200, max_n_fraction=0.1, pad=False)
    assert dropped.tolist() == [WINDOW_OK, WINDOW_OK, WINDOW_TOO_MANY_N, WINDOW_OK, WINDOW_OUT_OF_BOUNDS]
    padded = window_status(chrom, starts, 400, max_n_fraction=0.3, pad=True)
    # bin 0: 100 bp of padding (25%) is fine; bin 1000: 200 of 400 padded.
    assert padded.tolist() == [WINDOW_OK, WINDOW_OK, WINDOW_TOO_MANY_N, WINDOW_OK, WINDOW_TOO_MANY_N]
