"""Shard records -> ``tf.data``: graph-native, so it runs on remote workers.

Under ``ParameterServerStrategy`` the dataset function is executed on each
worker, so everything here is TensorFlow ops: no ``from_generator`` and no
``py_function``. Each input pipeline (worker) reads its own share of the
record files; no example passes through the chief.

Records move in blocks: each file is read whole and cut into blocks of
``block_records`` rows, blocks are shuffled, and the rows of a few blocks
(:data:`MIX_BLOCKS`) are shuffled together before they are cut into
batches, and the one-hot of :data:`DECODE_BATCHES` training batches is
made in one call. Every op then handles many records at once, so the
pipeline is bound by memory bandwidth rather than by tf.data's cost per
element (a record-at-a-time shuffle and batch spent most of its time there,
and one-hot calls of one 64-row batch a fifth of theirs).
"""

from __future__ import annotations

import tensorflow as tf

from tf_models.encoding import dna_one_hot
from tfbs.formats.records import RecordLayout

#: Records per block: the unit of reading and of the block-level shuffle.
BLOCK_RECORDS = 64
#: Blocks whose records are shuffled together (the record-level shuffle).
MIX_BLOCKS = 16
#: Training batches one-hot encoded in one call (their augmentation stays per batch).
DECODE_BATCHES = 4


def decode_batch(rows: tf.Tensor, layout: RecordLayout, flip: tf.Tensor | None = None) -> dict[str, tf.Tensor]:
    """Decode a batch of records into model features.

    Parameters
    ----------
    rows
        ``uint8`` (batch, record_bytes) records.
    layout
        The record layout.
    flip
        Optional bool per record: reverse-complement its DNA.

    Returns
    -------
    dict
        ``dna`` (batch, window, 4) float32, ``label`` float32, ``tf_index``,
        ``cell_index`` int32 and ``dnase`` float32 in [0, 1].
    """
    # The reshape gives the record length a static size, which the model's
    # centre crop and Flatten need.
    raw = tf.reshape(rows, [-1, layout.record_bytes])
    return {
        "dna": dna_one_hot(raw[:, : layout.window], flip, bases_per_lookup=2 if layout.window % 2 == 0 else 1),
        "label": tf.cast(raw[:, layout.label_offset], tf.float32),
        "tf_index": tf.cast(raw[:, layout.tf_offset], tf.int32),
        "cell_index": tf.cast(raw[:, layout.cell_offset], tf.int32),
        "dnase": tf.cast(raw[:, layout.dnase_offset], tf.float32) / 255.0,
    }


def _decode_together(
    first_batch: tf.Tensor, parts: tuple[tf.Tensor, ...], layout: RecordLayout, seed: int, shuffle_labels: bool = False
) -> dict[str, tf.Tensor]:
    """Decode :data:`DECODE_BATCHES` training batches in one call, reverse-complementing a random half of each.

    Parameters
    ----------
    first_batch
        The index of the first of them in the stream.
    parts
        Rows of the batches, each ``(k * part rows, record)``, say the
        positives and the negatives; batch ``i`` is the ``i``-th slice of
        each part, in this order.
    layout, seed
        The record layout; the augmentation seed (per batch index, so the
        flips do not depend on how many batches are decoded at once).
    shuffle_labels
        Permute the labels within each batch (``train.shuffle_labels``, a
        negative control): the model sees as many positives, none of them
        where they are.

    Returns
    -------
    dict
        Features shaped ``(k, batch, ...)``.
    """
    k = DECODE_BATCHES
    rows = tf.concat([tf.reshape(part, [k, -1, layout.record_bytes]) for part in parts], axis=1)
    size = tf.shape(rows)[1]
    flips = [
        tf.random.stateless_uniform([size], seed=tf.stack([tf.constant(seed, tf.int64), first_batch + i])) < 0.5
        for i in range(k)
    ]
    features = decode_batch(tf.reshape(rows, [-1, layout.record_bytes]), layout, tf.concat(flips, axis=0))
    # Static sizes where known (the batch's, the window's): the models crop and flatten by them.
    batch = rows.shape[1] or -1
    grouped = {name: tf.reshape(value, [k, batch, *value.shape[1:]]) for name, value in features.items()}
    if shuffle_labels:
        order = tf.argsort(
            tf.random.stateless_uniform([k, size], seed=tf.stack([tf.constant(seed + 7, tf.int64), first_batch]))
        )
        grouped["label"] = tf.gather(grouped["label"], order, batch_dims=1)
    return grouped


