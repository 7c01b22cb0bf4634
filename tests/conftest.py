"""Shared fixtures: one Spark session, one small generated data set and its
shards per test session (petastorm's pattern: session-scoped Spark plus small
synthetic data), so each stage is tested on real components without paying
for set-up more than once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tfbs.config import PipelineConfig, load_config

# The GCS emulator's fixtures; importing it sets STORAGE_EMULATOR_HOST before any Spark JVM starts.
pytest_plugins = ["gcs_emulator"]

REPO = Path(__file__).resolve().parents[1]
DEMO_CONFIG = REPO / "conf" / "demo.yaml"
SHARED_DATA = REPO.parent / "shared" / "data" / "dream"

#: A genome of ~0.6 Mb: big enough for every split, small enough for CI.
SMALL_OVERRIDES = [
    "generate.chromosomes={chr1: 150000, chr2: 200000, chr3: 120000, chr8: 60000, chr11: 80000, chr21: 60000}",
    "data.tfs=[CTCF, FOXA1]",
    "generate.tfs=[{name: CTCF, motif: CTCF_f2, family: zf-ctcf}, {name: FOXA1, motif: FOXA1_f1, family: forkhead}]",
    f"generate.motif_db={SHARED_DATA / 'annotations' / 'HOCOMOCOv9.meme'}",
    "preprocess.rows_per_record_file=256",
    "train.steps=60",
    "train.steps_per_execution=10",
    "train.checkpoint_every_steps=30",
    "train.batch_size=32",
    "train.model.dna_filters=[16, 16]",
    "train.model.aa_filters=[8, 8]",
    "train.model.aa_max_length=200",
    "train.model.dense_units=16",
    "evaluate.min_mean_auroc=null",
]

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def small_config(root: Path, *extra: str) -> PipelineConfig:
    """The demo configuration scaled down, writing under ``root``."""
    return load_config(
        DEMO_CONFIG,
        [f"run_dir={root / 'run'}", f"data.root={root / 'data'}", *SMALL_OVERRIDES, *extra],
    )


def model_inputs(dna: list[bytes], proteins: list[str], aa_max_length: int, tf_index, cells, dnase) -> dict:
    """The dict a model takes, built from raw sequences as the export does."""
    import numpy as np
    import tensorflow as tf

    from preprocess.proteins import protein_table
    from tf_models.encoding import dna_one_hot, protein_one_hot

    return {
        "dna": dna_one_hot(np.frombuffer(b"".join(dna), np.uint8).reshape(len(dna), -1)),
        "proteins": protein_one_hot(protein_table(proteins, aa_max_length)),
        "tf_index": tf.constant(tf_index),
        "cell_index": tf.constant(cells),
        "dnase": tf.constant(dnase),
    }


@pytest.fixture(scope="session")
def spark():
    """One local Spark session for the whole test run."""
    from tfbs.session import build_session

    config = load_config(DEMO_CONFIG)
    session = build_session(config.spark, master="local[2]", app_suffix="-tests")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def small_dataset(tmp_path_factory) -> PipelineConfig:
    """A generated ENCODE-DREAM-format data set (real bedtools labels)."""
    from preprocess.synthetic.generate import generate_dataset

    config = small_config(tmp_path_factory.mktemp("small"))
    generate_dataset(config.generate, config.data)
    return config


@pytest.fixture(scope="session")
def small_shards(spark, small_dataset) -> tuple[PipelineConfig, dict]:
    """Shards and manifest built by the preprocessing job on ``small_dataset``."""
    from preprocess.build_shards import build_shards

    return small_dataset, build_shards(spark, small_dataset)
