"""The model architectures (``train.model.architecture``): both take the same
inputs and give one logit per example; FactorNet is strand-invariant; both
gather the right protein, honour the DNase / cell switches, learn, export,
and (FactorNet) train under the cluster strategies.

Models are tiny and windows short so each test takes seconds on 2 cores.
Run as a script (``python tests/training/test_models.py STRATEGY ARCHITECTURE``) it
trains a few steps under that strategy: the strategy tests start it in a
subprocess, since a cluster strategy reconfigures TensorFlow's process-wide
context.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from conftest import DEMO_CONFIG, REPO, SEEDED, SUITE_MODEL, model_inputs, script_env

from tfbs.config import ModelConfig, load_config
from tfbs.errors import ConfigError

WINDOW = 200
N_CELLS = 3
TINY = [
    SEEDED,
    *SUITE_MODEL,
    "data.heldout_cells=[]",
    "train.model.easyflow.dna_filters=[8, 8]",
    "train.model.easyflow.dna_kernel=5",
    "train.model.easyflow.pool=global_max",
    "train.model.motif_cnn.filters=8",
    "train.model.motif_cnn.kernel=9",
    "train.model.aa_filters=[8]",
    "train.model.aa_kernel=5",
    "train.model.aa_max_length=40",
    "train.model.dense_units=16",
    "train.model.dna_center_bp=100",
    "train.model.factornet.filters=8",
    "train.model.factornet.units=8",
    "train.model.factornet.cell_embedding_dim=4",
]
ARCHITECTURES = {
    "motif_cnn": ["train.model.architecture=motif_cnn"],
    "motif_cnn-ungated": ["train.model.architecture=motif_cnn", "train.model.motif_cnn.protein_gate=false"],
    # The model's default, a learned weight per 10 bp over the whole window (the demo scans the centre only).
    "motif_cnn-positional": ["train.model.architecture=motif_cnn", "train.model.motif_cnn.positional_bp=10"],
    # Each filter's best match in 50, 100 and the whole 200 bp, side by side (as the boosted baseline reads motifs).
    "motif_cnn-scales": ["train.model.architecture=motif_cnn", "train.model.motif_cnn.scales_bp=[50, 100, 200]"],
    # Also each filter's best match at the DNase summit's distance from the bin's centre (tf_models.summit_ring).
    "motif_cnn-summit": ["train.model.architecture=motif_cnn", "train.model.motif_cnn.summit_ring_bp=30"],
    "easyflow": ["train.model.architecture=easyflow"],
    "factornet": ["train.model.architecture=factornet"],
    "factornet-attention": ["train.model.architecture=factornet", "train.model.factornet.sequence_layer=attention"],
}


def _model_config(name: str, *extra: str) -> ModelConfig:
    """The demo's model section, shrunk, for one architecture (through the YAML loader)."""
    return load_config(DEMO_CONFIG, [*TINY, *ARCHITECTURES[name], *extra]).train.model


def _build(name: str, *extra: str):
    from tf_models.model import build_model

    tf.random.set_seed(0)
    config = _model_config(name, *extra)
    return build_model(config, N_CELLS, WINDOW), config


def _inputs(config: ModelConfig, batch: int = 6, seed: int = 0) -> dict[str, tf.Tensor]:
    rng = np.random.default_rng(seed)
    proteins = np.zeros([3, config.aa_max_length, 21], np.float32)
    proteins[np.arange(3)[:, None], np.arange(config.aa_max_length), rng.integers(0, 21, [3, config.aa_max_length])] = 1
    return {
        "dna": tf.one_hot(rng.integers(0, 4, [batch, WINDOW]), 4),
        "proteins": tf.constant(proteins),
        "tf_index": tf.constant(np.arange(batch) % 3, tf.int32),
        "cell_index": tf.constant(np.arange(batch) % N_CELLS, tf.int32),
        "dnase": tf.constant(np.arange(batch) % 2, tf.float32),
    }


# --------------------------------------------------------------------------
# Configuration and shapes
# --------------------------------------------------------------------------


def test_architecture_is_chosen_in_config_and_checked():
    assert ModelConfig().architecture == "motif_cnn"
    assert ModelConfig().factornet.kernel == 26  # FactorNet's motif width
    with pytest.raises(ConfigError, match=r"train\.model\.architecture: "):
        load_config(DEMO_CONFIG, ["train.model.architecture=deepbind"])
    with pytest.raises(ConfigError, match=r"train\.model\.factornet\.sequence_layer: "):
        load_config(DEMO_CONFIG, ["train.model.factornet.sequence_layer=gru"])