def _file_blocks(path: tf.Tensor, layout: RecordLayout, block_records: int) -> tf.data.Dataset:
    """One record file, read whole, as ``uint8`` blocks of ``block_records`` rows (the last one shorter)."""
    rows = tf.reshape(tf.io.decode_raw(tf.io.read_file(path), tf.uint8), [-1, layout.record_bytes])
    # Each block copied out of the file's buffer: rebatching views into a
    # shared buffer makes TensorFlow log an error line per block ("Tensor
    # RefCount not reliable if buf_ points to a SubBuffer"); the copy costs
    # one memcpy of the records.
    return tf.data.Dataset.from_tensors(rows).rebatch(block_records).map(lambda block: tf.raw_ops.DeepCopy(x=block))


def _blocks(
    paths: "list[str] | tf.Tensor",
    layout: RecordLayout,
    seed: int,
    shard: tuple,
    training: bool,
    by_file: bool,
    block_records: int,
) -> tf.data.Dataset:
    """Blocks of ``paths``: this pipeline's share, file order shuffled when training."""
    n_pipelines, pipeline_id = shard
    names = tf.data.Dataset.from_tensor_slices(paths)
    if by_file and n_pipelines > 1:
        names = names.shard(n_pipelines, pipeline_id)
    if training:
        names = names.shuffle(1 << 16, seed=seed)
    blocks = names.interleave(
        lambda path: _file_blocks(path, layout, block_records),
        cycle_length=4 if training else 1,
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )
    if not by_file and n_pipelines > 1:
        blocks = blocks.shard(n_pipelines, pipeline_id)
    return blocks


