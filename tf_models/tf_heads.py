"""A hidden layer and output of its own per TF, added to the shared output (``motif_cnn.tf_heads``).

The boosted baseline fits one classifier per TF, and on the tuning seed its
trees read the network's own learned matches better than the network's
shared hidden layer does, most of all for FOXA1 and FOXA2
(``bench/matches_boosted.py``): a TF whose binding follows its own rules
(partners, a short motif that recurs by chance) is read by units every TF
shares. The protein branch's head (a weight per shared unit made from the
protein) did not change that. Here each TF of the run gets its own small
hidden layer over the same inputs as the shared one, whose output starts
at zero and is added to the shared logit: the multi-task head of the
sequence models that score many TFs over one trunk.

A TF with no rows in training keeps its head at zero and is scored by the
shared layers alone, so a head only ever adds what that TF's own labels
taught.
"""

from __future__ import annotations

import keras
import tensorflow as tf


class TFHeads(keras.layers.Layer):
    """Per TF index, ``relu(x @ W_t + b_t) @ v_t + c_t``; ``v_t`` and ``c_t`` start at 0.

    Parameters
    ----------
    n_tfs
        How many TF indices have a head (``tf_index`` must be below it).
    units
        Hidden units per head.
    dropout
        Dropout on each head's hidden units (as the shared layer's).
    """

    def __init__(self, n_tfs: int, units: int, dropout: float, **kwargs) -> None:
        super().__init__(**kwargs)
        self.n_tfs = n_tfs
        self.units = units
        # One matrix for every head: a (batch, in) @ (in, n_tfs * units) product,
        # then each row keeps its own TF's units.
        self.hidden = keras.layers.Dense(n_tfs * units, activation="relu", name="hidden")
        self.drop = keras.layers.Dropout(dropout)

    def build(self, input_shape) -> None:
        self.hidden.build(input_shape)
        self.out_weights = self.add_weight(name="out_weights", shape=(self.n_tfs, self.units), initializer="zeros")
        self.out_bias = self.add_weight(name="out_bias", shape=(self.n_tfs,), initializer="zeros")

    def call(self, features: tf.Tensor, tf_index: tf.Tensor, training: bool = False) -> tf.Tensor:
        """The heads' logits, one per row: ``(batch,)`` float32."""
        index = tf.cast(tf_index, tf.int32)
        every = tf.reshape(self.hidden(features), [-1, self.n_tfs, self.units])
        own = self.drop(tf.gather(every, index, axis=1, batch_dims=1), training=training)
        weights = tf.cast(tf.gather(self.out_weights, index), own.dtype)
        bias = tf.gather(self.out_bias, index)
        return tf.cast(tf.reduce_sum(own * weights, axis=-1), tf.float32) + tf.cast(bias, tf.float32)
