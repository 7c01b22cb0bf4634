"""In-silico mutagenesis (ISM) of an exported model, DNA channel only.

Every base of a region of each window is replaced in turn by the three
other bases and the window is scored again; the protein, the cell and the
DNase overlap are held at the example's own values. ISM needs no gradients,
so it runs on the exported SavedModel of any architecture exactly as
evaluation scores it, and its effects are in logits, where they add up.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import numpy as np

#: ASCII codes of the bases, in the A, C, G, T order of every matrix here.
BASES = np.frombuffer(b"ACGT", dtype=np.uint8)

#: ``score(windows)``: one logit per ``uint8`` window (rows of ASCII bases).
Scorer = Callable[[np.ndarray], np.ndarray]


def mutants(window: np.ndarray, first: int, length: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every single-base substitution of ``window[first:first + length]``, the reference bases left out.

    Returns
    -------
    rows : numpy.ndarray
        ``uint8`` (substitutions, len(window)): each the window with one base
        replaced; three per position (four where the reference is not ACGT).
    positions, bases : numpy.ndarray
        For each row, the position (from ``first``) it changes and the index
        (ACGT order) of the base it puts there.

    Examples
    --------
    >>> rows, positions, bases = mutants(np.frombuffer(b"AC", np.uint8), 1, 1)
    >>> [row.tobytes() for row in rows], positions.tolist(), bases.tolist()
    ([b'AA', b'AG', b'AT'], [0, 0, 0], [0, 2, 3])
    """
    substituted = BASES[None, :] != window[first : first + length, None]
    positions, bases = np.nonzero(substituted)
    rows = np.repeat(window[None, :], len(positions), axis=0)
    rows[np.arange(len(positions)), first + positions] = BASES[bases]
    return rows, positions, bases


def ism(score: Scorer, windows: np.ndarray, first: int, length: int, batch_size: int = 4096) -> np.ndarray:
    """Logit change of every substitution in ``[first, first + length)`` of each window.

    Parameters
    ----------
    score
        Scores a batch of windows (see :data:`Scorer`).
    windows
        ``uint8`` (n, window) of ASCII bases.
    batch_size
        Mutated windows scored per call (about; whole windows' worth).

    Returns
    -------
    numpy.ndarray
        ``float32`` (n, length, 4): ``score(mutant) - score(window)``; zero
        at each reference base, which is never scored (a quarter of the
        calls saved).
    """
    deltas = np.zeros((len(windows), length, 4), dtype=np.float32)
    per_window = max(1, batch_size // (length * 3))
    for begin in range(0, len(windows), per_window):
        chunk = windows[begin : begin + per_window]
        made = [mutants(window, first, length) for window in chunk]
        logits = np.asarray(score(np.concatenate([rows for rows, _, _ in made])), dtype=np.float32)
        reference = score(chunk).astype(np.float32)
        offset = 0
        for index, (rows, positions, bases) in enumerate(made):
            changed = logits[offset : offset + len(rows)] - reference[index]
            deltas[begin + index, positions, bases] = changed
            offset += len(rows)
    return deltas


def contributions(deltas: np.ndarray) -> np.ndarray:
    """What each reference base adds to the logit: minus the mean change of its three substitutions.

    Parameters
    ----------
    deltas
        (n, length, 4) from :func:`ism`, zero at the reference bases.

    Returns
    -------
    numpy.ndarray
        (n, length); positive where the reference base raises the prediction.
    """
    return -deltas.sum(axis=-1) / 3.0


def signature_scorer(signature, tf_index: int, cell_index: int, dnase: float) -> Scorer:
    """A :data:`Scorer` of an export's ``indexed`` signature for one TF, cell and DNase state.

    The ``indexed`` signature uses the protein stored with the model, so
    the TF's branch is the trained TF's exactly.
    """
    import tensorflow as tf

    def score(windows: np.ndarray) -> np.ndarray:
        n = len(windows)
        out = signature(
            dna=tf.constant([w.tobytes() for w in windows]),
            tf_index=tf.fill([n], tf_index),
            cell_index=tf.fill([n], cell_index),
            dnase=tf.fill([n], float(dnase)),
        )
        return out["logit"].numpy()

    return score


def attribute_partition(
    items: Iterable[tuple], export_dir: str, first: int, length: int, batch_size: int
) -> Iterator[tuple]:
    """ISM of one Spark partition's windows; each (TF, cell, DNase) group shares a scorer.

    Parameters
    ----------
    items
        ``(key, window bytes, tf_index, cell_index, dnase)``.
    export_dir
        Local path of the SavedModel.

    Yields
    ------
    tuple
        ``(key, contributions)``: the (length,) ``float32`` of
        :func:`contributions`, as bytes.
    """
    import tensorflow as tf

    signature = tf.saved_model.load(export_dir).signatures["indexed"]
    groups: dict[tuple, list] = {}
    for key, window, tf_index, cell_index, dnase in items:
        groups.setdefault((int(tf_index), int(cell_index), float(dnase)), []).append((key, window))
    for (tf_index, cell_index, dnase), members in groups.items():
        score = signature_scorer(signature, tf_index, cell_index, dnase)
        windows = np.stack([np.frombuffer(window, dtype=np.uint8) for _, window in members])
        for (key, _), row in zip(members, contributions(ism(score, windows, first, length, batch_size))):
            yield key, row.astype(np.float32).tobytes()
