"""Record files -> tf.data: decoding, sharding, reverse complement, determinism."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from tf_models.encoding import dna_one_hot, reverse_complement
from tf_models.input_pipeline import make_dataset
from tfbs.formats.records import RecordLayout, write_record_file

LAYOUT = RecordLayout(window=8)


def _write(tmp_path, n_files=3, rows_per_file=10):
    files = []
    for f in range(n_files):
        rows = [(b"ACGTNACG", (f * rows_per_file + i) % 2, f, i % 3, (i % 5) / 4) for i in range(rows_per_file)]
        path = str(tmp_path / f"part-{f}.rec")
        assert write_record_file(rows, path, LAYOUT) == rows_per_file
        files.append(path)
    return files


def test_one_hot_and_reverse_complement():
    one_hot = dna_one_hot(tf.constant([list(b"ACGTN")], tf.uint8)).numpy()[0]
    np.testing.assert_array_equal(one_hot[:4], np.eye(4))
    np.testing.assert_array_equal(one_hot[4], np.zeros(4))  # N -> zeros
    rc = reverse_complement(dna_one_hot(tf.constant([list(b"AACG")], tf.uint8)))
    expected = dna_one_hot(tf.constant([list(b"CGTT")], tf.uint8))
    np.testing.assert_array_equal(rc.numpy(), expected.numpy())
    # Flipped rows come out reverse-complemented (lower case and N included), the others as they are.
    rows = tf.constant([list(b"AAcgN"), list(b"AAcgN")], tf.uint8)
    flipped = dna_one_hot(rows, flip=tf.constant([True, False])).numpy()
    np.testing.assert_array_equal(flipped[0], dna_one_hot(tf.constant([list(b"NCGTT")], tf.uint8)).numpy()[0])
    np.testing.assert_array_equal(flipped[1], dna_one_hot(rows).numpy()[1])
    # Two bases per lookup: the same one-hot, every byte pair (and N, lower case, other bytes) included.
    every_pair = tf.constant(np.random.default_rng(0).choice(np.frombuffer(b"ACGTNacgtX", np.uint8), (16, 12)))
    flip = tf.constant(np.arange(16) % 2 == 0)
    np.testing.assert_array_equal(
        dna_one_hot(every_pair, flip, bases_per_lookup=2).numpy(), dna_one_hot(every_pair, flip).numpy()
    )


def test_ordered_pass_decodes_every_field(tmp_path):
    files = _write(tmp_path)
    batches = list(make_dataset(files, LAYOUT, batch_size=7, seed=1, training=False))
    tf_index = np.concatenate([b["tf_index"].numpy() for b in batches])
    assert len(tf_index) == 30
    np.testing.assert_array_equal(np.bincount(tf_index), [10, 10, 10])
    first = batches[0]
    assert first["dna"].shape == (7, 8, 4)
    np.testing.assert_allclose(first["dnase"].numpy()[:5], [0, 0.25, 0.5, 0.75, 1.0], atol=1 / 255)
    np.testing.assert_array_equal(first["cell_index"].numpy()[:4], [0, 1, 2, 0])


def test_pipelines_split_files_without_overlap(tmp_path):
    files = _write(tmp_path, n_files=4)
    seen = []
    for pipeline in range(2):
        context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=pipeline)
        batches = make_dataset(files, LAYOUT, batch_size=10, seed=1, input_context=context, training=False)
        seen.append(sorted({int(t) for b in batches for t in b["tf_index"].numpy()}))
    assert seen == [[0, 2], [1, 3]]


def test_same_seed_same_batches_different_seed_differs(tmp_path):
    files = _write(tmp_path)

    def first_batches(seed):
        dataset = make_dataset(files, LAYOUT, batch_size=8, seed=seed, shuffle_buffer=64)
        return [np.concatenate([b["label"].numpy(), b["dna"].numpy().ravel()]) for b in dataset.take(5)]

    a, b, c = first_batches(3), first_batches(3), first_batches(4)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c))


def test_skipped_batches_continue_the_same_stream(tmp_path):
    files = _write(tmp_path)

    def batches(skip, n):
        dataset = make_dataset(files, LAYOUT, batch_size=4, seed=5, shuffle_buffer=16, skip_batches=skip)
        return [np.concatenate([b["label"].numpy(), b["dna"].numpy().ravel()]) for b in dataset.take(n)]

    whole, resumed = batches(0, 9), batches(6, 3)
    # Same records and the same reverse-complement flips as an uninterrupted run.
    assert all(np.array_equal(a, b) for a, b in zip(whole[6:], resumed))


def test_negatives_are_redrawn_per_epoch_at_the_given_share(tmp_path):
    positives = _write(tmp_path / "p", n_files=1)  # tf_index 0
    draws = []
    for draw in (1, 2):
        path = str(tmp_path / f"n{draw}.rec")
        write_record_file([(b"ACGTACGT", 0, draw, 0, 0.0)] * 20, path, LAYOUT)
        draws.append([path])
    dataset = make_dataset(
        positives, LAYOUT, batch_size=10, seed=2, shuffle_buffer=1, negatives=draws, positive_fraction=0.25
    )
    batches = [b["tf_index"].numpy() for b in dataset.take(40)]
    assert all((batch == 0).sum() == 2 for batch in batches)  # round(0.25 * 10) positives in every batch
    seen = np.concatenate(batches)
    negatives = seen[seen > 0]
    # Epoch 0 draws from the first negative set, epoch 1 from the second, ...
    first_switch = np.argmax(negatives == 2)
    assert set(negatives[:first_switch]) == {1} and first_switch == 20


def test_blocks_of_any_size_read_every_record_once_in_order(tmp_path):
    files = _write(tmp_path, n_files=3, rows_per_file=10)

    def ordered(block_records):
        batches = make_dataset(files, LAYOUT, batch_size=7, seed=1, training=False, block_records=block_records)
        return [(int(t), float(d)) for b in batches for t, d in zip(b["tf_index"].numpy(), b["dnase"].numpy())]

    whole_files = ordered(64)
    assert len(whole_files) == 30 and [t for t, _ in whole_files] == [0] * 10 + [1] * 10 + [2] * 10
    # A block shorter than a file, and one that leaves a short last block.
    assert ordered(1) == whole_files and ordered(4) == whole_files


def test_training_blocks_mix_records_across_blocks_and_files(tmp_path):
    files = _write(tmp_path, n_files=3, rows_per_file=40)
    dataset = make_dataset(files, LAYOUT, batch_size=8, seed=3, shuffle_buffer=64, block_records=4)
    batches = [b["tf_index"].numpy() for b in dataset.take(60)]
    seen = np.concatenate(batches)
    # Every file read at its share, and batches that mix files (records of one block stay in order otherwise).
    np.testing.assert_allclose(np.bincount(seen, minlength=3) / len(seen), [1 / 3] * 3, atol=0.08)
    assert np.mean([len(set(batch.tolist())) > 1 for batch in batches]) > 0.8