@pytest.mark.parametrize("name", sorted(ARCHITECTURES))
def test_each_architecture_builds_and_gives_one_float32_logit_per_example(name):
    from tf_models.factornet import FactorNet
    from tf_models.model import EasyFlowNet
    from tf_models.motif_cnn import MotifCNN

    model, config = _build(name)
    expected = {"factornet": FactorNet, "easyflow": EasyFlowNet, "motif_cnn": MotifCNN}[name.split("-")[0]]
    assert isinstance(model, expected)
    logits = model(_inputs(config, batch=5))
    assert logits.shape == (5,) and logits.dtype == tf.float32
    assert np.isfinite(logits.numpy()).all()


def test_strand_shared_models_are_reverse_complement_invariant_and_still_read_the_dna():
    from tf_models.encoding import reverse_complement

    strand_shared = (
        "motif_cnn",
        "motif_cnn-ungated",
        "motif_cnn-positional",
        "motif_cnn-scales",
        "motif_cnn-summit",
        "factornet",
    )
    for name in (*strand_shared, "factornet-attention"):
        model, config = _build(name)
        inputs = _inputs(config)
        forward = model(inputs).numpy()
        flipped = model({**inputs, "dna": reverse_complement(inputs["dna"])}).numpy()
        np.testing.assert_allclose(flipped, forward, rtol=1e-5, atol=1e-6, err_msg=name)
        # Invariance is not constancy: other DNA gives other logits.
        other = model({**inputs, "dna": _inputs(config, seed=1)["dna"]}).numpy()
        assert np.abs(other - forward).max() > 1e-4, name


def test_scales_read_the_flanks_that_the_centre_scan_leaves_out():
    """DNA outside dna_center_bp (100 of 200 bp) changes the scales' logits, never the centre scan's."""
    inputs = None
    for name, reads_flanks in (("motif_cnn", False), ("motif_cnn-scales", True)):
        model, config = _build(name)
        inputs = inputs or _inputs(config)
        flanks = np.ones(WINDOW, bool)
        flanks[50:150] = False
        other = tf.where(flanks[None, :, None], _inputs(config, seed=1)["dna"], inputs["dna"])
        changed = np.abs(model({**inputs, "dna": other}).numpy() - model(inputs).numpy()).max()
        assert (changed > 1e-4) == reads_flanks, (name, changed)


def test_scales_are_checked_against_the_other_placement_and_the_filter():
    with pytest.raises(ConfigError, match="set positional_bp to null"):
        _model_config("motif_cnn-scales", "train.model.motif_cnn.positional_bp=10")
    with pytest.raises(ConfigError, match="narrower than a filter"):
        _model_config("motif_cnn", "train.model.motif_cnn.scales_bp=[5, 100]")
    with pytest.raises(ConfigError, match="must increase"):
        _model_config("motif_cnn", "train.model.motif_cnn.scales_bp=[100, 50]")


def test_easyflow_is_not_strand_invariant():
    """The contrast that makes the invariance test meaningful: reversing one
    strand is a different input unless weights are shared across strands."""
    from tf_models.encoding import reverse_complement

    model, config = _build("easyflow")
    inputs = _inputs(config)
    flipped = model({**inputs, "dna": reverse_complement(inputs["dna"])}).numpy()
    assert np.abs(flipped - model(inputs).numpy()).max() > 1e-4


@pytest.mark.parametrize("name", ["motif_cnn", "easyflow", "factornet"])
def test_tf_index_gathers_the_right_protein(name):
    model, config = _build(name)
    inputs = _inputs(config)
    before = model(inputs).numpy()
    proteins = inputs["proteins"].numpy()
    proteins[1] = np.roll(proteins[1], 7, axis=-1)  # another sequence for TF 1 only
    after = model({**inputs, "proteins": tf.constant(proteins)}).numpy()
    is_tf1 = inputs["tf_index"].numpy() == 1
    assert np.abs(after[is_tf1] - before[is_tf1]).min() > 1e-6
    np.testing.assert_array_equal(after[~is_tf1], before[~is_tf1])


