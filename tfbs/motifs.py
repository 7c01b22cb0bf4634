"""Position weight matrices: MEME parsing, sampling and log-odds scanning.

Sequences are handled as ``uint8`` base codes (A=0, C=1, G=2, T=3, other=4)
so a scan is a handful of vectorised gathers, one per motif column, over
the whole sequence at once; there is no Python loop over positions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tfbs.errors import BadInputError

#: Base order of every matrix and one-hot encoding here (MEME's ACGT order).
ALPHABET = "ACGT"
#: Code of a base outside ACGT (N, IUPAC, soft-masked junk after upper-casing).
N_CODE = 4


def read_meme(path: str) -> dict[str, np.ndarray]:
    """Read the letter-probability matrices of a MEME motif file.

    Parameters
    ----------
    path
        A MEME (version 4+) text file with DNA motifs, e.g. HOCOMOCO v9.

    Returns
    -------
    dict[str, numpy.ndarray]
        ``{motif_id: probabilities}``, each ``float64`` of shape ``(w, 4)``
        in ACGT order, rows renormalised to sum to 1 (the files round).

    Raises
    ------
    ValueError
        If a matrix is truncated, has a row of the wrong length, or the file
        declares an alphabet other than ACGT.
    """
    motifs: dict[str, np.ndarray] = {}
    with open(path) as handle:
        lines = handle.read().splitlines()
    current: str | None = None
    index = 0
    while index < len(lines):
        line = lines[index].strip()
        index += 1
        if line.startswith("ALPHABET=") and line.split("=", 1)[1].strip() not in ("ACGT", ""):
            raise BadInputError(path, index, f"only the ACGT alphabet is supported, found {line!r}")
        if line.startswith("MOTIF"):
            fields = line.split()
            if len(fields) < 2:
                raise BadInputError(path, index, "MOTIF line without an id")
            current = fields[1]
        elif line.startswith("letter-probability matrix") and current is not None:
            header = _key_values(line.split(":", 1)[1])
            width = int(header["w"])
            rows = []
            for offset in range(width):
                if index + offset >= len(lines):
                    raise BadInputError(path, index + offset, f"motif {current} truncated ({offset} of {width} rows)")
                values = lines[index + offset].split()
                if len(values) != 4:
                    raise BadInputError(
                        path, index + offset + 1, f"motif {current}: expected 4 columns, found {len(values)}"
                    )
                rows.append([float(v) for v in values])
            index += width
            matrix = np.asarray(rows, dtype=np.float64)
            motifs[current] = matrix / matrix.sum(axis=1, keepdims=True)
            current = None
    return motifs


def _key_values(text: str) -> dict[str, str]:
    """Parse ``alength= 4 w= 19 nsites= 2861`` into a dict."""
    tokens = text.replace("=", " = ").split()
    return {tokens[i - 1]: tokens[i + 1] for i, token in enumerate(tokens) if token == "=" and 0 < i < len(tokens) - 1}


def log_odds(
    pwm: np.ndarray,
    background: Sequence[float] = (0.25, 0.25, 0.25, 0.25),
    pseudocount: float = 0.01,
) -> np.ndarray:
    """Log2-odds scores of a probability matrix against a background.

    Parameters
    ----------
    pwm
        ``(w, 4)`` letter probabilities.
    background
        ACGT background frequencies.
    pseudocount
        Mixed into each row before the log, so a 0 in the matrix costs a
        finite penalty instead of minus infinity.

    Returns
    -------
    numpy.ndarray
        ``(w, 4)`` float64 log2 odds.
    """
    bg = np.asarray(background, dtype=np.float64)
    bg = bg / bg.sum()
    smoothed = (np.asarray(pwm, dtype=np.float64) + pseudocount * bg) / (1.0 + pseudocount)
    return np.log2(smoothed / bg)


def encode_dna(sequence: str | bytes | np.ndarray) -> np.ndarray:
    """Base codes of a DNA sequence (A=0, C=1, G=2, T=3, anything else 4).

    Parameters
    ----------
    sequence
        Text (any case) or already-coded ``uint8``/integer array.

    Returns
    -------
    numpy.ndarray
        ``uint8`` codes.
    """
    if isinstance(sequence, np.ndarray):
        return sequence.astype(np.uint8, copy=False)
    raw = sequence.encode("ascii") if isinstance(sequence, str) else bytes(sequence)
    lookup = np.full(256, N_CODE, dtype=np.uint8)
    for code, letter in enumerate(ALPHABET):
        lookup[ord(letter)] = code
        lookup[ord(letter.lower())] = code
    return lookup[np.frombuffer(raw, dtype=np.uint8)]


def decode_dna(codes: np.ndarray) -> bytes:
    """Upper-case ASCII bases of base codes (4 becomes ``N``)."""
    return np.frombuffer(b"ACGTN", dtype=np.uint8)[codes].tobytes()


def reverse_complement_codes(codes: np.ndarray) -> np.ndarray:
    """Reverse complement of base codes (N stays N), along the last axis."""
    complement = np.array([3, 2, 1, 0, N_CODE], dtype=np.uint8)
    return complement[codes[..., ::-1]]


def scan_positions(codes: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Best-strand log-odds of a motif starting at every position.

    Parameters
    ----------
    codes
        Base codes, shape ``(L,)`` or ``(n, L)``.
    scores
        ``(w, 4)`` log-odds matrix (from :func:`log_odds`).

    Returns
    -------
    numpy.ndarray
        ``float32`` of shape ``(..., L - w + 1)``: the max of the forward
        and reverse-complement match starting at each position. A position
        whose window holds an N scores that base as the worst base of its
        column, so N runs never look like motifs yet stay finite.
    """
    width = scores.shape[0]
    length = codes.shape[-1]
    if length < width:
        raise ValueError(f"sequence of length {length} is shorter than the motif ({width})")
    forward = np.concatenate([scores, scores.min(axis=1, keepdims=True)], axis=1).astype(np.float32)
    # The reverse strand read 5'->3' is matched by the flipped, complemented matrix.
    reverse = np.ascontiguousarray(forward[::-1][:, [3, 2, 1, 0, 4]])
    n_pos = length - width + 1
    best_fwd = np.zeros(codes.shape[:-1] + (n_pos,), dtype=np.float32)
    best_rev = np.zeros_like(best_fwd)
    for column in range(width):
        window = codes[..., column : column + n_pos]
        best_fwd += forward[column][window]
        best_rev += reverse[column][window]
    return np.maximum(best_fwd, best_rev)


