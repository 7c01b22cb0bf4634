"""Layers every architecture shares: convolution towers, the protein branch, the central crop."""

from __future__ import annotations

import keras
import tensorflow as tf

from tfbs.config import ModelConfig


def conv_tower(filters: list[int], kernel: int, pool_size: int, name: str) -> keras.Sequential:
    """Convolutions with one max-pool before the last (EasyFlow's layout, pool 2)."""
    layers: list[keras.layers.Layer] = []
    for index, width in enumerate(filters):
        if index == len(filters) - 1 and len(filters) > 1:
            layers.append(keras.layers.MaxPooling1D(pool_size, name=f"{name}_pool"))
        layers.append(keras.layers.Conv1D(width, kernel, padding="same", activation="relu", name=f"{name}_conv{index}"))
    return keras.Sequential(layers, name=name)


def protein_branch(config: ModelConfig, pool: str = "global_max") -> tuple[keras.Sequential, keras.layers.Layer]:
    """The amino-acid convolutions and their reduction, shared by every architecture.

    Returns
    -------
    tuple
        The convolution tower over (n_proteins, length, 21) and the layer
        reducing its maps to one vector per protein (``pool``: a max over
        positions, or EasyFlow's flatten).
    """
    reduce = keras.layers.GlobalMaxPooling1D if pool == "global_max" else keras.layers.Flatten
    tower = conv_tower(config.aa_filters, config.aa_kernel, config.aa_pool_size, "protein")
    return tower, reduce(name="protein_reduce")


def center_crop(maps: tf.Tensor, center_bp: int | None, window: int) -> tf.Tensor:
    """Keep the positions of ``maps`` (batch, length, channels) covering the central ``center_bp`` of the window.

    Flanking bins see the same motif elsewhere in their window and are
    labelled unbound, so features far from the bin mislead. The window is
    fixed, so the shapes stay static (Flatten needs that).
    """
    if not center_bp:
        return maps
    length = maps.shape[1]
    keep = max(1, length * center_bp // window)
    return maps[:, (length - keep) // 2 : (length - keep) // 2 + keep]
