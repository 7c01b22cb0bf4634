"""Position weight matrices: MEME parsing, sampling and log-odds scanning.

Sequences are handled as ``uint8`` base codes (A=0, C=1, G=2, T=3, other=4)
so a scan is a handful of vectorised gathers, one per motif column, over
the whole sequence at once; there is no Python loop over positions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tfbs import storage
from tfbs.errors import BadInputError, MissingInputError

#: Base order of every matrix and one-hot encoding here (MEME's ACGT order).
ALPHABET = "ACGT"
#: Code of a base outside ACGT (N, IUPAC, soft-masked junk after upper-casing).
N_CODE = 4


#: Largest distance from 1 of a matrix row's sum: MEME files round each
#: probability (HOCOMOCO to 6 digits, sums within 1e-6); a row further off
#: is mangled, not rounded, and renormalising would hide it.
ROW_SUM_TOLERANCE = 0.05
#: Lines that end a matrix given without ``w=`` (MEME makes the width optional).
_MATRIX_ENDS = ("MOTIF", "URL", "letter-probability", "log-odds")


def read_meme(uri: str) -> dict[str, np.ndarray]:
    """Read the letter-probability matrices of a MEME motif file.

    Parameters
    ----------
    uri
        A MEME (version 4+) text file with DNA motifs, e.g. HOCOMOCO v9: a
        local path or any :mod:`tfbs.storage` URI (``file://``, ``gs://``,
        ``hdfs://``), gzipped or not.

    Returns
    -------
    dict[str, numpy.ndarray]
        ``{motif_id: probabilities}``, each ``float64`` of shape ``(w, 4)``
        in ACGT order, rows renormalised to sum to 1 (the files round).

    Raises
    ------
    BadInputError
        Naming the line: text that is not UTF-8, an alphabet other than
        ACGT, a nameless or repeated MOTIF, a matrix outside a MOTIF, a
        width or alphabet length that is not 4, a truncated matrix, a row
        of the wrong length, a value that is not a probability, a row of
        zeros or one whose sum is not 1; or line 1 for a file without any
        motif.
    MissingInputError
        If the file is missing (a FileNotFoundError); the message names ``uri``.
    """
    lines = _text_lines(uri)
    motifs: dict[str, np.ndarray] = {}
    named_on: dict[str, int] = {}
    current: str | None = None
    index = 0
    while index < len(lines):
        line = lines[index].strip()
        index += 1
        if line.startswith("ALPHABET=") and line.split("=", 1)[1].strip() not in ("ACGT", ""):
            raise BadInputError(uri, index, f"only the ACGT alphabet is supported, found {line!r}")
        if line.split()[:1] == ["MOTIF"]:
            current = _motif_id(uri, index, line, named_on)
        elif line.startswith("letter-probability matrix"):
            if current is None:
                raise BadInputError(uri, index, "letter-probability matrix without a MOTIF line before it")
            width = _matrix_width(uri, index, line)
            matrix, index = _matrix_rows(uri, lines, index, width, current)
            motifs[current] = matrix / matrix.sum(axis=1, keepdims=True)
            current = None
    if not motifs:
        raise BadInputError(uri, 1, "no motif (no 'letter-probability matrix' line after a MOTIF line)")
    return motifs


def _text_lines(uri: str) -> list[str]:
    """The file's lines, each decoded on its own so that bad bytes are named by line."""
    try:
        with storage.open_input(uri) as stream:
            raw = stream.read()
    except FileNotFoundError:
        # A user's mistake (a wrong path in the configuration), not a bug: one line naming the file.
        raise MissingInputError(f"{uri}: not found (a MEME motif file the configuration names)") from None
    except OSError as err:  # a corrupt .gz, an unreadable object
        raise BadInputError(uri, 1, f"cannot be read ({err})") from None
    lines = []
    for number, line in enumerate(raw.splitlines(), start=1):
        try:
            lines.append(line.decode("utf-8"))
        except UnicodeDecodeError as err:
            raise BadInputError(
                uri, number, f"not UTF-8 text (byte {line[err.start]:#04x} at column {err.start + 1})"
            ) from None
    return lines


def _motif_id(uri: str, number: int, line: str, named_on: dict[str, int]) -> str:
    """The id of a ``MOTIF id [alt]`` line; an id already used is refused (one would shadow the other)."""
    fields = line.split()
    if len(fields) < 2:
        raise BadInputError(uri, number, "MOTIF line without an id")
    motif = fields[1]
    if motif in named_on:
        raise BadInputError(uri, number, f"motif {motif} named twice (first on line {named_on[motif]})")
    named_on[motif] = number
    return motif


def _matrix_width(uri: str, number: int, line: str) -> int | None:
    """``w=`` of a ``letter-probability matrix:`` line (None when absent), its ``alength=`` checked."""
    header = _key_values(line.partition(":")[2])
    if header.get("alength", "4") != "4":
        raise BadInputError(uri, number, f"alength= {header['alength']}: only the 4 letters ACGT are supported")
    width = header.get("w")
    if width is None:
        return None
    if not (width.isascii() and width.isdigit() and int(width) > 0):
        raise BadInputError(uri, number, f"w= {width!r} is not a positive integer")
    return int(width)


def _matrix_rows(uri: str, lines: list[str], start: int, width: int | None, motif: str) -> tuple[np.ndarray, int]:
    """The checked rows of a matrix whose first row is ``lines[start]``; also the index after its last row.

    Without ``w=`` the matrix ends at a blank line, a MOTIF or URL line, or
    the end of the file.
    """
    rows: list[list[float]] = []
    index = start
    while width is None or len(rows) < width:
        if index >= len(lines):
            if width is None and rows:
                break
            raise BadInputError(uri, len(lines), f"motif {motif} truncated ({len(rows)} of {width or 'some'} rows)")
        fields = lines[index].split()
        if width is None and rows and (not fields or fields[0].startswith(_MATRIX_ENDS)):
            break
        index += 1
        rows.append(_probability_row(uri, index, fields, motif))
    return np.asarray(rows, dtype=np.float64), index


def _probability_row(uri: str, number: int, fields: list[str], motif: str) -> list[float]:
    """One matrix row: four probabilities in ACGT order, summing to 1 up to rounding."""
    if len(fields) != 4:
        raise BadInputError(uri, number, f"motif {motif}: expected 4 columns, found {len(fields)}")
    row = []
    for field in fields:
        try:
            value = float(field)
        except ValueError:
            raise BadInputError(uri, number, f"motif {motif}: {field!r} is not a number") from None
        # Written so that NaN fails too.
        if not 0.0 <= value <= 1.0:
            raise BadInputError(uri, number, f"motif {motif}: {field!r} is not a probability (0 to 1)")
        row.append(value)
    total = sum(row)
    if total == 0.0:
        raise BadInputError(uri, number, f"motif {motif}: every probability of the row is 0")
    if abs(total - 1.0) > ROW_SUM_TOLERANCE:
        raise BadInputError(uri, number, f"motif {motif}: the row sums to {total:g}, not 1")
    return row


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
