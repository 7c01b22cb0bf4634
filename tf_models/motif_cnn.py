"""A learned motif scanner over the bin, chosen by the TF's protein (``architecture: motif_cnn``).

What decides a DREAM label is whether the TF binds inside the 200 bp bin,
so the model weighs each motif match by where it lies: one layer of
motif-width filters scans the whole window on both strands with the same
weights, a learned weight per 10 bp (``motif_cnn.positional_bp``, symmetric
about the centre) scales the matches, and each filter keeps its best
weighted match. The weights start at ~1 over the bin and a 50 bp margin
(``dna_center_bp``) and ~0 beyond, the scan that worked on the demo (a
motif in the flanks makes the neighbouring bins bound, and FOXA's short
motif recurs by chance there: an unweighted whole-window scan cut the demo's
mean test auPRC from 0.67 to 0.31); training then moves them, so data whose
label is about a whole window can learn to look at all of it.
``positional_bp: null`` restores the unweighted scan of ``dna_center_bp``.
``scales_bp`` instead keeps each filter's best match in several widths
centred on the bin (100 bp to the whole window), side by side, as the
gradient-boosted baseline reads motifs: on a tuning seed its maxima beyond
200 bp were worth 0.06-0.10 auPRC to it (``bench/boosted_ablation.py``).
``summit_ring_bp`` adds each filter's best match where the cell's DNase
summit lies (:mod:`tf_models.summit_ring`), ``expression_products`` each
filter's best match times each gene's expression in the row's cell
(:mod:`tf_models.expression_products`), and the model's ``summit_classes_bp``
the DNase input as classes of the summit's distance
(:mod:`tf_models.summit_classes`).

The TF's protein sequence picks the filters its DNA-binding domain reads:
a sigmoid gate per filter, computed from the protein branch (EasyFlow's
idea, so a TF of a known family can be scored without its own training
data). The gated matches, the protein features, the cell type and the
DNase input then feed one hidden layer.
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from tf_models.encoding import reverse_complement
from tf_models.expression_products import match_expression_products
from tf_models.layers import protein_branch
from tf_models.summit_classes import summit_classes
from tf_models.summit_ring import SummitRing
from tfbs.config import ModelConfig


def scanned_region(window: int, center_bp: int | None, kernel: int) -> tuple[int, int]:
    """``(first, length)`` of the window slice the filters scan.

    Motif matches are counted when they lie fully inside the central
    ``center_bp`` (the whole window when ``None``).

    Examples
    --------
    >>> scanned_region(1000, 300, 15)
    (350, 300)
    >>> scanned_region(1000, None, 15)
    (0, 1000)
    """
    length = min(window, center_bp or window)
    if length < kernel:
        raise ValueError(f"the scanned region ({length} bp) is shorter than a filter ({kernel} bp)")
    return (window - length) // 2, length


class PositionalWeights(keras.layers.Layer):
    """A learned weight in (0, 1) per position of a motif map, shared by the filters.

    The weights are a sigmoid of one logit per ``resolution`` bp, symmetric
    about the window's centre, so a window and its reverse complement keep
    the same score. They start near 1 over the central ``focus`` bp and near
    0 elsewhere (the bin and its margin, as the unweighted scan counts), and
    training moves them where the labels say a motif matters.

    Parameters
    ----------
    length
        Positions of the maps (the window less the filter width, plus one).
    resolution
        Bases per learned logit.
    focus
        Bases of the window's centre starting at weight ~1 (None: all of it).
    window
        The window's length.
    """

    def __init__(self, length: int, resolution: int, focus: int | None, window: int, **kwargs) -> None:
        super().__init__(**kwargs)
        # Map index i and length - 1 - i (a motif and its reverse complement) share a logit.
        edge = np.minimum(np.arange(length), length - 1 - np.arange(length))
        self.bucket = (edge // resolution).astype("int32")
        n_buckets = int(self.bucket.max()) + 1
        kernel = window - length + 1
        # A bucket starts inside when its middle match lies fully within the central ``focus`` bp.
        middle = np.minimum((np.arange(n_buckets) + 0.5) * resolution, (length - 1) / 2)
        inside = np.abs(middle + kernel / 2 - window / 2) <= ((focus or window) - kernel) / 2 + resolution / 2
        self.initial = np.where(inside, 3.0, -3.0).astype("float32")

    def build(self, input_shape) -> None:
        self.logits = self.add_weight(
            name="logits",
            shape=(self.initial.shape[0],),
            initializer=keras.initializers.Constant(self.initial),
            trainable=True,
        )

    def call(self, maps: tf.Tensor) -> tf.Tensor:
        weights = tf.gather(tf.sigmoid(self.logits), self.bucket)
        return maps * tf.cast(weights, maps.dtype)[None, :, None]


def motif_seeds(log_odds: list[np.ndarray], kernel: int) -> tuple[np.ndarray, np.ndarray]:
    """Conv1D weights that start filters as known motifs: ``(kernel, 4, k)`` and biases ``(k,)``.

    A motif longer than the filter keeps its most informative ``kernel``
    columns; a shorter one is centred between zero columns. Each is scaled
    so that its best match gives 1 after the ReLU and half its best score 0,
    the size of a learned filter's matches.

    Parameters
    ----------
    log_odds
        One ``(w, 4)`` log-odds matrix per motif.
    kernel
        The filter width.

    Examples
    --------
    >>> weights, biases = motif_seeds([np.log(np.full((4, 4), 0.1) + np.eye(4) * 0.6) + np.log(4)], kernel=6)
    >>> weights.shape, biases.tolist()
    ((6, 4, 1), [-1.0])
    >>> float(weights[1:5, :, 0].max(axis=1).sum() + biases[0])  # the best match
    1.0
    """
    weights = np.zeros((kernel, 4, len(log_odds)), dtype=np.float32)
    for index, matrix in enumerate(log_odds):
        if matrix.shape[0] > kernel:
            information = np.convolve(matrix.max(axis=1), np.ones(kernel), mode="valid")
            first = int(np.argmax(information))
            matrix = matrix[first : first + kernel]
        offset = (kernel - matrix.shape[0]) // 2
        weights[offset : offset + matrix.shape[0], :, index] = 2.0 * matrix / matrix.max(axis=1).sum()
    return weights, np.full(len(log_odds), -1.0, dtype=np.float32)


def scale_slices(window: int, scales_bp: list[int], kernel: int) -> tuple[int, int, list[tuple[int, int]]]:
    """The scanned region of the widest of ``scales_bp`` and, per width, the slice of its maps inside it.

    Returns ``(first, length, [(map_first, map_length), ...])``: the window slice
    to scan, and for each width the map positions whose ``kernel``-bp matches lie in it.

    Examples
    --------
    >>> scale_slices(1000, [100, 1000], 15)
    (0, 1000, [(450, 86), (0, 986)])
    """
    first, length = scanned_region(window, scales_bp[-1], kernel)
    slices = []
    for width in scales_bp:
        inner_first, inner_length = scanned_region(window, width, kernel)
        slices.append((inner_first - first, inner_length - kernel + 1))
    return first, length, slices


def seed_filters(model: "MotifCNN", seeds: tuple[np.ndarray, np.ndarray]) -> None:
    """Overwrite the first filters of ``model`` with :func:`motif_seeds` (before training; checkpoints win)."""
    weights, biases = seeds
    kernel, bias = model.motifs.kernel, model.motifs.bias
    k = min(weights.shape[-1], kernel.shape[-1])
    kernel.assign(np.concatenate([weights[..., :k], np.asarray(kernel)[..., k:]], axis=-1))
    bias.assign(np.concatenate([biases[:k], np.asarray(bias)[k:]]))


class MotifCNN(keras.Model):
    """Predicts the logit of "bound" for (DNA window, TF protein, cell, DNase).

    Parameters
    ----------
    config
        Shared hyper-parameters; ``config.motif_cnn`` sizes the filters.
    n_cells
        Number of cell types (size of the cell one-hot).
    window
        Length of the DNA windows the model is given.
    cell_features
        ``(n_cells, k)`` log2(1 + TPM) by ``cell_index`` (``config.use_expression``), or None.

    Notes
    -----
    ``call`` takes the input dict of :data:`tf_models.model.TFBSModel`; the output
    is the same for a window and its reverse complement.
    """

    def __init__(
        self,
        config: ModelConfig,
        n_cells: int,
        window: int,
        cell_features: np.ndarray | None = None,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.config = config
        self.n_cells = n_cells
        # A constant of the model, saved with its export: a row per cell_index, expression scaled to about [0, 1].
        self.cell_features = None if cell_features is None else tf.constant(cell_features / 10.0, tf.float32)
        scan = config.motif_cnn
        self.positions = None
        #: Per width of ``scales_bp``, the slice of the motif maps whose matches lie inside it.
        self.scale_slices: list[tuple[int, int]] = []
        if scan.scales_bp is not None:
            self.first, self.length, self.scale_slices = scale_slices(window, scan.scales_bp, scan.kernel)
        elif scan.positional_bp is None:
            self.first, self.length = scanned_region(window, config.dna_center_bp, scan.kernel)
        else:
            self.first, self.length = scanned_region(window, None, scan.kernel)
            self.positions = PositionalWeights(
                window - scan.kernel + 1, scan.positional_bp, config.dna_center_bp, window, name="positions"
            )
        #: Each filter's best match at the DNase summit's distance (``summit_ring_bp``), or None
        #: (also when the data has no DNase: training_run turns use_dnase off then).
        self.summit_ring = (
            None
            if scan.summit_ring_bp is None or not config.use_dnase
            else SummitRing(self.first, self.length, scan.kernel, window, scan.summit_ring_bp, name="summit_ring")
        )
        # Max commutes with ReLU: a linear map's best match is the ReLU map's wherever it clears the
        # threshold, and stays graded (a weak match above none) where the ReLU's is 0.
        activation = None if scan.match_activation == "linear" else "relu"
        self.motifs = keras.layers.Conv1D(scan.filters, scan.kernel, activation=activation, name="motifs")
        self.protein_tower, self.protein_reduce = protein_branch(config)
        self.protein_gate = (
            keras.layers.Dense(scan.filters, activation="sigmoid", name="protein_gate") if scan.protein_gate else None
        )
        # Each filter's best match is dropped now and then: no single motif
        # detector can carry an example alone, which is what let the model
        # memorise its training windows (validation auPRC peaked after two
        # epochs while the loss kept falling).
        self.match_dropout = keras.layers.Dropout(scan.match_dropout, name="match_dropout")
        self.dense = keras.layers.Dense(config.dense_units, activation="relu", name="dense")
        self.dropout = keras.layers.Dropout(config.dropout, name="dropout")
        # float32 whatever the policy, as in EasyFlowNet.
        self.logit = keras.layers.Dense(1, name="logit", dtype="float32")

    def _best_matches(self, maps: tf.Tensor) -> tf.Tensor:
        """Each filter's best match in the scanned region of one strand's maps: (batch, filters), or
        (batch, scales, filters) with ``scales_bp``, one best match per width."""
        if self.scale_slices:
            return tf.stack([tf.reduce_max(maps[:, a : a + n], axis=1) for a, n in self.scale_slices], axis=1)
        if self.positions is not None:
            maps = self.positions(maps)
        return tf.reduce_max(maps, axis=1)

    def call(self, inputs: dict[str, tf.Tensor], training: bool = False) -> tf.Tensor:
        dna = tf.cast(inputs["dna"][:, self.first : self.first + self.length], self.compute_dtype)
        strands = [self.motifs(dna), self.motifs(reverse_complement(dna))]
        matches = tf.maximum(*(self._best_matches(maps) for maps in strands))
        at_summit = []
        if self.summit_ring is not None:
            (forward, flag), (reverse, _) = (self.summit_ring(maps, inputs["dnase"]) for maps in strands)
            at_summit = [tf.maximum(forward, reverse), flag]
        per_protein = self.protein_reduce(self.protein_tower(inputs["proteins"], training=training))
        protein = tf.gather(per_protein, tf.cast(inputs["tf_index"], tf.int32))
        matches = self.match_dropout(matches, training=training)
        if at_summit:
            at_summit[0] = self.match_dropout(at_summit[0], training=training)
        if self.protein_gate is not None:
            gate = self.protein_gate(protein)
            matches = matches * (gate[:, None, :] if self.scale_slices else gate)
            if at_summit:
                at_summit[0] = at_summit[0] * gate
        expression = None
        if self.cell_features is not None:
            expression = tf.gather(self.cell_features, tf.cast(inputs["cell_index"], tf.int32))
        products = []
        if expression is not None and self.config.motif_cnn.expression_products:
            products = [match_expression_products(matches, expression)]
        if self.scale_slices:
            matches = tf.reshape(matches, [-1, len(self.scale_slices) * self.motifs.filters])
        parts = [matches, *at_summit, *products, protein]
        if self.config.use_cell_type:
            parts.append(tf.one_hot(tf.cast(inputs["cell_index"], tf.int32), self.n_cells))
        if self.config.use_dnase:
            parts.append(tf.cast(inputs["dnase"], tf.float32)[:, None])
            if self.config.summit_classes_bp is not None:
                parts.append(summit_classes(inputs["dnase"], self.config.summit_classes_bp))
        if expression is not None:
            parts.append(expression)
        parts = [tf.cast(part, matches.dtype) for part in parts]
        hidden = self.dropout(self.dense(tf.concat(parts, axis=-1)), training=training)
        return tf.squeeze(self.logit(hidden), axis=-1)