def test_match_dropout_drops_best_matches_in_training_only():
    no_dense_dropout = ("train.model.dropout=0",)
    model, config = _build("motif_cnn", *no_dense_dropout, "train.model.motif_cnn.match_dropout=0.5")
    inputs = _inputs(config)
    served = model(inputs, training=False).numpy()
    np.testing.assert_array_equal(model(inputs, training=False).numpy(), served)
    assert max(np.abs(model(inputs, training=True).numpy() - served).max() for _ in range(3)) > 1e-4
    plain, config = _build("motif_cnn", *no_dense_dropout, "train.model.motif_cnn.match_dropout=0")
    np.testing.assert_allclose(plain(inputs, training=True).numpy(), plain(inputs, training=False).numpy(), atol=1e-6)


def test_known_motifs_seed_the_first_filters_and_the_rest_stay_random():
    from tf_models.motif_cnn import seed_filters
    from tf_models.node_inputs import known_motif_seeds
    from tfbs.formats.motifs import encode_dna

    config = load_config(DEMO_CONFIG, TINY)
    seeds = known_motif_seeds(config, ["FOXA2", "CTCF", "UNKNOWN"])
    assert seeds is not None and seeds[0].shape == (9, 4, 2)  # CTCF_f2 and FOXA2_f1, cut to the 9 bp filter
    for off in ("train.model.motif_cnn.seed_motifs=false", "train.model.architecture=factornet"):
        assert known_motif_seeds(load_config(DEMO_CONFIG, [*TINY, off]), ["CTCF"]) is None
    model, _ = _build("motif_cnn")
    before = model.motifs.kernel.numpy().copy()
    seed_filters(model, seeds)
    after = model.motifs.kernel.numpy()
    np.testing.assert_array_equal(after[..., :2], seeds[0])
    np.testing.assert_array_equal(after[..., 2:], before[..., 2:])
    # The seeded filter's best match is the motif's consensus: exactly 1 after the bias, and nothing else comes close.
    consensus = "".join("ACGT"[i] for i in seeds[0][:, :, 1].argmax(axis=1))
    dna = "T" * 40 + consensus + "T" * 40
    maps = model.motifs(tf.one_hot(encode_dna(dna)[None].astype("int32"), 4)).numpy()[0, :, 1]
    assert maps.max() == pytest.approx(1.0, abs=1e-5) and int(maps.argmax()) == 40
    assert np.sort(maps)[-2] < 0.5


def test_seeding_says_where_its_motifs_come_from_or_why_there_are_none(tmp_path, caplog):
    """Seeds from another motif file (a control of what seeding buys) or none, each a version of its own."""
    from tf_models.explain.tomtom import to_meme
    from tf_models.node_inputs import known_motif_seeds
    from tfbs.formats.motifs import read_meme
    from tfbs.lineage import training_config_digest

    database = read_meme(str(REPO / "data" / "dream" / "annotations" / "HOCOMOCOv9.meme"))
    other = tmp_path / "other_tfs.meme"
    other.write_text(to_meme({name: database[name] for name in ("REST_f1", "SRF_do", "NFYA_f1")}))
    caplog.set_level("INFO", logger="tfbs.train")
    planted = load_config(DEMO_CONFIG, TINY)
    from_file = load_config(DEMO_CONFIG, [*TINY, f"train.model.motif_cnn.seed_motif_db={other}"])
    unseeded = load_config(DEMO_CONFIG, [*TINY, "train.model.motif_cnn.seed_motifs=false"])
    seeds = known_motif_seeds(from_file, ["CTCF", "FOXA1"])
    assert seeds is not None and seeds[0].shape[-1] == 3  # every motif of the file, whatever the TFs
    assert "seed_motif_db" in caplog.text and "REST_f1, SRF_do, NFYA_f1" in caplog.text
    caplog.clear()
    assert known_motif_seeds(unseeded, ["CTCF"]) is None and "start at random: " in caplog.text
    caplog.clear()
    no_motifs = load_config(DEMO_CONFIG, [*TINY, "generate=null"])  # real data with no motif configured
    assert known_motif_seeds(no_motifs, ["CTCF"]) is None
    assert "no motif of CTCF is configured" in caplog.text
    digests = {training_config_digest(config) for config in (planted, from_file, unseeded)}
    assert len(digests) == 3