def scan_max_score(
    seqs: str | Sequence[str] | np.ndarray,
    pwm: np.ndarray,
    background: Sequence[float] = (0.25, 0.25, 0.25, 0.25),
    pseudocount: float = 0.01,
) -> np.ndarray:
    """Max log-odds score over both strands of each sequence.

    Parameters
    ----------
    seqs
        One sequence (``str``), equal- or unequal-length strings, or one-hot
        ``(L, 4)`` / ``(n, L, 4)`` in ACGT order (an all-zero row is N).
    pwm
        ``(w, 4)`` letter probabilities (converted with :func:`log_odds`).
    background, pseudocount
        As in :func:`log_odds`.

    Returns
    -------
    numpy.ndarray
        ``float32`` of shape ``(n,)`` (``(1,)`` for a single sequence): the
        best score of a motif fully inside each sequence.
    """
    scores = log_odds(pwm, background, pseudocount)
    if isinstance(seqs, np.ndarray) and seqs.ndim >= 2 and seqs.shape[-1] == 4:
        onehot = seqs.reshape((-1,) + seqs.shape[-2:])
        codes = np.argmax(onehot, axis=-1).astype(np.uint8)
        codes[onehot.sum(axis=-1) == 0] = N_CODE
        return scan_positions(codes, scores).max(axis=-1)
    if isinstance(seqs, (str, bytes)):
        seqs = [seqs]
    return np.array([scan_positions(encode_dna(s), scores).max() for s in seqs], dtype=np.float32)


def sample_instances(pwm: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """Draw motif instances base by base from a probability matrix.

    Parameters
    ----------
    pwm
        ``(w, 4)`` letter probabilities.
    n
        Number of instances.
    rng
        Source of randomness.

    Returns
    -------
    numpy.ndarray
        ``uint8`` codes of shape ``(n, w)``, forward strand.
    """
    cumulative = np.cumsum(pwm, axis=1)
    draws = rng.random((n, pwm.shape[0]))
    codes = (draws[:, :, None] > cumulative[None, :, :]).sum(axis=2)
    return np.minimum(codes, 3).astype(np.uint8)


def degrade_instances(
    instances: np.ndarray,
    pwm: np.ndarray,
    rng: np.random.Generator,
    fraction: float = 0.2,
) -> np.ndarray:
    """Weaken motif instances by mutating some of their most informative bases.

    Parameters
    ----------
    instances
        ``(n, w)`` codes from :func:`sample_instances`.
    pwm
        The matrix they came from.
    rng
        Source of randomness.
    fraction
        Share of positions mutated (at least two), drawn from the more
        informative half of the matrix, each to its least likely base, so
        the match is clearly weaker yet still resembles the motif.

    Returns
    -------
    numpy.ndarray
        A mutated copy.
    """
    out = instances.copy()
    width = pwm.shape[0]
    information = 2.0 + np.sum(pwm * np.log2(np.clip(pwm, 1e-9, 1.0)), axis=1)
    informative = np.argsort(-information, kind="stable")[: max(2, width // 2)]
    n_mut = min(len(informative), max(2, int(round(fraction * width))))
    worst = np.argmin(pwm, axis=1).astype(np.uint8)
    for row in range(out.shape[0]):
        columns = rng.choice(informative, size=n_mut, replace=False)
        out[row, columns] = worst[columns]
    return out
