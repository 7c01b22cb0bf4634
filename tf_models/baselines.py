"""Baselines scored beside the model, on exactly the rows the model is scored on.

``motif_scan``
    The best log-odds match of the TF's position weight matrix fully inside
    the 200 bp bin, either strand: what a plain motif scan gets. A model
    that loses to it has not learnt the motif.
``oracle``
    On generated data only: the probability of B that the generator sampled
    the label from (:mod:`synthetic.oracle`), hidden state included: the
    reference no model of these inputs is expected to pass.
``coarse_pwm_reference``
    On generated data only: the generator's chance of B by coarse class of
    the TF's PWM match near each open location's exact centre
    (:func:`synthetic.oracle.coarse_pwm_chances`), read by
    :class:`OracleTable` from ``<TF>.coarse_pwm.tsv.gz``. A reference, not
    a bound: a model reads more than those classes and can pass it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from tfbs import storage
from tfbs.errors import ConfigError
from tfbs.formats.motifs import encode_dna, log_odds, read_meme, scan_positions

#: hg19's base composition (41 % G+C), the background of the log-odds.
GENOME_BACKGROUND = (0.295, 0.205, 0.205, 0.295)


def motif_log_odds(motif_db: str, motifs: dict[str, str]) -> dict[str, np.ndarray]:
    """Log-odds matrices of each TF's motif.

    Parameters
    ----------
    motif_db
        A MEME file (local path or any :mod:`tfbs.storage` URI).
    motifs
        ``{tf: motif id}``.

    Raises
    ------
    ValueError
        If a motif id is not in the file (the message lists close ids).
    """
    matrices = read_meme(motif_db)
    missing = {tf: motif for tf, motif in motifs.items() if motif not in matrices}
    if missing:
        raise ConfigError(
            f"evaluate.motifs: {motif_db} has no motif {sorted(missing.values())} (for {sorted(missing)})"
        )
    return {tf: log_odds(matrices[motif], GENOME_BACKGROUND) for tf, motif in motifs.items()}


def bin_motif_scores(windows: np.ndarray, scores: np.ndarray, bin_size: int = 200) -> np.ndarray:
    """Best motif match fully inside the central bin of each window, either strand.

    Parameters
    ----------
    windows
        ``uint8`` (n, window) ASCII bases, the bin in the middle.
    scores
        ``(w, 4)`` log-odds matrix.
    bin_size
        Length of the bin.

    Returns
    -------
    numpy.ndarray
        ``float32`` (n,).

    Examples
    --------
    >>> pwm = np.eye(4)[[0, 1, 2, 3]]  # ACGT
    >>> windows = np.frombuffer(b"TTTTACGTTTTT" + b"TTTTTTTTTTTT", np.uint8).reshape(2, 12)
    >>> bin_motif_scores(windows, log_odds(pwm), bin_size=6).round(1).tolist()
    [8.0, -18.0]
    """
    first = (windows.shape[1] - bin_size) // 2
    central = np.ascontiguousarray(windows[:, first : first + bin_size])
    codes = encode_dna(central.tobytes()).reshape(central.shape)
    return scan_positions(codes, scores).max(axis=-1)


@dataclass(frozen=True)
class OracleTable:
    """The generator's oracle of one TF: per chromosome, sorted bin starts and P(B) per cell."""

    cells: list[str]
    by_chrom: dict[str, tuple[np.ndarray, np.ndarray]]

    @classmethod
    def read(cls, uri: str) -> "OracleTable":
        """Read ``<TF>.oracle.tsv.gz`` (label-file layout, a probability per cell)."""
        with storage.open_input(uri) as handle:
            table = pacsv.read_csv(
                handle,
                parse_options=pacsv.ParseOptions(delimiter="\t"),
                convert_options=pacsv.ConvertOptions(column_types={"chr": pa.string(), "start": pa.int64()}),
            )
        cells = table.column_names[3:]
        chrom = table["chr"].to_numpy(zero_copy_only=False)
        starts = table["start"].to_numpy()
        values = np.stack([table[cell].to_numpy() for cell in cells], axis=1) if cells else np.empty((len(starts), 0))
        by_chrom = {}
        for name in np.unique(chrom):
            rows = np.flatnonzero(chrom == name)
            rows = rows[np.argsort(starts[rows], kind="stable")]
            by_chrom[str(name)] = (starts[rows], values[rows])
        return cls(cells, by_chrom)

    def scores(self, cell: str, chrom: np.ndarray, starts: np.ndarray) -> np.ndarray:
        """P(B) of the bins ``(chrom, start)`` in ``cell``.

        Raises
        ------
        KeyError
            If a bin is not in the table (the oracle of another data set).
        """
        column = self.cells.index(cell)
        out = np.empty(starts.shape[0], dtype=np.float64)
        for name in np.unique(chrom):
            rows = np.flatnonzero(chrom == name)
            known, values = self.by_chrom.get(str(name), (np.empty(0, np.int64), np.empty((0, len(self.cells)))))
            where = np.minimum(np.searchsorted(known, starts[rows]), max(known.shape[0] - 1, 0))
            found = known.shape[0] > 0 and np.all(known[where] == starts[rows])
            if not found:
                raise KeyError(f"a bin of {name} is not in the oracle table")
            out[rows] = values[where, column]
        return out
