"""How many unbound bins to draw for the U:B ratio: each class's probability of being kept.

Which bins a draw keeps is :mod:`tfbs.formats.draws`: a hash of the seed and
each bin's coordinates, below the probability of its class.
"""

from __future__ import annotations


def draw_probabilities(
    n_bound: int, n_open: int, n_closed: int, negatives_per_positive: float, hard_negative_fraction: float
) -> tuple[float, float]:
    """Probabilities of keeping an open and a closed unbound bin.

    The expected number of U drawn is ``negatives_per_positive * n_bound``,
    ``hard_negative_fraction`` of them from open chromatin: those are the
    negatives a model cannot reject on accessibility alone. If there are too
    few open ones, closed ones make up the rest.

    Examples
    --------
    >>> draw_probabilities(10, 100, 1000, 2.0, 0.5)
    (0.1, 0.01)
    """
    wanted = n_bound * negatives_per_positive
    wanted_open = min(n_open, wanted * hard_negative_fraction)
    p_open = min(1.0, wanted_open / max(n_open, 1))
    p_closed = min(1.0, (wanted - wanted_open) / max(n_closed, 1))
    return p_open, p_closed
