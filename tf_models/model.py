"""The TFBS CNN with an amino-acid branch (EasyFlow's ``TFBS_AA_CNN_MODEL``).

Two convolutional branches, one over the DNA window and one over the TF's
protein sequence, are joined with the cell type and the DNase overlap and
fed to a dense layer. EasyFlow's bugs are not carried over: the output is a
plain logit (no ReLU, one sigmoid in the loss), and the protein branch runs
once per distinct TF in the batch, then is gathered per example, which gives
the same result as running it per example at a fraction of the cost.
"""

from __future__ import annotations

from typing import TypeAlias

import keras
import numpy as np
import tensorflow as tf

from tf_models.layers import center_crop, conv_tower, protein_branch
from tfbs.config import ModelConfig

#: Any architecture :func:`build_model` returns (``easyflow``:
#: :class:`EasyFlowNet`, ``motif_cnn``, ``factornet``). All take one input dict,
#: ``dna`` (batch, window, 4), ``proteins`` (n_proteins, length, 21),
#: ``tf_index`` (batch,) into ``proteins``, ``cell_index`` (batch,) and
#: ``dnase`` (batch,), and return one float32 logit per example.
TFBSModel: TypeAlias = keras.Model


class EasyFlowNet(keras.Model):
    """Predicts the logit of "bound" for (DNA window, TF protein, cell, DNase).

    Parameters
    ----------
    config
        Architecture hyper-parameters.
    n_cells
        Number of cell types (size of the cell one-hot).

    Notes
    -----
    ``call`` takes a dict with ``dna`` (batch, window, 4), ``proteins``
    (n_proteins, length, 21), ``tf_index`` (batch,) into ``proteins``,
    ``cell_index`` (batch,) and ``dnase`` (batch,).
    """

    def __init__(self, config: ModelConfig, n_cells: int, **kwargs) -> None:
        super().__init__(**kwargs)
        self.config = config
        self.n_cells = n_cells
        easyflow = config.easyflow
        self.dna_tower = conv_tower(easyflow.dna_filters, easyflow.dna_kernel, easyflow.dna_pool_size, "dna")
        self.protein_tower, self.protein_reduce = protein_branch(config, easyflow.pool)
        reduce = keras.layers.GlobalMaxPooling1D if easyflow.pool == "global_max" else keras.layers.Flatten
        self.dna_reduce = reduce(name="dna_reduce")
        self.dna_center_bp = config.dna_center_bp
        self.dense = keras.layers.Dense(config.dense_units, activation="relu", name="dense")
        self.dropout = keras.layers.Dropout(config.dropout, name="dropout")
        # float32 whatever the policy: under mixed_float16 a float16 logit
        # would be rounded (and overflow past 65504) before the loss; keras'
        # mixed precision guide keeps the output layer in float32.
        self.logit = keras.layers.Dense(1, name="logit", dtype="float32")

    def call(self, inputs: dict[str, tf.Tensor], training: bool = False) -> tf.Tensor:
        dna_maps = self.dna_tower(inputs["dna"], training=training)
        dna = self.dna_reduce(center_crop(dna_maps, self.dna_center_bp, inputs["dna"].shape[1]))
        per_protein = self.protein_reduce(self.protein_tower(inputs["proteins"], training=training))
        parts = [dna, tf.gather(per_protein, tf.cast(inputs["tf_index"], tf.int32))]
        if self.config.use_cell_type:
            parts.append(tf.one_hot(tf.cast(inputs["cell_index"], tf.int32), self.n_cells))
        if self.config.use_dnase:
            parts.append(tf.cast(inputs["dnase"], tf.float32)[:, None])
        # One dtype for concat: under mixed_float16 the branches are float16
        # while the cell one-hot and DNase are float32.
        parts = [tf.cast(part, dna.dtype) for part in parts]
        hidden = self.dropout(self.dense(tf.concat(parts, axis=-1)), training=training)
        return tf.squeeze(self.logit(hidden), axis=-1)


def build_model(
    config: ModelConfig,
    n_cells: int,
    window: int,
    mixed_precision: bool = False,
    cell_features: np.ndarray | None = None,
) -> TFBSModel:
    """Create the model of ``config.architecture`` and its variables (called inside a strategy scope).

    Every architecture takes the same input dict (:data:`TFBSModel`) and
    returns one float32 logit per example, so training, export and
    evaluation do not depend on the choice.

    With ``mixed_precision`` the layers compute in float16 and keep float32
    variables; the logit layer stays float32 (:func:`tf_models.gpus.mixed_precision_policy`).
    ``cell_features``: ``(n_cells, k)`` by ``cell_index``, which ``config.use_expression``
    feeds (``motif_cnn`` only; :func:`tf_models.node_inputs.cell_expression_table`).

    Raises
    ------
    ValueError
        If ``config.use_expression`` and ``cell_features`` disagree.
    """
    if config.use_expression != (cell_features is not None):
        raise ValueError("train.model.use_expression needs the cells' expression table, and only it gives one")
    from tf_models.gpus import mixed_precision_policy

    with mixed_precision_policy(mixed_precision):
        # Imported here: both import this module's shared branches.
        if config.architecture == "motif_cnn":
            from tf_models.motif_cnn import MotifCNN

            model = MotifCNN(config, n_cells, window, cell_features=cell_features)
        elif config.architecture == "factornet":
            from tf_models.factornet import FactorNet

            model = FactorNet(config, n_cells)
        else:
            model = EasyFlowNet(config, n_cells)
    model(
        {
            "dna": tf.zeros([1, window, 4]),
            "proteins": tf.zeros([1, config.aa_max_length, 21]),
            "tf_index": tf.zeros([1], tf.int32),
            "cell_index": tf.zeros([1], tf.int32),
            "dnase": tf.zeros([1]),
        }
    )
    return model
