"""Export the trained model as a SavedModel with serving signatures.

Signatures
----------
``serving_default(dna, protein, cell_index, dnase)``
    Raw sequences: ``dna`` strings of exactly ``window`` bases, ``protein``
    amino-acid strings (any TF, seen in training or not); the protein branch
    runs once per distinct protein of the batch.
``indexed(dna, tf_index, cell_index, dnase)``
    For the TFs of the training manifest, whose protein table is stored in
    the model; the protein branch then runs once per TF, not per example.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import tensorflow as tf

from tf_models.encoding import dna_one_hot, protein_bytes_to_indices, protein_one_hot
from tf_models.model import TFBSModel, build_model
from tf_models.model_dir import model_directory
from tfbs import lineage, storage
from tfbs.config import ModelConfig, PipelineConfig
from tfbs.formats.manifest import Manifest
from tfbs.formats.proteins import protein_table
from tfbs.lineage import EXPORT_METADATA as METADATA_NAME
from tfbs.lineage import Lineage
from tfbs.storage import PARTIAL_SUFFIX
from tfbs.storage.content_keys import record_digests


class ServingModule(tf.Module):
    """The model plus the metadata needed to call it on sequences."""

    def __init__(self, model: TFBSModel, proteins: list[str], window: int, aa_max_length: int) -> None:
        super().__init__()
        self.model = model
        self.window = window
        self.aa_max_length = aa_max_length
        self.protein_table = tf.Variable(protein_table(proteins, aa_max_length), trainable=False)

    def _probabilities(self, dna, proteins, tf_index, cell_index, dnase) -> dict[str, tf.Tensor]:
        logits = self.model(
            {
                "dna": dna_one_hot(tf.reshape(tf.io.decode_raw(dna, tf.uint8), [-1, self.window])),
                "proteins": proteins,
                "tf_index": tf_index,
                "cell_index": cell_index,
                "dnase": dnase,
            },
            training=False,
        )
        return {"probability": tf.sigmoid(logits), "logit": logits}

    @tf.function(
        input_signature=[
            tf.TensorSpec([None], tf.string, name="dna"),
            tf.TensorSpec([None], tf.string, name="protein"),
            tf.TensorSpec([None], tf.int32, name="cell_index"),
            tf.TensorSpec([None], tf.float32, name="dnase"),
        ]
    )
    def serve(self, dna, protein, cell_index, dnase):
        # The protein branch runs once per distinct protein of the batch, not
        # per example: a genome-wide prediction sends one TF's a million times.
        distinct, tf_index = tf.unique(protein, out_idx=tf.int32)
        raw = tf.io.decode_raw(distinct, tf.uint8, fixed_length=self.aa_max_length)
        proteins = protein_one_hot(protein_bytes_to_indices(raw))
        return self._probabilities(dna, proteins, tf_index, cell_index, dnase)

    @tf.function(
        input_signature=[
            tf.TensorSpec([None], tf.string, name="dna"),
            tf.TensorSpec([None], tf.int32, name="tf_index"),
            tf.TensorSpec([None], tf.int32, name="cell_index"),
            tf.TensorSpec([None], tf.float32, name="dnase"),
        ]
    )
    def indexed(self, dna, tf_index, cell_index, dnase):
        proteins = protein_one_hot(self.protein_table)
        return self._probabilities(dna, proteins, tf_index, cell_index, dnase)


def export_model(
    trained: TFBSModel,
    model_config: ModelConfig,
    n_cells: int,
    window: int,
    proteins: list[str],
    metadata: dict,
    export_dir: str,
    cell_features: np.ndarray | None = None,
) -> str:
    """Copy the trained weights into a local model and save it for serving.

    The copy detaches the export from where the variables live (parameter
    servers, mirrored replicas), so the SavedModel loads anywhere. The
    BLAKE3 of each file goes into :data:`~tfbs.storage.content_keys.DIGESTS_NAME`
    (nodes key their copies of the export by it,
    :func:`tf_models.model_dir.local_export`). ``metadata`` is written
    last, as :data:`METADATA_NAME`: its presence marks a whole export.
    All of it is written in ``<export_dir>.partial`` and renamed to
    ``export_dir`` at the end, so a process killed on the way leaves no
    SavedModel without its digests and metadata there (a rerun removes the
    partial folder).

    Parameters
    ----------
    export_dir
        A local folder (the model directory's local side), replaced whole.
    cell_features
        The trained model's table by ``cell_index`` (:func:`tf_models.model.build_model`), kept in the export.

    Returns
    -------
    str
        The export directory.
    """
    local = build_model(model_config, n_cells, window, cell_features=cell_features)
    local.set_weights([np.asarray(w) for w in trained.get_weights()])
    module = ServingModule(local, proteins, window, model_config.aa_max_length)
    partial = Path(f"{export_dir}{PARTIAL_SUFFIX}")
    shutil.rmtree(partial, ignore_errors=True)
    tf.saved_model.save(module, str(partial), signatures={"serving_default": module.serve, "indexed": module.indexed})
    record_digests(partial)
    (partial / METADATA_NAME).write_text(json.dumps(metadata, indent=2))
    shutil.rmtree(export_dir, ignore_errors=True)
    partial.rename(export_dir)
    return export_dir


def export_version(config: PipelineConfig, version_lineage: Lineage, run, manifest: Manifest, result) -> str:
    """Export the trained ``result.model`` to its version's ``export`` folder, the metadata last; its URI.

    The metadata marks a whole export (:func:`tf_models.versions.finished_export`).
    """
    model_config = run.model_config(config.train)
    metadata = {
        "tfs": manifest.tfs,
        "cells": manifest.cells,
        "window": manifest.window,
        "uses_dnase": model_config.use_dnase,
        "uses_cell_type": model_config.use_cell_type,
        # The expression table is by cell_index: only these cells can be scored.
        "uses_expression": model_config.use_expression,
        "steps": result.steps,
        "strategy": config.train.placement.strategy,
        "config_digest": config.digest(),
        "version": version_lineage.version,
        "manifest_digest": version_lineage.manifest_digest,
        "training_config_digest": version_lineage.training_config_digest,
    }
    target = lineage.export_uri(config.run_dir, version_lineage.version)
    storage.delete_dir(target)  # a partial export of a killed run goes; this one replaces it whole
    # Training closed its mirror: the export gets one of its own (or, for a
    # local model URI, writes in place).
    with model_directory(lineage.model_uri(config.run_dir, version_lineage.version)) as directory:
        local = export_model(
            result.model,
            model_config,
            len(manifest.cells),
            manifest.window,
            [manifest.proteins[tf] for tf in manifest.tfs],
            metadata,
            f"{directory.local}/export",
            cell_features=run.cell_features,
        )
        if directory.mirrored:
            # The metadata marks a whole export (finished_export): it goes up
            # after the SavedModel's files, never before.
            written = Path(local, lineage.EXPORT_METADATA)
            text = written.read_text()
            written.unlink()
            directory.push()
            storage.write_text(f"{target}/{lineage.EXPORT_METADATA}", text)
    return target
