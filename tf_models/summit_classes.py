"""The DNase input as classes of the summit's distance (``model.summit_classes_bp``).

On generated data the cell's binding follows the DNase summit closely: for
FOXA1 in K562 (tuning seed 7) no bin whose summit lies more than 200 bp from
its centre is bound, and 3-10 % of those within it are. The boosted
baseline cuts its one DNase number there; the network, given the same number
as one input, ranked the bins past that edge (235-470 bp from the summit)
above every closed bin, nearly as high as the bound ones (mean percentile
0.77-0.80 against 0.84-0.86; the baseline's 0.32-0.38), and lost most to
it on the TFs whose short motif recurs by chance (FOXA1, FOXA2). Given the distance as one-hot
classes, one weight per class says how much each counts, which the hidden
layer did not learn from the number. Measured on that seed (three
trainings): the far bins leave the top of every ranking and CTCF and EGR1
rise, FOXA1 and FOXA2 fall, level overall, so it is off by default
(docs/model-quality.md, "Tried: the DNase input as classes of the summit's
distance").
"""

from __future__ import annotations

import tensorflow as tf

from tf_models.summit_ring import summit_distance


def summit_classes(dnase: tf.Tensor, edges_bp: list[int]) -> tf.Tensor:
    """One-hot ``(batch, len(edges_bp) + 2)``: closed, then the summit's distance class.

    Parameters
    ----------
    dnase
        The rows' DNase input (0 in no peak, else the summit's proximity,
        :func:`tfbs.formats.annotate.peak_proximity`).
    edges_bp
        Increasing class edges: ``[0, e0)``, ``[e0, e1)``, ... ``[e_last, ∞)``.

    Examples
    --------
    >>> summit_classes(tf.constant([0.0, 1.0, 0.9, 0.5]), [50, 200]).numpy().tolist()
    [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]]
    """
    dnase = tf.cast(dnase, tf.float32)
    distance = summit_distance(dnase)
    # A class per row: how many edges lie at or below its distance. The records keep the proximity to
    # 1/255, so a distance is known to about 2 bp; the 0.01 bp only absorbs float32's error.
    edges = tf.constant(edges_bp, tf.float32)[None, :]
    bucket = tf.reduce_sum(tf.cast(distance[:, None] + 0.01 >= edges, tf.int32), axis=1)
    opened = tf.one_hot(bucket + 1, len(edges_bp) + 2)
    closed = tf.one_hot(tf.zeros_like(bucket), len(edges_bp) + 2)
    return tf.where((dnase > 0.0)[:, None], opened, closed)
