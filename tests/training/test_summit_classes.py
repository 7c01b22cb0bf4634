"""The DNase input as classes of the summit's distance (tf_models.summit_classes): a class for no peak, one per
distance band, right after the records' rounding; the model reads the classes only when asked."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from conftest import DEMO_CONFIG, SUITE_MODEL

from tf_models.summit_classes import summit_classes
from tfbs.config import load_config
from tfbs.errors import ConfigError
from tfbs.formats.annotate import SUMMIT_REACH_BP

EDGES = [25, 50, 100, 200]


def _proximity(distance_bp: float) -> float:
    """The DNase input of a bin whose centre lies ``distance_bp`` from the summit, as the records keep it (1/255)."""
    return np.round((1.0 - min(distance_bp, SUMMIT_REACH_BP) / (2 * SUMMIT_REACH_BP)) * 255) / 255


def test_each_row_falls_in_its_distance_band_and_a_bin_in_no_peak_in_its_own_class():
    distances = [0, 20, 30, 60, 95, 105, 195, 205, 450, 800]  # each 3 bp or more from an edge: the records keep ~2 bp
    dnase = tf.constant([0.0] + [_proximity(d) for d in distances], tf.float32)
    classes = summit_classes(dnase, EDGES).numpy()
    assert classes.sum(axis=1).tolist() == [1.0] * 11  # one class each
    # class 0: no peak; 1: under 25 bp; 2: 25-50; 3: 50-100; 4: 100-200; 5: 200 bp or more
    assert classes.argmax(axis=1).tolist() == [0, 1, 1, 2, 3, 3, 4, 4, 5, 5, 5]


def _model_config(*extra: str):
    return load_config(DEMO_CONFIG, [*SUITE_MODEL, "train.model.motif_cnn.filters=4", *extra]).train.model


def test_the_model_reads_one_weight_per_class():
    """With every dense weight 0 but the classes', the logit moves with the summit's band and nothing else."""
    from tf_models.model import build_model

    config = _model_config(f"train.model.summit_classes_bp={EDGES}")  # SUITE_MODEL: no expression inputs
    window = 400
    tf.random.set_seed(0)
    model = build_model(config, 2, window)
    kernel = np.zeros(model.dense.kernel.shape, np.float32)
    n_classes = len(EDGES) + 2
    kernel[-n_classes:, 0] = np.arange(n_classes)  # the classes are the last inputs (no expression here)
    model.dense.kernel.assign(kernel)
    model.dense.bias.assign(np.zeros(model.dense.bias.shape, np.float32))
    rng = np.random.default_rng(0)
    dnase = [0.0, _proximity(10), _proximity(40), _proximity(80), _proximity(150), _proximity(300)]
    inputs = {
        "dna": tf.one_hot(rng.integers(0, 4, [6, window]), 4),
        "proteins": tf.one_hot(rng.integers(0, 21, [1, config.aa_max_length]), 21),
        "tf_index": tf.zeros([6], tf.int32),
        "cell_index": tf.zeros([6], tf.int32),
        "dnase": tf.constant(dnase, tf.float32),
    }
    logits = model(inputs).numpy()
    # The output is a linear function of the first hidden unit (ReLU of the class index); 5 distinct classes in order.
    hidden = np.arange(n_classes, dtype=np.float32)
    slope = (logits[1] - logits[0]) / (hidden[1] - hidden[0])
    np.testing.assert_allclose(logits, logits[0] + slope * hidden, rtol=1e-4, atol=1e-5)
    assert abs(slope) > 1e-4


def test_the_classes_need_the_dnase_input_increasing_edges_and_motif_cnn():
    with pytest.raises(ConfigError, match="summit_classes_bp: read by the motif_cnn architecture"):
        _model_config("train.model.summit_classes_bp=[50]", "train.model.use_dnase=false")
    with pytest.raises(ConfigError, match="summit_classes_bp: read by the motif_cnn architecture"):
        _model_config("train.model.summit_classes_bp=[50]", "train.model.architecture=easyflow")
    with pytest.raises(ConfigError, match=r"summit_classes_bp must be positive and increase: \[100, 50\]"):
        _model_config("train.model.summit_classes_bp=[100, 50]")