@pytest.mark.parametrize("name", ["motif_cnn", "easyflow", "factornet"])
@pytest.mark.parametrize("switch, key", [("use_dnase", "dnase"), ("use_cell_type", "cell_index")])
def test_switches_decide_whether_the_input_is_read(name, switch, key):
    changed = {"dnase": lambda x: 1.0 - x, "cell_index": lambda x: (x + 1) % N_CELLS}[key]
    for enabled in (True, False):
        model, config = _build(name, f"train.model.{switch}={str(enabled).lower()}")
        inputs = _inputs(config)
        before = model(inputs).numpy()
        after = model({**inputs, key: changed(inputs[key])}).numpy()
        if enabled:
            assert np.abs(after - before).min() > 1e-6, (switch, enabled)
        else:
            np.testing.assert_array_equal(after, before)


def test_factornet_mixed_precision_computes_float16_with_float32_logits():
    import keras

    from tf_models.model import build_model

    config = _model_config("factornet")
    model = build_model(config, N_CELLS, WINDOW, mixed_precision=True)
    assert keras.mixed_precision.dtype_policy().name == "float32", "policy must not leak"
    assert model.motif_conv.compute_dtype == "float16" and model.sequence.compute_dtype == "float16"
    assert {v.dtype for v in model.trainable_variables} == {"float32"}
    logits = model(_inputs(config))
    assert logits.dtype == tf.float32 and np.isfinite(logits.numpy()).all()


# --------------------------------------------------------------------------
# Learning, export
# --------------------------------------------------------------------------

#: CTCF's core; planted in the positives of the synthetic task.
MOTIF = "CCGCGAGGGGGCGC"


def _motif_batches(config: ModelConfig, steps: int, size: int = 32, seed: int = 3):
    """Batches where label 1 means the motif sits near the centre of the window."""
    rng = np.random.default_rng(seed)
    lookup = {base: i for i, base in enumerate("ACGT")}
    for _ in range(steps):
        bases = rng.integers(0, 4, [size, WINDOW])
        labels = (np.arange(size) % 2).astype(np.float32)
        for row in np.flatnonzero(labels):
            at = rng.integers(WINDOW // 2 - 40, WINDOW // 2 + 40 - len(MOTIF))
            bases[row, at : at + len(MOTIF)] = [lookup[b] for b in MOTIF]
        inputs = _inputs(config, batch=size)
        yield (
            {
                **{k: v for k, v in inputs.items() if k != "proteins"},
                "dna": tf.one_hot(bases, 4),
                "label": tf.constant(labels),
            },
            inputs["proteins"],
        )


@pytest.mark.parametrize("name", ["motif_cnn", "easyflow", "factornet"])
def test_training_steps_reduce_the_loss(name):
    """The training loop's own step (train_loop._gradient_step) learns a planted motif."""
    from tf_models.optimizer import LockedAdam
    from tf_models.train_loop import _gradient_step, _loss

    model, config = _build(name)
    optimizer = LockedAdam(1e-2)
    ((held_out, proteins),) = _motif_batches(config, 1, size=64, seed=99)
    initial = float(_loss(model, held_out, proteins, training=False))
    step = tf.function(lambda batch: _gradient_step(model, optimizer, batch, proteins, 1))
    for batch, _ in _motif_batches(config, 40):
        step(batch)
    final = float(_loss(model, held_out, proteins, training=False))
    assert final < 0.6 * initial, (initial, final)


def test_weight_average_is_each_step_s_moving_average_and_is_swapped_in_only_inside_the_block():
    from tf_models.optimizer import LockedAdam
    from tf_models.train_loop import _gradient_step
    from tf_models.weight_average import averaged_weights

    model, config = _build("motif_cnn")
    momentum = 0.5
    optimizer = LockedAdam(1e-2, use_ema=True, ema_momentum=momentum)
    ((probe, proteins),) = _motif_batches(config, 1, seed=99)
    step = tf.function(lambda batch: _gradient_step(model, optimizer, batch, proteins, 1))
    expected = None
    for batch, _ in _motif_batches(config, 6):
        step(batch)
        weights = [np.asarray(v) for v in model.trainable_variables]
        # The first step's average is its weights; each later one moves by (1 - momentum).
        expected = (
            weights if expected is None else [momentum * e + (1 - momentum) * w for e, w in zip(expected, weights)]
        )
    last = [np.asarray(v) for v in model.trainable_variables]
    at_last = model({**probe, "proteins": proteins}, training=False).numpy()
    with averaged_weights(model, optimizer):
        inside = [np.asarray(v) for v in model.trainable_variables]
        at_average = model({**probe, "proteins": proteins}, training=False).numpy()
    for got, want in zip(inside, expected):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert max(np.abs(a - b).max() for a, b in zip(inside, last)) > 1e-3
    assert np.abs(at_average - at_last).max() > 1e-4
    for got, want in zip(model.trainable_variables, last):
        np.testing.assert_array_equal(np.asarray(got), want)
    optimizer.finalize_variable_values(model.trainable_variables)  # what train() exports
    for got, want in zip(model.trainable_variables, expected):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)


