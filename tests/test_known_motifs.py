"""``train.model.motif_cnn.known_motifs``: the network reads the gradient-boosted baseline's motif features.

The frozen filters' best matches, computed in the model's graph from the
window, must be the very features the baseline computes from the genome
(``tf_models.motif_features``), so the network starts from what the
winners' method reads.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from conftest import DEMO_CONFIG

from tf_models.encoding import dna_one_hot, reverse_complement
from tf_models.model import build_model
from tf_models.motif_cnn import KNOWN_MATCH_SCALE
from tf_models.motif_features import WIDTHS, bin_features, block_maxima
from tf_models.node_inputs import known_motif_filters
from tfbs.config import load_config
from tfbs.errors import ConfigError
from tfbs.motifs import log_odds, read_meme

ON = ["train.model.motif_cnn.known_motifs=true"]


def test_the_frozen_filters_read_the_baselines_features_of_the_bin():
    config = load_config(DEMO_CONFIG, ON)
    filters = known_motif_filters(config)
    named = {**config.evaluate.motifs, **config.evaluate.partner_motifs}
    assert filters.shape[1:] == (4, len(named))
    model = build_model(config.train.model, 3, 1000, known_motifs=filters)
    assert not any("known" in weight.name for weight in model.trainable_weights)

    rng = np.random.default_rng(3)
    window = rng.choice(np.frombuffer(b"ACGT", np.uint8), 1000)
    # A CTCF site in the bin (400-600), a FOXA1 site 300 bp off it: the widths must tell them apart.
    matrices = read_meme(config.evaluate.motif_db)
    for motif, at in (("CTCF_f2", 480), ("FOXA1_f1", 180)):
        consensus = np.frombuffer(b"ACGT", np.uint8)[matrices[motif].argmax(axis=1)]
        window[at : at + consensus.shape[0]] = consensus
    dna = dna_one_hot(tf.constant(window[None, :]))

    ours = model._known_matches(dna).numpy().reshape(len(WIDTHS), len(named)) * KNOWN_MATCH_SCALE
    # The baseline's: the window as a chromosome, the bin at 400.
    from tf_models.baselines import GENOME_BACKGROUND

    scores = [log_odds(matrices[motif], GENOME_BACKGROUND) for motif in named.values()]
    theirs = bin_features(block_maxima(window, scores), np.array([400]))[0].reshape(len(WIDTHS), len(named))
    # Every width inside the window's last filter width: the same maxima.
    np.testing.assert_allclose(ours[:-1], theirs[:-1], rtol=1e-4, atol=1e-3)
    assert np.all(ours[-1] <= theirs[-1] + 1e-3)
    ctcf, foxa1 = list(named).index("CTCF"), list(named).index("FOXA1")
    assert ours[0, ctcf] == pytest.approx(ours[-1, ctcf]) and ours[0, ctcf] > 10
    assert ours[-1, foxa1] > ours[0, foxa1] + 5  # beyond the bin only

    # Either strand alike.
    again = model._known_matches(reverse_complement(dna)).numpy().reshape(len(WIDTHS), len(named))
    np.testing.assert_allclose(again * KNOWN_MATCH_SCALE, ours, rtol=1e-5, atol=1e-4)


def test_no_motif_configured_is_named():
    config = load_config(DEMO_CONFIG, ON)
    # Loading fills the motifs from the generator's; a configuration of one's own data may name none.
    bare = config.model_copy(
        update={"evaluate": config.evaluate.model_copy(update={"motifs": {}, "partner_motifs": {}})}
    )
    with pytest.raises(ConfigError, match="known_motifs: needs evaluate.motif_db and motifs"):
        known_motif_filters(bare)
    assert known_motif_filters(load_config(DEMO_CONFIG)) is None
