"""Every stage without DNase data (``data.dnase_dir: null``): a user with labels,
a genome and proteins only. Hard negatives then come from all unbound bins at
random, and the model's DNase input is switched off."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from conftest import small_config

from tfbs.storage import local_path


@pytest.fixture(scope="module")
def without_dnase(spark, small_dataset, tmp_path_factory):
    """Shards and a model built from the small data set with its DNase peaks ignored."""
    from preprocess.build_shards import build_shards
    from tf_models.train import train_on_spark

    config = small_config(
        tmp_path_factory.mktemp("no-dnase"),
        f"data.root={local_path(small_dataset.data.root)}",
        "data.dnase_dir=null",
        "train.placement.strategy=local",
    )
    manifest = build_shards(spark, config)
    summary = train_on_spark(spark, config, manifest)
    return config, manifest, summary["version"]


def test_config_says_there_is_no_dnase(without_dnase):
    config, _, _ = without_dnase
    assert not config.data.has_dnase
    with pytest.raises(ValueError, match="dnase_dir is null"):
        config.data.dnase_peaks_uri("K562")


def test_negatives_are_drawn_from_all_unbound_bins(without_dnase):
    _, manifest, _ = without_dnase
    assert manifest.dnase is False
    # No bin is open, so no draw probability is spent on open chromatin.
    assert all(p_open == 0.0 and p_closed > 0.0 for p_open, p_closed in manifest.draw_probabilities.values())
    layout = manifest.record_layout
    files = manifest.records["train"].positives + manifest.records["train"].negatives[0]
    rows = np.concatenate(
        [np.fromfile(local_path(f.path), np.uint8).reshape(-1, layout["record_bytes"]) for f in files]
    )
    assert not rows[:, layout["window"] + 3].any()  # the DNase byte (tfbs.formats.records)
    negatives = sum(sum(per_split["train"]) for cells in manifest.draws.values() for per_split in cells.values())
    positives = sum(cells.kept["train"]["B"] for tf in manifest.counts.values() for cells in tf.values())
    assert negatives == pytest.approx(3.0 * positives, rel=0.25)  # the demo's U:B ratio, all from closed bins


def test_the_model_ignores_dnase_and_predict_needs_no_peaks(spark, without_dnase, tmp_path):
    import gzip

    from tf_models.predict import predict_regions
    from tfbs.lineage import export_uri

    config, manifest, version = without_dnase
    exported = export_uri(config.run_dir, version)
    export = local_path(exported)
    assert json.loads(Path(f"{export}/tfbs_metadata.json").read_text())["uses_dnase"] is False
    served = tf.saved_model.load(export).signatures["indexed"]
    rng = np.random.default_rng(5)
    dna = tf.constant([bytes(rng.choice(list(b"ACGT"), manifest.window).astype(np.uint8)) for _ in range(4)])
    index = tf.constant([0, 1, 0, 1])
    closed = served(dna=dna, tf_index=index, cell_index=index, dnase=tf.zeros([4]))["logit"].numpy()
    opened = served(dna=dna, tf_index=index, cell_index=index, dnase=tf.ones([4]))["logit"].numpy()
    np.testing.assert_array_equal(closed, opened)

    regions = tmp_path / "regions.bed"
    regions.write_text("chr8\t10000\t10200\nchr8\t20000\t20200\n")
    out = f"file://{tmp_path}/F.CTCF.K562.tab.gz"
    assert predict_regions(spark, config, exported, f"file://{regions}", "CTCF", "K562", out) == 2
    assert len(gzip.decompress(Path(local_path(out)).read_bytes()).decode().splitlines()) == 2
