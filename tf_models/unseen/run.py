"""The whole measurement: per held-out TF, train without it, score it under controls, write the table.

Training is the project's loop (:func:`tf_models.train.train_on_spark`)
under ``strategy: local``, one process: the strategy changes how steps run,
not what is learnt, and four trainings on a shared machine fit better in
one process than in four TensorFlowOnSpark clusters. Each held-out TF gets
its own run folder, ``<run_dir>/unseen/<TF>/`` (filtered record files and
model versions), so running again retrains nothing already trained.

The controls: the TF's own protein beside ``unseen.shuffles`` shuffles of
it (their mean and range), the nearest other TF's protein, the TF's motif
scan and the model that saw it. The family control
(:func:`family_control_config`) repeats the measurement for the TFs with a
family member on a data set generated with their sites planted apart, so
transfer through the protein is told from transfer through shared sites.
"""

from __future__ import annotations

import json
import logging
import time

from tf_models.unseen.proteins import family_label_protein, nearest_protein, protein_families, shuffled_protein
from tf_models.unseen.score import auprc_by_cell, load_exported_model, read_test_rows, score_rows
from tf_models.unseen.shards import without_tf
from tf_models.unseen.table import INPUTS, SITES, control_note, family_note, table_rows, verdict, write_table
from tfbs import lineage, storage
from tfbs.config import DataConfig, PipelineConfig
from tfbs.errors import ConfigError, MissingInputError
from tfbs.formats.dream import TEST
from tfbs.formats.manifest import Manifest

log = logging.getLogger("tfbs.unseen")

#: The own protein must beat the shuffled one by this mean auPRC to count as signal.
SIGNAL_MARGIN = 0.02
#: Proteins this identical (local alignment, over the shorter) share a DNA-binding domain: one family.
FAMILY_IDENTITY = 0.2


def unseen_uri(run_dir: str) -> str:
    """``<run_dir>/unseen``: the held-out TFs' shards and models."""
    return f"{run_dir.rstrip('/')}/unseen"


def family_control_config(config: PipelineConfig) -> PipelineConfig:
    """The family control's configuration: the run's generated data set with paralogue sites planted apart.

    The same generator settings and seed with ``generate.family_share: 0``
    (no TF inherits its family lead's sites), written under
    ``<run_dir>/unseen/family_control/`` (data, shards and models).

    Raises
    ------
    ConfigError
        If the run's data is not generated (no ``generate`` section).
    """
    if config.generate is None:
        raise ConfigError(
            f"{config.source}: unseen.family_control: needs a generated data set (a generate section); "
            "set unseen.family_control=false for real data"
        )
    root = f"{unseen_uri(config.run_dir)}/family_control"
    data = DataConfig.model_validate(
        {
            "root": f"{root}/data",
            "tfs": config.data.tfs,
            "cells": config.data.cells,
            **({"dnase_dir": None} if config.data.dnase_dir is None else {}),
        }
    )
    generate = config.generate.model_copy(update={"family_share": 0.0})
    return config.model_copy(
        update={"run_dir": root, "shards_dir": f"{root}/shards", "data": data, "generate": generate}
    )


def held_out_config(config: PipelineConfig, held_out: str) -> PipelineConfig:
    """The configuration training without ``held_out``: its own run folder, one process, ``unseen`` lengths."""
    unseen = config.unseen
    steps = unseen.steps if unseen.steps else (None if unseen.epochs else config.train.steps)
    one_process = config.train.placement.model_copy(update={"strategy": "local"})
    # A file of motifs to start filters as may hold the held-out TF's own (the demo's does): its
    # trainings start them as the training TFs' motifs only (evaluate.motifs), if seeded at all.
    scan = config.train.model.motif_cnn.model_copy(update={"seed_motif_db": None})
    train = config.train.model_copy(
        update={
            "model": config.train.model.model_copy(update={"motif_cnn": scan}),
            "placement": one_process,
            "epochs": unseen.epochs or config.train.epochs,
            "steps": steps,
            "version": None,
        }
    )
    return config.model_copy(update={"run_dir": f"{unseen_uri(config.run_dir)}/{held_out}", "train": train})


def _seen_report(config: PipelineConfig) -> tuple[str, dict]:
    """The ``LATEST`` version and its report: the seen-TF reference.

    Raises
    ------
    MissingInputError
        If no version passed evaluation yet.
    """
    latest = lineage.read_latest(config.run_dir)
    if latest is None:
        raise MissingInputError(f"{lineage.latest_uri(config.run_dir)}: no evaluated model (run `tfbs demo` first)")
    report_json = f"{lineage.report_uri(config.run_dir, latest.version)}/report.json"
    if not storage.exists(report_json):
        raise MissingInputError(f"{report_json}: the LATEST version has no report (run `tfbs evaluate`)")
    return latest.version, json.loads(storage.read_text(report_json))


