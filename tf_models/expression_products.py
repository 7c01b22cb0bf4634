"""Each filter's best match times each gene's expression in the row's cell: a partner's motif, counted per cell.

A partnered TF binds some of its sites only where a partner (a cofactor)
is expressed; the same motif pair is a site in one cell and nothing in the
next (the realistic profile's partners, the challenge's cofactors). Fed the
matches and the cell's expression side by side, the hidden layer has to
learn that product from the few sites that show it, and on the demo it did
not: its best false positives in a training cell were the other training
cell's partner sites (``bench/partner_errors.py``). Given the products, one
weight of the hidden layer says "this filter counts where this gene is
expressed", and the same rule reads a held-out cell's RNA-seq.
"""

from __future__ import annotations

import tensorflow as tf


def match_expression_products(matches: tf.Tensor, expression: tf.Tensor) -> tf.Tensor:
    """Every (filter, gene) product of one best match per filter and the row's expression.

    Parameters
    ----------
    matches
        ``(batch, filters)`` best matches, or ``(batch, scales, filters)``
        over nested widths, whose widest (the max over them) is used.
    expression
        ``(batch, genes)`` the row's cell's expression.

    Returns
    -------
    tf.Tensor
        ``(batch, filters * genes)``, filter-major.

    Examples
    --------
    >>> match_expression_products(tf.constant([[1.0, 2.0]]), tf.constant([[3.0, 0.5]])).numpy().tolist()
    [[3.0, 0.5, 6.0, 1.0]]
    """
    widest = tf.reduce_max(matches, axis=1) if matches.shape.rank == 3 else matches
    expression = tf.cast(expression, widest.dtype)
    return tf.reshape(widest[:, :, None] * expression[:, None, :], [-1, widest.shape[-1] * expression.shape[-1]])
