"""A FactorNet-style TFBS model with the amino-acid branch (``architecture: factornet``).

After Quang & Xie's FactorNet (Methods 166, 2019), the strongest
ENCODE-DREAM entries' design: wide first-layer filters (26 bp, the size of
a long motif), a max-pool of 13, and a bidirectional LSTM over the pooled
positions. The same DNA weights read the window and its reverse complement
and the two feature vectors are combined by an element-wise max, so the
prediction does not depend on which strand the window was cut from, and a
motif learned on one strand is found on the other without a second filter.

What is added for this pipeline, as in :class:`tf_models.model.EasyFlowNet`:
the TF's protein branch (the same convolutions, run once per distinct TF and
gathered per example), the DNase overlap and the cell type (here a learned
embedding). The protein also gates the DNA features channel by channel, so
each TF can select the motif detectors it binds through, rather than
leaving that interaction to the dense layer alone.
"""

from __future__ import annotations

import keras
import tensorflow as tf

from tf_models.encoding import reverse_complement
from tf_models.layers import center_crop, protein_branch
from tfbs.config import FactorNetConfig, ModelConfig

#: FactorNet's dropout after the convolution (its other dropouts are the
#: configurable ``ModelConfig.dropout``).
_MOTIF_DROPOUT = 0.1


class _SelfAttention(keras.layers.Layer):
    """One self-attention block over positions: ``norm(x + attention(x, x))``.

    The residual keeps the convolution's motif channels, so the block only
    adds context from other positions.
    """

    def __init__(self, heads: int, key_dim: int, **kwargs) -> None:
        super().__init__(**kwargs)
        self.attention = keras.layers.MultiHeadAttention(heads, key_dim, name="attention")
        self.norm = keras.layers.LayerNormalization(name="norm")

    def call(self, maps: tf.Tensor, training: bool = False) -> tf.Tensor:
        return self.norm(maps + self.attention(maps, maps, training=training))


def _sequence_layer(config: FactorNetConfig) -> tuple[keras.layers.Layer, int]:
    """The layer over pooled positions and the width of its output."""
    if config.sequence_layer == "bilstm":
        lstm = keras.layers.LSTM(config.units, return_sequences=True, name="lstm")
        return keras.layers.Bidirectional(lstm, name="bilstm"), 2 * config.units
    return _SelfAttention(config.attention_heads, config.units, name="self_attention"), config.filters


class FactorNet(keras.Model):
    """Predicts the logit of "bound" for (DNA window, TF protein, cell, DNase), strand-invariant.

    Parameters
    ----------
    config
        Architecture hyper-parameters; ``config.factornet`` sizes the DNA
        branch, the other keys are shared with the other architectures.
    n_cells
        Number of cell types (rows of the cell embedding).

    Notes
    -----
    ``call`` takes the same input dict as every :data:`tf_models.model.TFBSModel`:
    ``dna`` (batch, window, 4) one-hot ACGT, ``proteins`` (n_proteins,
    length, 21), ``tf_index`` (batch,) into ``proteins``, ``cell_index``
    (batch,) and ``dnase`` (batch,); it returns float32 logits (batch,).
    """

    def __init__(self, config: ModelConfig, n_cells: int, **kwargs) -> None:
        super().__init__(**kwargs)
        self.config = config
        self.n_cells = n_cells
        fn = config.factornet
        # "valid" as FactorNet: a motif detector fires only on whole windows of sequence.
        self.motif_conv = keras.layers.Conv1D(fn.filters, fn.kernel, activation="relu", name="motif_conv")
        self.motif_pool = keras.layers.MaxPooling1D(fn.pool_size, name="motif_pool")
        self.motif_dropout = keras.layers.Dropout(_MOTIF_DROPOUT, name="motif_dropout")
        self.sequence, dna_width = _sequence_layer(fn)
        self.sequence_dropout = keras.layers.Dropout(config.dropout, name="sequence_dropout")
        self.dna_reduce = keras.layers.GlobalMaxPooling1D(name="dna_reduce")
        self.protein_tower, self.protein_reduce = protein_branch(config)
        self.protein_gate = keras.layers.Dense(dna_width, activation="sigmoid", name="protein_gate")
        self.cell_embedding = (
            keras.layers.Embedding(n_cells, fn.cell_embedding_dim, name="cell_embedding")
            if config.use_cell_type
            else None
        )
        self.dense = keras.layers.Dense(config.dense_units, activation="relu", name="dense")
        self.dropout = keras.layers.Dropout(config.dropout, name="dropout")
        # float32 whatever the policy, as in EasyFlowNet: a float16 logit would
        # be rounded (and overflow past 65504) before the loss.
        self.logit = keras.layers.Dense(1, name="logit", dtype="float32")

    def _strand_features(self, dna: tf.Tensor, training: bool) -> tf.Tensor:
        """DNA features (batch, width) of one strand, reduced near the bin."""
        maps = self.motif_dropout(self.motif_pool(self.motif_conv(dna)), training=training)
        maps = self.sequence_dropout(self.sequence(maps, training=training), training=training)
        return self.dna_reduce(center_crop(maps, self.config.dna_center_bp, dna.shape[1]))

    def call(self, inputs: dict[str, tf.Tensor], training: bool = False) -> tf.Tensor:
        dna = tf.cast(inputs["dna"], self.compute_dtype)
        batch = tf.shape(dna)[0]
        # Both strands through the same layers in one pass (twice the batch,
        # one set of kernels); the max of the two is symmetric in the
        # strands, hence invariant to reverse-complementing the input.
        both = self._strand_features(tf.concat([dna, reverse_complement(dna)], axis=0), training)
        dna_features = tf.maximum(both[:batch], both[batch:])

        per_protein = self.protein_reduce(self.protein_tower(inputs["proteins"], training=training))
        protein = tf.gather(per_protein, tf.cast(inputs["tf_index"], tf.int32))
        parts = [dna_features * self.protein_gate(protein), protein]
        if self.cell_embedding is not None:
            parts.append(self.cell_embedding(tf.cast(inputs["cell_index"], tf.int32)))
        if self.config.use_dnase:
            parts.append(tf.cast(inputs["dnase"], tf.float32)[:, None])
        # One dtype for concat: under mixed_float16 the branches are float16, DNase float32.
        parts = [tf.cast(part, dna_features.dtype) for part in parts]
        hidden = self.dropout(self.dense(tf.concat(parts, axis=-1)), training=training)
        return tf.squeeze(self.logit(hidden), axis=-1)
