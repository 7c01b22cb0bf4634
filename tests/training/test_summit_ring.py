"""Each filter's best match at the DNase summit's distance (tf_models.summit_ring): the ring's positions, either
side of the bin's centre; nothing where the bin overlaps no peak; the model reading it only when asked."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from conftest import DEMO_CONFIG, SUITE_MODEL

from tf_models.summit_ring import SummitRing, summit_distance
from tfbs.config import load_config
from tfbs.errors import ConfigError
from tfbs.formats.annotate import SUMMIT_REACH_BP

WINDOW = 400
KERNEL = 10


def _proximity(distance_bp: float) -> float:
    """The DNase input of a bin whose centre lies ``distance_bp`` from the summit (annotate.peak_proximity)."""
    return 1.0 - min(distance_bp, SUMMIT_REACH_BP) / (2 * SUMMIT_REACH_BP)


def _maps_with(spikes: dict[tuple[int, int], float], rows: int, filters: int = 3) -> tf.Tensor:
    """Maps of a whole-window scan, 0 but at ``{(row, centre offset from the bin's centre): value}`` of filter 0."""
    maps = np.zeros((rows, WINDOW - KERNEL + 1, filters), np.float32)
    for (row, offset), value in spikes.items():
        maps[row, WINDOW // 2 + offset - KERNEL // 2, 0] = value  # the match centred at WINDOW/2 + offset
    return tf.constant(maps)


def test_the_distance_is_read_back_from_the_proximity():
    distances = np.array([0.0, 37.0, 120.0, 499.0])
    read = summit_distance(tf.constant([_proximity(d) for d in distances])).numpy()
    np.testing.assert_allclose(read, distances, atol=1e-3)


def test_the_ring_keeps_the_best_match_at_the_summit_s_distance_on_either_side():
    ring = SummitRing(0, WINDOW, KERNEL, WINDOW, reach_bp=20)
    spikes = {
        (0, 100): 5.0,  # at the summit's distance, right of the centre
        (0, 10): 9.0,  # stronger, but near the centre: out of the ring
        (1, -100): 4.0,  # the same distance, left: the side is unknown, both count
        (2, 100): 7.0,  # a bin in no peak: nothing counts
        (3, 150): 6.0,  # 50 bp beyond the ring's edge
    }
    dnase = tf.constant([_proximity(100), _proximity(100), 0.0, _proximity(100)])
    best, flag = ring(_maps_with(spikes, rows=4), dnase)
    assert best.numpy()[:, 0].tolist() == [5.0, 4.0, 0.0, 0.0]
    assert flag.numpy()[:, 0].tolist() == [1.0, 1.0, 0.0, 1.0]
    assert not best.numpy()[:, 1:].any()  # the other filters' maps are 0 everywhere


def test_a_ring_outside_the_scanned_region_holds_nothing():
    first, length = 150, 100  # the central 100 bp: positions 0-50 bp from the centre
    ring = SummitRing(first, length, KERNEL, WINDOW, reach_bp=10)
    maps = tf.ones((2, length - KERNEL + 1, 2))
    best, flag = ring(maps, tf.constant([_proximity(30), _proximity(200)]))
    assert flag.numpy()[:, 0].tolist() == [1.0, 0.0] and best.numpy().tolist() == [[1.0, 1.0], [0.0, 0.0]]


def test_the_ring_reads_dnase_so_it_needs_it():
    with pytest.raises(ConfigError, match="summit_ring_bp reads the DNase input"):
        load_config(DEMO_CONFIG, ["train.model.motif_cnn.summit_ring_bp=50", "train.model.use_dnase=false"])


def test_the_model_feeds_the_ring_to_its_dense_layer_only_when_asked():
    """Off by default; on, the dense layer reads one more value per filter and the flag, from the same scan."""
    from tf_models.model import build_model

    rng = np.random.default_rng(0)
    inputs = {
        "dna": tf.one_hot(rng.integers(0, 4, [4, WINDOW]), 4),
        "proteins": tf.one_hot(rng.integers(0, 21, [3, 40]), 21),
        "tf_index": tf.constant([0, 1, 2, 0]),
        "cell_index": tf.constant([0, 1, 0, 1]),
        "dnase": tf.constant([_proximity(d) for d in (0, 20, 120, 600)]),
    }
    tiny = [*SUITE_MODEL, "train.model.motif_cnn.filters=8", f"train.model.motif_cnn.kernel={KERNEL}",
            "train.model.aa_filters=[8]", "train.model.aa_max_length=40", "train.model.dense_units=16"]  # fmt: skip
    widths = {}
    for ring in ("null", "30"):
        model_config = load_config(DEMO_CONFIG, [*tiny, f"train.model.motif_cnn.summit_ring_bp={ring}"]).train.model
        model = build_model(model_config, 2, WINDOW)
        assert np.isfinite(model(inputs).numpy()).all()
        assert (model.summit_ring is None) == (ring == "null")
        widths[ring] = model.dense.kernel.shape[0]
    assert load_config(DEMO_CONFIG).train.model.motif_cnn.summit_ring_bp is None
    assert widths["30"] - widths["null"] == 8 + 1