def with_protein_input(config: PipelineConfig, manifest: Manifest, protein_input: str) -> Manifest:
    """The manifest whose proteins are what the model is given: whole, cut to their DNA-binding domains,
    or a family label (:func:`~tf_models.unseen.proteins.family_label_protein` of the family
    :func:`~tf_models.unseen.proteins.protein_families` finds at :data:`FAMILY_IDENTITY`)."""
    if protein_input == "full":
        return manifest
    if protein_input == "family":
        families = protein_families(manifest.proteins, FAMILY_IDENTITY)
        proteins = {tf: family_label_protein(families[tf]) for tf in manifest.proteins}
    else:
        from tf_models.unseen.domains import domains_only

        proteins = domains_only(manifest.proteins, config.data.proteins_fasta)
    # model_copy does not validate: only the proteins change, so the model version does too.
    return manifest.model_copy(update={"proteins": proteins})


def measure_held_out(config: PipelineConfig, manifest: Manifest, held_out: str, seen: dict) -> dict:
    """Train without ``held_out``, then score its test rows under every control.

    Parameters
    ----------
    manifest
        The shards' manifest, its proteins those the model is to be given
        (:func:`with_protein_input`).
    seen
        The report of a model trained with ``held_out`` (``{}``: none).

    Returns
    -------
    dict
        ``{"tf", "nearest", "identity", "version", "seconds", "auprc": {cell: {condition: auPRC}}}``;
        the conditions ``own``, ``shuffled_<i>`` (``unseen.shuffles`` of them) and their mean
        ``shuffled``, ``nearest``, ``motif_scan``, ``seen`` and ``trained`` (the held-out model on
        the TFs it trained on, :func:`_trained_tfs_auprc`).
    """
    from tf_models.baselines import motif_log_odds
    from tf_models.train import train_on_spark

    started = time.monotonic()
    run_config = held_out_config(config, held_out)
    derived = without_tf(manifest, held_out, f"{run_config.run_dir}/shards")
    log.info("holding out %s: training on %s", held_out, ", ".join(derived.tfs))
    # strategy local: train_on_spark runs the loop in this process and needs no Spark session.
    summary = train_on_spark(None, run_config, derived)
    model_config = config.train.model if manifest.dnase else config.train.model.model_copy(update={"use_dnase": False})
    model = load_exported_model(
        lineage.export_uri(run_config.run_dir, summary["version"]), model_config, len(manifest.cells), manifest.window
    )
    nearest, identity = nearest_protein(held_out, manifest.proteins)
    own = manifest.proteins[held_out]
    shuffles = {f"shuffled_{i}": shuffled_protein(own, config.unseen.seed + i) for i in range(config.unseen.shuffles)}
    proteins = {"own": own, **shuffles, "nearest": manifest.proteins[nearest]}
    motif = None
    if held_out in config.evaluate.motifs and config.evaluate.motif_db:
        motif = motif_log_odds(config.evaluate.motif_db, {held_out: config.evaluate.motifs[held_out]})[held_out]
    auprc = _test_auprc(config, manifest, model, held_out, proteins, model_config.aa_max_length, motif)
    trained = _trained_tfs_auprc(config, manifest, derived.tfs, model, model_config.aa_max_length)
    for cell, values in auprc.items():
        values["shuffled"] = sum(values[name] for name in shuffles) / len(shuffles)
        if cell in trained:
            values["trained"] = trained[cell]
        reference = seen.get("results", {}).get(f"{held_out}/{cell}")
        if reference is not None:
            values["seen"] = reference["auprc"]
        log.info("%s/%s %s", held_out, cell, " ".join(f"{k} {v:.3f}" for k, v in values.items()))
    return {
        "tf": held_out,
        "nearest": nearest,
        "identity": identity,
        "version": summary["version"],
        "seconds": round(time.monotonic() - started, 1),
        "auprc": auprc,
    }


def _test_auprc(
    config: PipelineConfig,
    manifest: Manifest,
    model,
    tf_name: str,
    proteins: dict[str, str],
    aa_max_length: int,
    motif=None,
) -> dict[str, dict[str, float]]:
    """Per cell, the test auPRC of ``tf_name``'s rows scored by ``model`` given each of ``proteins``
    (and by ``motif``'s scan, as ``motif_scan``, when given)."""
    rows = read_test_rows([entry.path for entry in manifest.parquet[TEST]], tf_name)
    scores = score_rows(
        model,
        rows,
        config.data.genome_fasta,
        manifest.window,
        proteins,
        aa_max_length,
        motif,
        config.evaluate.batch_size,
    )
    return auprc_by_cell(rows, scores)


