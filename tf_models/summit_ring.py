"""Each filter's best match where the cell's DNase summit lies: the open region's place, read from the DNase input.

A TF's site sits at the centre of the open region it opens, and the
region's DNase summit lies near that centre; a strong match far from the
summit is most often a chance one. The DNase input of a row
(:func:`tfbs.formats.annotate.peak_proximity`) already says how far the
bin's centre lies from the nearest summit of a peak it overlaps, though not
on which side. So, from the motif maps the filters have computed, this layer
keeps each filter's best match in a ring: the positions whose distance from
the bin's centre is within ``reach_bp`` of the summit's, on both sides. A
track of the DNase signal along the window built from the peaks, with no
new input: the shards stay as they are.

A row whose bin overlaps no peak, or whose ring falls outside the scanned
region, gets 0 for every filter and a flag of 0 (1 otherwise).
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from tfbs.formats.annotate import SUMMIT_REACH_BP

#: Below any match a filter computes: masked positions are pushed this far down before the max.
_MASKED = 1.0e4


def summit_distance(dnase: tf.Tensor) -> tf.Tensor:
    """Distance (bp) from the bin's centre to the summit, inverted from the DNase proximity in [0, 1].

    Exact to the proximity's rounding (one 255th of 1000 bp in the records);
    a proximity of 0.5 (a summit ``SUMMIT_REACH_BP`` or more away) gives that
    reach.

    Examples
    --------
    >>> summit_distance(tf.constant([1.0, 0.9, 0.5])).numpy().round(1).tolist()
    [0.0, 100.0, 500.0]
    """
    return (1.0 - tf.cast(dnase, tf.float32)) * (2.0 * SUMMIT_REACH_BP)


class SummitRing(keras.layers.Layer):
    """Each filter's best match at the summit's distance from the bin's centre, either side.

    Parameters
    ----------
    first, length
        The window slice the filters scanned (:func:`tf_models.motif_cnn.scanned_region`).
    kernel
        Filter width: map position ``i`` is the match centred at ``first + i + kernel / 2``.
    window
        Length of the windows, the bin in their middle.
    reach_bp
        How far from the summit's distance a match still counts.
    """

    def __init__(self, first: int, length: int, kernel: int, window: int, reach_bp: int, **kwargs) -> None:
        super().__init__(**kwargs)
        self.reach_bp = float(reach_bp)
        centres = first + np.arange(length - kernel + 1) + kernel / 2.0
        #: Each map position's distance from the bin's centre.
        self.offsets = tf.constant(np.abs(centres - window / 2.0), tf.float32)

    def call(self, maps: tf.Tensor, dnase: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """``(best, flag)``: (batch, filters) best matches in the ring and (batch, 1) whether it held any."""
        distance = summit_distance(dnase)[:, None]  # (batch, 1)
        inside = tf.abs(self.offsets[None, :] - distance) <= self.reach_bp  # (batch, positions)
        inside = tf.logical_and(inside, tf.cast(dnase, tf.float32)[:, None] > 0)
        any_inside = tf.reduce_any(inside, axis=1, keepdims=True)
        shift = tf.cast(tf.where(inside, 0.0, -_MASKED), maps.dtype)[:, :, None]
        best = tf.reduce_max(maps + shift, axis=1)
        best = tf.where(any_inside, best, tf.zeros_like(best))
        return best, tf.cast(any_inside, maps.dtype)
