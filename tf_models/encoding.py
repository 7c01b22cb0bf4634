"""Graph-native encodings: DNA bytes and protein indices to one-hot.

One-hot tensors are made inside the TensorFlow graph from the stored bytes
(1 byte per base) and are never written to disk.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from tfbs.proteins import AA_CHANNELS, AMINO_ACIDS

DNA_CHANNELS = 4


def _byte_lookup(alphabet: str, other: int, lower: bool = True) -> tf.Tensor:
    table = np.full(256, other, dtype=np.int32)
    for index, letter in enumerate(alphabet):
        table[ord(letter)] = index
        if lower:
            table[ord(letter.lower())] = index
    return tf.constant(table)


def dna_indices(sequence_bytes: tf.Tensor) -> tf.Tensor:
    """Map DNA bytes to ``uint8`` channel indices: A, C, G, T -> 0..3, else 4."""
    table = tf.cast(_byte_lookup("ACGT", other=DNA_CHANNELS), tf.uint8)
    return tf.gather(table, tf.cast(sequence_bytes, tf.int32))


def reverse_complement_indices(indices: tf.Tensor) -> tf.Tensor:
    """Reverse-complement channel indices (batch, length); N stays N.

    A byte per base instead of four floats: augmenting before the one-hot
    moves a quarter of the data.
    """
    complement = tf.where(indices < DNA_CHANNELS, DNA_CHANNELS - 1 - indices, indices)
    return tf.reverse(complement, axis=[1])


def dna_one_hot(sequence_bytes: tf.Tensor) -> tf.Tensor:
    """One-hot encode DNA bytes.

    Parameters
    ----------
    sequence_bytes
        ``uint8`` tensor (batch, length) of ASCII bases.

    Returns
    -------
    tf.Tensor
        ``float32`` (batch, length, 4) in A, C, G, T order; N and any other
        byte give an all-zero row.
    """
    # Index 4 is out of range for depth 4, which tf.one_hot maps to zeros.
    return tf.one_hot(dna_indices(sequence_bytes), DNA_CHANNELS, dtype=tf.float32)


def reverse_complement(one_hot: tf.Tensor) -> tf.Tensor:
    """Reverse-complement one-hot DNA (batch, length, ACGT).

    Reversing the channel axis maps A<->T and C<->G because of the ACGT order.
    """
    return tf.reverse(one_hot, axis=[1, 2])


def protein_one_hot(indices: tf.Tensor) -> tf.Tensor:
    """One-hot encode protein index tables from :func:`tfbs.proteins.protein_table`.

    Padding (-1) becomes an all-zero row.
    """
    return tf.one_hot(tf.cast(indices, tf.int32), AA_CHANNELS, dtype=tf.float32)


def protein_bytes_to_indices(protein_bytes: tf.Tensor) -> tf.Tensor:
    """Map ASCII protein bytes (0 = padding) to the fixed alphabet's indices."""
    table = _byte_lookup(AMINO_ACIDS, other=len(AMINO_ACIDS), lower=True)
    table = tf.tensor_scatter_nd_update(table, [[0]], [-1])
    return tf.gather(table, tf.cast(protein_bytes, tf.int32))