def _shuffled_rows(
    blocks: tf.data.Dataset, batch_size: int, seed: int, shuffle_buffer: int, block_records: int
) -> tf.data.Dataset:
    """Batches of ``batch_size`` rows from an endless stream of blocks: blocks shuffled, then rows within a few blocks."""
    # Never more rows than the shuffle may hold: a buffer of one keeps the stream in order.
    window = max(1, min(MIX_BLOCKS * block_records, shuffle_buffer))
    mixed = (
        blocks.shuffle(max(1, shuffle_buffer // block_records), seed=seed)
        .rebatch(window)
        .enumerate()
        .map(
            lambda i, rows: tf.random.experimental.stateless_shuffle(
                rows, seed=tf.stack([tf.constant(seed, tf.int64), i])
            ),
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=True,
        )
    )
    return mixed.rebatch(batch_size, drop_remainder=True)


def _redrawn_negatives(
    negatives: list[list[str]], layout: RecordLayout, seed: int, shard: tuple, block_records: int
) -> tf.data.Dataset:
    """Negative blocks forever, epoch ``e`` from draw ``e % n_draws``."""
    by_draw = tf.ragged.constant([[f.removeprefix("file://") for f in files] for files in negatives])
    by_file = min(len(files) for files in negatives) >= shard[0]
    n_draws = len(negatives)

    def epoch_blocks(epoch: tf.Tensor) -> tf.data.Dataset:
        # A stateless shuffle takes the epoch as a tensor seed; shuffle() would not.
        files = tf.random.experimental.stateless_shuffle(
            by_draw[epoch % n_draws], seed=tf.stack([tf.constant(seed, tf.int64), epoch])
        )
        return _blocks(files, layout, seed, shard, True, by_file, block_records)

    return tf.data.Dataset.range(1 << 62).flat_map(epoch_blocks)


def positives_per_batch(positive_fraction: float, batch_size: int) -> int:
    """Positives in each training batch: at least one, and at least one negative.

    Examples
    --------
    >>> positives_per_batch(0.25, 64), positives_per_batch(0.001, 64), positives_per_batch(0.999, 64)
    (16, 1, 63)
    """
    return min(max(1, round(positive_fraction * batch_size)), batch_size - 1)


def make_dataset(
    files: list[str],
    layout: RecordLayout,
    batch_size: int,
    seed: int,
    shuffle_buffer: int = 8192,
    input_context: tf.distribute.InputContext | None = None,
    training: bool = True,
    shard: tuple[int, "int | tf.Tensor"] | None = None,
    negatives: list[list[str]] | None = None,
    positive_fraction: float = 0.5,
    skip_batches: int = 0,
    block_records: int = BLOCK_RECORDS,
    shuffle_labels: bool = False,
) -> tf.data.Dataset:
    """Stream record files as batches of decoded features.

    Parameters
    ----------
    files
        Record file URIs (local paths, ``hdfs://`` or ``gs://``); the
        positives when ``negatives`` is given.
    layout
        Record layout from the manifest.
    batch_size
        Examples per batch for this input pipeline.
    seed
        Seeds file order, class mixing, shuffling and augmentation: the same
        seed gives the same batches in the same order.
    shuffle_buffer
        Records held for the block-level shuffle.
    input_context
        Given by a mirrored strategy; selects this pipeline's share of the
        files (or of the records, when there are fewer files than pipelines).
    training
        Shuffle, repeat forever and augment; otherwise one ordered pass.
    shard
        ``(num_shards, index)`` given explicitly, overriding
        ``input_context``: under ``ParameterServerStrategy`` the context
        always says one pipeline, and the worker's index is a tensor known
        only on the worker.
    negatives
        Record files of each negative draw (training only): epoch ``e``
        reads draw ``e % len(negatives)``, so negatives are redrawn per epoch
        while the positives repeat.
    positive_fraction
        With ``negatives``: the share of positives in every batch.
    skip_batches
        Batches this pipeline already trained on (a resumed run): skipped
        before decoding, so the stream continues where it stopped, with the
        same augmentation.
    block_records
        Records per block (:data:`BLOCK_RECORDS`).
    shuffle_labels
        Training only: permute the labels within each batch (``train.shuffle_labels``).
    """
    if shard is None:
        shard = (
            input_context.num_input_pipelines if input_context else 1,
            input_context.input_pipeline_id if input_context else 0,
        )
    paths = [f.removeprefix("file://") for f in files]
    blocks = _blocks(paths, layout, seed, shard, training, len(paths) >= shard[0], block_records)
    if not training:
        return (
            blocks.rebatch(batch_size)
            .map(lambda rows: decode_batch(rows, layout), num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
            .prefetch(tf.data.AUTOTUNE)
        )
    # The one-hot's ops cost per call as well as per row: rows come in groups of
    # DECODE_BATCHES batches, decoded in one call, then cut into batches.
    k = DECODE_BATCHES
    if negatives:
        # Classes are mixed per batch, not per record: every batch holds the
        # same number of positives, and batch-level ops keep the pipeline fast.
        n_positive = positives_per_batch(positive_fraction, batch_size)
        positives = _shuffled_rows(blocks.repeat(), k * n_positive, seed, shuffle_buffer, block_records)
        drawn = _shuffled_rows(
            _redrawn_negatives(negatives, layout, seed, shard, block_records),
            k * (batch_size - n_positive),
            seed + 1,
            shuffle_buffer,
            block_records,
        )
        groups = tf.data.Dataset.zip(positives, drawn)
    else:
        groups = _shuffled_rows(blocks.repeat(), k * batch_size, seed, shuffle_buffer, block_records).map(
            lambda rows: (rows,)
        )
    # A resumed run skips the groups it trained on before decoding them, then the batches left of the last one.
    skipped_groups = skip_batches // k

    def decode(i: tf.Tensor, parts: tuple[tf.Tensor, ...]) -> dict[str, tf.Tensor]:
        return _decode_together(i * k, parts, layout, seed, shuffle_labels)

    batches = groups.skip(skipped_groups).enumerate(start=skipped_groups)
    batches = batches.map(decode, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return batches.unbatch().skip(skip_batches % k).prefetch(tf.data.AUTOTUNE)
