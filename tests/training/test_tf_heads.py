"""Each TF's own head (tf_models.tf_heads): zero until trained, trained only by its own TF's rows, and read by
the motif_cnn model only when asked."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from tf_models.tf_heads import TFHeads

FEATURES = 6


def _rows(n: int, seed: int = 0) -> tf.Tensor:
    return tf.constant(np.random.default_rng(seed).normal(size=(n, FEATURES)).astype("float32"))


def test_every_head_starts_at_zero():
    heads = TFHeads(n_tfs=3, units=4, dropout=0.0)
    assert heads(_rows(5), tf.constant([0, 1, 2, 1, 0])).numpy().tolist() == [0.0] * 5


def test_a_tf_without_rows_keeps_its_head_at_zero_while_the_others_learn():
    heads = TFHeads(n_tfs=3, units=4, dropout=0.0)
    optimizer = tf.keras.optimizers.Adam(0.05)
    rows, index = _rows(64, seed=1), tf.constant([0, 1] * 32)  # TF 2 never appears
    target = tf.where(index == 0, 2.0, -2.0)
    for _ in range(30):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((heads(rows, index, training=True) - target) ** 2)
        optimizer.apply_gradients(zip(tape.gradient(loss, heads.trainable_weights), heads.trainable_weights))
    learnt = heads(rows, index).numpy()
    assert learnt[index.numpy() == 0].mean() > 1.0 and learnt[index.numpy() == 1].mean() < -1.0
    assert heads(rows, tf.fill([64], 2)).numpy().tolist() == [0.0] * 64
    assert float(heads.out_bias[2]) == 0.0 and not heads.out_weights.numpy()[2].any()