def test_without_weight_averages_the_block_changes_nothing():
    from tf_models.optimizer import LockedAdam
    from tf_models.weight_average import averaged_weights

    model, _ = _build("motif_cnn")
    optimizer = LockedAdam(1e-2)
    optimizer.build(model.trainable_variables)
    before = [np.asarray(v) for v in model.trainable_variables]
    with averaged_weights(model, optimizer):
        for got, want in zip(model.trainable_variables, before):
            np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize("momentum", [0.0, 1.0])
def test_a_weight_average_outside_zero_to_one_is_refused(momentum):
    with pytest.raises(ValueError, match="weight_average"):
        load_config(DEMO_CONFIG, [f"train.weight_average={momentum}"])


def test_the_ps_step_exchanges_packed_tensors_and_takes_the_plain_step():
    """Packing the ps exchange changes no number: same losses, weights, Adam slots and dropout draws."""
    from tf_models.optimizer import LockedAdam
    from tf_models.packed_step import packed_gradient_step
    from tf_models.train_loop import _gradient_step, _loss

    plain, config = _build("motif_cnn")
    packed, _ = _build("motif_cnn")
    packed.set_weights(plain.get_weights())
    assert packed.non_trainable_variables, "dropout's seed state, which every step advances"
    for source, target in zip(plain.non_trainable_variables, packed.non_trainable_variables):
        target.assign(source)
    optimizers = LockedAdam(1e-2), LockedAdam(1e-2)
    ((_, proteins),) = _motif_batches(config, 1)
    plain_step = tf.function(lambda b: _gradient_step(plain, optimizers[0], b, proteins, 1))
    packed_step = tf.function(
        lambda b: packed_gradient_step(packed, optimizers[1], lambda call: _loss(call, b, proteins, True), 1)
    )
    losses = [(float(plain_step(batch)), float(packed_step(batch))) for batch, _ in _motif_batches(config, 3)]
    np.testing.assert_allclose(*zip(*losses), rtol=1e-6)
    assert len({plain_loss for plain_loss, _ in losses}) == 3  # the steps moved the weights
    pairs = [
        *zip(plain.trainable_variables, packed.trainable_variables),
        *zip(plain.non_trainable_variables, packed.non_trainable_variables),
        *zip(optimizers[0].variables, optimizers[1].variables),
    ]
    for a, b in pairs:
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-7, err_msg=a.path)


@pytest.mark.parametrize("name", ["motif_cnn", "factornet"])
def test_export_signatures_agree_with_the_model(tmp_path, name):
    from tf_models.export import export_model
    from tfbs.formats.proteins import AMINO_ACIDS

    model, config = _build(name)
    rng = np.random.default_rng(4)
    proteins = ["".join(rng.choice(list(AMINO_ACIDS), n)) for n in (30, 40, 25)]
    export_dir = export_model(model, config, N_CELLS, WINDOW, proteins, {"tfs": ["A", "B", "C"]}, str(tmp_path / "x"))
    served = tf.saved_model.load(export_dir)
    dna = [bytes(rng.choice(list(b"ACGT"), WINDOW).astype(np.uint8)) for _ in range(4)]
    tf_index, cells, dnase = [0, 1, 2, 1], [0, 1, 2, 0], [0.0, 1.0, 0.0, 1.0]
    by_index = served.signatures["indexed"](
        dna=tf.constant(dna), tf_index=tf.constant(tf_index), cell_index=tf.constant(cells), dnase=tf.constant(dnase)
    )
    by_sequence = served.signatures["serving_default"](
        dna=tf.constant(dna),
        protein=tf.constant([proteins[i].encode() for i in tf_index]),
        cell_index=tf.constant(cells),
        dnase=tf.constant(dnase),
    )
    np.testing.assert_allclose(by_index["probability"], by_sequence["probability"], rtol=1e-5, atol=1e-6)
    direct = model(model_inputs(dna, proteins, config.aa_max_length, tf_index, cells, dnase)).numpy()
    np.testing.assert_allclose(by_index["logit"], direct, rtol=1e-5, atol=1e-5)
    assert json.loads(Path(f"{export_dir}/tfbs_metadata.json").read_text()) == {"tfs": ["A", "B", "C"]}