def _trained_tfs_auprc(
    config: PipelineConfig, manifest: Manifest, tfs: list[str], model, aa_max_length: int
) -> dict[str, float]:
    """Per cell, the held-out model's mean test auPRC over the TFs it trained on, each given its own protein.

    What the model learnt where it could: a held-out model that learnt nothing (a broken
    training) reads as one here, whatever the unseen TF's figures are.
    """
    by_cell: dict[str, list[float]] = {}
    for tf_name in tfs:
        own = {"own": manifest.proteins[tf_name]}
        for cell, values in _test_auprc(config, manifest, model, tf_name, own, aa_max_length).items():
            by_cell.setdefault(cell, []).append(values["own"])
    return {cell: sum(values) / len(values) for cell, values in by_cell.items()}


def measure_block(
    config: PipelineConfig, manifest: Manifest, tfs: list[str], seen: dict, sites: str
) -> tuple[list[dict], list[str]]:
    """Every held-out TF of ``tfs`` under every protein input of ``unseen.protein_inputs``, and the notes on them.

    Parameters
    ----------
    sites
        ``"shared"`` for the run's data, ``"apart"`` for the family control (:data:`~tf_models.unseen.table.SITES`).
    """
    results, notes = [], []
    for protein_input in config.unseen.protein_inputs:
        given = with_protein_input(config, manifest, protein_input)
        block = [{**measure_held_out(config, given, tf, seen), "input": protein_input, "sites": sites} for tf in tfs]
        label = f"{INPUTS[protein_input]}, family sites {SITES[sites]}"
        notes += verdict(table_rows(block), SIGNAL_MARGIN)
        notes += [f"{label}: {note}" for note in family_note(block, FAMILY_IDENTITY, SIGNAL_MARGIN)]
        results += block
    return results, notes


def family_members(manifest: Manifest) -> list[str]:
    """The TFs of the shards whose nearest other protein is of their family (identity >= :data:`FAMILY_IDENTITY`)."""
    return [tf for tf in manifest.tfs if nearest_protein(tf, manifest.proteins)[1] >= FAMILY_IDENTITY]


def run_unseen(
    config: PipelineConfig, manifest: Manifest, control: tuple[PipelineConfig, Manifest] | None = None
) -> dict:
    """Measure every held-out TF and write ``unseen.json`` and ``unseen.png`` beside the LATEST report.

    Parameters
    ----------
    control
        The family control's configuration (:func:`family_control_config`)
        and the manifest of its shards, already built; its TFs with a
        family member are measured there too. None: no control.

    Returns
    -------
    dict
        The table written (``title``, ``columns``, ``rows``, ``notes``, ``images``) and ``"uri"``.

    Raises
    ------
    ConfigError
        If ``unseen.tfs`` names a TF the shards do not hold, or the shards hold one TF.
    MissingInputError
        If no version passed evaluation yet (there is no seen-TF reference).
    """
    from tf_models.curves_plot import plot_auprc_bars

    held_out = config.unseen.tfs or manifest.tfs
    unknown = sorted(set(held_out) - set(manifest.tfs))
    if unknown or len(manifest.tfs) < 2:
        raise ConfigError(
            f"{config.source}: unseen.tfs: {unknown or held_out} cannot be held out of the shards' TFs {manifest.tfs}"
        )
    version, seen = _seen_report(config)
    results, notes = measure_block(config, manifest, held_out, seen, "shared")
    if control is not None:
        control_config, control_manifest = control
        members = [tf for tf in family_members(control_manifest) if tf in held_out]
        if members:
            # No model saw these TFs on the control's data: its rows have no seen-TF reference.
            control_results, control_notes = measure_block(control_config, control_manifest, members, {}, "apart")
            results += control_results
            notes += [*control_notes, *control_note(results, SIGNAL_MARGIN)]
        else:
            notes.append("Family control: no held-out TF has a family member among the shards' TFs; nothing measured.")
    rows = table_rows(results)
    notes = [
        *notes,
        f"Shuffled protein: the TF's own residues in {config.unseen.shuffles} seeded random orders "
        f"(unseen.seed {config.unseen.seed} onwards); the table gives their mean and range.",
        "Nearest TF: the other TF whose protein shares the most identical residues in a local alignment "
        "(identity over the shorter protein).",
        "Family sites apart: the same generator settings and seed with generate.family_share 0, so no TF "
        "inherits its family lead's sites (in the run's data a family member takes most of them); "
        "measured for the TFs with a family member.",
        f"Each held-out model trained in one process (strategy local) on the other TFs' records only; "
        f"seen-TF model: version {version}.",
        "Trainings: "
        + ", ".join(
            f"{r['tf']} held out, {r['input']}, sites {r['sites']}: {r['seconds']:.0f} s (version {r['version']})"
            for r in results
        )
        + ".",
    ]
    report_dirs = [lineage.report_uri(config.run_dir, version), lineage.run_report_uri(config.run_dir)]
    uri = write_table(report_dirs, rows, notes, plot_auprc_bars)
    for note in notes:
        log.info("%s", note)
    return {"uri": uri, "rows": rows, "notes": notes, "results": results}
