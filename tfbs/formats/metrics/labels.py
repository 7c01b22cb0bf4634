"""The DREAM label alphabet in the metrics: U/B/A (or 0/1/-1) read, A bins dropped as ``score.py`` drops them."""

from __future__ import annotations

import numpy as np

from tfbs.formats.dream import LABEL_CODES


def _label_error(bad: object) -> ValueError:
    return ValueError(f"unknown label {bad!r}: expected 'U', 'B' or 'A' (or the integers 0 = U, 1 = B, -1 = A)")


def encode_labels(labels: np.ndarray) -> np.ndarray:
    """Return labels as an int8 array with values in {-1, 0, 1}."""
    arr = np.asarray(labels)
    if arr.ndim != 1:
        raise ValueError(f"labels must be 1-D, got shape {arr.shape}")
    kind = arr.dtype.kind
    if kind in "US":
        if kind == "S":
            arr = arr.astype("U")
        out = np.full(arr.shape, -2, dtype=np.int8)
        if arr.dtype.itemsize == 4:  # single characters: compare code points
            chars = arr.astype("=U1", copy=False).view(np.uint32)
            for name, code in LABEL_CODES.items():
                out[chars == ord(name)] = code
        else:
            for name, code in LABEL_CODES.items():
                out[arr == name] = code
        bad = out == -2
        if bad.any():
            raise _label_error(arr[np.argmax(bad)].item())
        return out
    if kind == "b":
        return arr.astype(np.int8)
    if kind in "iuf":
        if kind == "f" and np.isnan(arr).any():
            raise _label_error(float("nan"))
        ok = (arr == 0) | (arr == 1) | (arr == -1)
        if not ok.all():
            raise _label_error(arr[np.argmin(ok)].item())
        return arr.astype(np.int8)
    if kind == "O":
        out = np.empty(arr.shape, dtype=np.int8)
        for i, v in enumerate(arr.tolist()):
            if isinstance(v, bytes):
                v = v.decode()
            if isinstance(v, str) and v in LABEL_CODES:
                out[i] = LABEL_CODES[v]
            elif isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and v in (0, 1, -1):
                out[i] = int(v)
            else:
                raise _label_error(v)
        return out
    raise ValueError(f"labels have unsupported dtype {arr.dtype}")


def filter_ambiguous(labels: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Drop ambiguous bins and return binary labels with their scores.

    Follows the DREAM ``score.py``: ``B`` -> 1, ``U`` -> 0, ``A`` -> -1 and
    ``index = labels > -0.5`` keeps only U/B bins, before any metric.

    Parameters
    ----------
    labels : np.ndarray
        1-D labels, either strings ``'U'``/``'B'``/``'A'`` or integers
        ``0`` (U), ``1`` (B), ``-1`` (A).
    scores : np.ndarray
        1-D prediction scores, same length as ``labels``.

    Returns
    -------
    tuple[np.ndarray, np.ndarray]
        ``(y, s)``: int8 labels in {0, 1} and the matching scores, with all
        ``A`` bins removed (original order kept).

    Raises
    ------
    ValueError
        If a label other than U/B/A (0/1/-1) occurs (the message names it),
        or if the lengths differ.
    """
    codes = encode_labels(labels)
    s = np.asarray(scores)
    if s.ndim != 1:
        raise ValueError(f"scores must be 1-D, got shape {s.shape}")
    if codes.shape[0] != s.shape[0]:
        raise ValueError(f"labels and scores differ in length: {codes.shape[0]} != {s.shape[0]}")
    keep = codes > -0.5
    if keep.all():
        return codes, s
    return codes[keep], s[keep]