def test_expression_tells_the_cells_apart_and_goes_into_the_export(tmp_path):
    """With use_expression the model reads its cells' table by cell_index (it alone differs between
    cells here); the export keeps the table; other architectures and a missing table are refused."""
    from tf_models.export import export_model
    from tf_models.model import build_model

    table = np.array([[0.0, 8.0], [8.0, 0.0], [4.0, 4.0]], np.float32)
    config = _model_config("motif_cnn", "train.model.use_expression=true", "train.model.use_dnase=false")
    tf.random.set_seed(0)
    model = build_model(config, N_CELLS, WINDOW, cell_features=table)
    inputs = _inputs(config)
    by_cell = [model({**inputs, "cell_index": tf.fill([6], cell)}).numpy() for cell in range(N_CELLS)]
    assert np.abs(by_cell[0] - by_cell[1]).max() > 1e-4 and np.abs(by_cell[0] - by_cell[2]).max() > 1e-4
    proteins = ["ACDEFGHIKL" * 3, "MNPQRSTVWY" * 3, "ACDEFGHIKL" * 2]
    served = tf.saved_model.load(export_model(model, config, N_CELLS, WINDOW, proteins, {}, str(tmp_path / "x"), table))
    dna = [bytes(np.random.default_rng(5).choice(list(b"ACGT"), WINDOW).astype(np.uint8)) for _ in range(3)]
    for cell in range(N_CELLS):
        cells, tf_index, dnase = [cell] * 3, [0, 1, 2], [0.0] * 3
        exported = served.signatures["indexed"](
            dna=tf.constant(dna),
            tf_index=tf.constant(tf_index),
            cell_index=tf.constant(cells),
            dnase=tf.constant(dnase),
        )["logit"]
        direct = model(model_inputs(dna, proteins, config.aa_max_length, tf_index, cells, dnase)).numpy()
        np.testing.assert_allclose(exported, direct, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="needs the cells' expression table"):
        build_model(config, N_CELLS, WINDOW)
    with pytest.raises(ConfigError, match="factornet architecture reads no expression"):
        _model_config("factornet", "train.model.use_expression=true")


def test_expression_products_count_a_filter_only_where_its_gene_is_expressed():
    """``motif_cnn.expression_products``: beside the matches, each filter's widest best match times each gene's
    expression. Through the products of gene 0 alone, the DNA moves the logit in the cells that express gene 0
    and not in the cell that does not; the setting needs use_expression."""
    from tf_models.model import build_model

    table = np.array([[6.0, 1.0], [0.0, 1.0], [3.0, 0.0]], np.float32)
    config = _model_config(
        "motif_cnn",
        "train.model.use_expression=true",
        "train.model.motif_cnn.expression_products=true",
        "train.model.motif_cnn.scales_bp=[50, 100, 200]",
        "train.model.motif_cnn.positional_bp=null",
        "train.model.use_dnase=false",
    )
    tf.random.set_seed(0)
    model = build_model(config, N_CELLS, WINDOW, cell_features=table)
    filters, genes = config.motif_cnn.filters, table.shape[1]
    kernel = np.zeros(model.dense.kernel.shape, np.float32)
    proteins = kernel.shape[0] - 3 * filters - filters * genes - genes
    assert proteins == config.aa_filters[-1]  # matches at 3 widths, the products, the protein, the expression
    kernel[3 * filters + np.arange(filters) * genes] = 1.0  # the (filter, gene 0) products alone
    model.dense.kernel.assign(kernel)
    inputs = _inputs(config, batch=8, seed=3)
    spread = [model({**inputs, "cell_index": tf.fill([8], cell)}).numpy().std() for cell in range(N_CELLS)]
    assert spread[0] > 1e-3 and spread[2] > 1e-3 and spread[1] < 1e-7, spread
    with pytest.raises(ConfigError, match="expression_products multiplies the matches by the expression"):
        _model_config("motif_cnn", "train.model.motif_cnn.expression_products=true")


# --------------------------------------------------------------------------
# Cluster strategies (in a subprocess each)
# --------------------------------------------------------------------------


def _free_ports(count: int) -> list[int]:
    import socket

    sockets = [socket.socket() for _ in range(count)]
    for sock in sockets:
        sock.bind(("localhost", 0))
    ports = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


def _train_under_strategy(kind: str, name: str, steps: int = 4) -> dict:
    """A few training steps of a tiny model under ``kind``, as train() runs them.

    ``parameter_server``: an in-process cluster of one worker and one ps
    server; the coordinator schedules the steps (the packed exchange) on the
    worker and the variables live on the ps. ``multi_worker_mirrored``: one worker.
    """
    from tf_models.model import build_model
    from tf_models.optimizer import LockedAdam
    from tf_models.train_loop import training_step

    if kind == "parameter_server":
        worker_port, ps_port = _free_ports(2)
        spec = tf.train.ClusterSpec({"worker": [f"localhost:{worker_port}"], "ps": [f"localhost:{ps_port}"]})
        for job in ("worker", "ps"):
            tf.distribute.Server(spec, job_name=job, task_index=0, protocol="grpc", start=True)
        resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(spec, rpc_layer="grpc")
        strategy = tf.distribute.ParameterServerStrategy(resolver)
    else:
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
    config = _model_config(name)
    batches = list(_motif_batches(config, 1, size=8))
    ((batch, proteins),) = batches
    with strategy.scope():
        model = build_model(config, N_CELLS, WINDOW)
        optimizer = LockedAdam(1e-2)
        optimizer.build(model.trainable_variables)
    before = [v.numpy() for v in model.trainable_variables]

    def dataset_fn(_context=None) -> tf.data.Dataset:
        return tf.data.Dataset.from_tensors(batch).repeat()

    @tf.function
    def train_step(iterator) -> tf.Tensor:
        step = training_step(model, optimizer, proteins, strategy)
        return strategy.reduce(tf.distribute.ReduceOp.MEAN, strategy.run(step, args=(next(iterator),)), axis=None)

    if kind == "parameter_server":
        coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
        iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))
        pending = [coordinator.schedule(train_step, args=(iterator,)) for _ in range(steps)]
        coordinator.join()
        losses = [float(p.fetch()) for p in pending]
    else:
        iterator = iter(strategy.distribute_datasets_from_function(dataset_fn))
        losses = [float(train_step(iterator)) for _ in range(steps)]
    return {
        "losses": losses,
        "variables": len(before),
        "updated": sum(not np.allclose(b, v.numpy()) for b, v in zip(before, model.trainable_variables)),
        "devices": sorted({v.value.device for v in model.trainable_variables}),
    }


@pytest.mark.parametrize("name", ["motif_cnn", "factornet"])
@pytest.mark.parametrize("kind", ["parameter_server", "multi_worker_mirrored"])
def test_models_train_under_cluster_strategies(kind, name):
    run = subprocess.run(
        [sys.executable, __file__, kind, name], cwd=REPO, env=script_env(), capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr[-4000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert len(result["losses"]) == 4 and np.isfinite(result["losses"]).all()
    assert result["updated"] == result["variables"] > 0  # every weight got a gradient
    if kind == "parameter_server":
        # Every variable on the parameter server, none copied to the worker.
        assert result["devices"] == ["/job:ps/replica:0/task:0/device:CPU:0"]


if __name__ == "__main__":
    print(json.dumps(_train_under_strategy(sys.argv[1], sys.argv[2])))


def test_linear_matches_keep_a_weak_match_graded_where_relu_floors_it():
    """``motif_cnn.match_activation: linear``: each filter's best score below its threshold stays (negative),
    where the ReLU's is 0 for every window without a match."""
    relu, config = _build("motif_cnn")
    linear, _ = _build("motif_cnn", "train.model.motif_cnn.match_activation=linear")
    linear.motifs.set_weights(relu.motifs.get_weights())
    linear.motifs.bias.assign(tf.fill(linear.motifs.bias.shape, -100.0))  # nothing clears the threshold
    relu.motifs.bias.assign(tf.fill(relu.motifs.bias.shape, -100.0))
    dna = _inputs(config, batch=4)["dna"]
    floored, graded = (model._best_matches(model.motifs(dna)).numpy() for model in (relu, linear))
    assert (floored == 0).all()
    assert (graded < 0).all() and len(np.unique(graded.round(4))) > graded.shape[1]  # windows told apart
