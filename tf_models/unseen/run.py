"""The whole measurement: per held-out TF, train without it, score it five ways, write the table.

Training is the project's loop (:func:`tf_models.distributed.train_on_spark`)
under ``strategy: local``, one process: the strategy changes how steps run,
not what is learnt, and four trainings on a shared machine fit better in
one process than in four TensorFlowOnSpark clusters. Each held-out TF gets
its own run folder, ``<run_dir>/unseen/<TF>/`` (filtered record files and
model versions), so running again retrains nothing already trained.
"""

from __future__ import annotations

import json
import logging
import time

from tf_models.unseen.proteins import nearest_protein, shuffled_protein
from tf_models.unseen.score import auprc_by_cell, load_exported_model, read_test_rows, score_rows
from tf_models.unseen.shards import without_tf
from tf_models.unseen.table import family_note, table_rows, verdict, write_table
from tfbs import lineage as versions
from tfbs import storage
from tfbs.config import PipelineConfig
from tfbs.dream import TEST
from tfbs.errors import ConfigError, MissingInputError
from tfbs.manifest import Manifest

log = logging.getLogger("tfbs.unseen")

#: The own protein must beat the shuffled one by this mean auPRC to count as signal.
SIGNAL_MARGIN = 0.02
#: Proteins this identical (local alignment, over the shorter) share a DNA-binding domain: one family.
FAMILY_IDENTITY = 0.2


def unseen_uri(run_dir: str) -> str:
    """``<run_dir>/unseen``: the held-out TFs' shards and models."""
    return f"{run_dir.rstrip('/')}/unseen"


def held_out_config(config: PipelineConfig, held_out: str) -> PipelineConfig:
    """The configuration training without ``held_out``: its own run folder, one process, ``unseen`` lengths."""
    unseen = config.unseen
    steps = unseen.steps if unseen.steps else (None if unseen.epochs else config.train.steps)
    train = config.train.model_copy(
        update={"strategy": "local", "epochs": unseen.epochs or config.train.epochs, "steps": steps, "version": None}
    )
    return config.model_copy(update={"run_dir": f"{unseen_uri(config.run_dir)}/{held_out}", "train": train})


def _seen_report(config: PipelineConfig) -> tuple[str, dict]:
    """The ``LATEST`` version and its report: the seen-TF reference.

    Raises
    ------
    MissingInputError
        If no version passed evaluation yet.
    """
    latest = versions.read_latest(config.run_dir)
    if latest is None:
        raise MissingInputError(f"{versions.latest_uri(config.run_dir)}: no evaluated model (run `tfbs demo` first)")
    report_json = f"{versions.report_uri(config.run_dir, latest.version)}/report.json"
    if not storage.exists(report_json):
        raise MissingInputError(f"{report_json}: the LATEST version has no report (run `tfbs evaluate`)")
    return latest.version, json.loads(storage.read_text(report_json))


def with_protein_input(config: PipelineConfig, manifest: Manifest, protein_input: str) -> Manifest:
    """The manifest whose proteins are what the model is given: whole, or cut to their DNA-binding domains."""
    if protein_input == "full":
        return manifest
    from tf_models.unseen.domains import domains_only

    # model_copy does not validate: only the proteins change, so the model version does too.
    return manifest.model_copy(update={"proteins": domains_only(manifest.proteins, config.data.proteins_fasta)})


def measure_held_out(config: PipelineConfig, manifest: Manifest, held_out: str, seen: dict) -> dict:
    """Train without ``held_out``, then score its test rows five ways.

    Parameters
    ----------
    manifest
        The shards' manifest, its proteins those the model is to be given
        (:func:`with_protein_input`).

    Returns
    -------
    dict
        ``{"tf", "nearest", "identity", "version", "seconds", "auprc": {cell: {condition: auPRC}}}``.
    """
    from tf_models.baselines import motif_log_odds
    from tf_models.distributed import train_on_spark

    started = time.monotonic()
    run_config = held_out_config(config, held_out)
    derived = without_tf(manifest, held_out, f"{run_config.run_dir}/shards")
    log.info("holding out %s: training on %s", held_out, ", ".join(derived.tfs))
    # strategy local: train_on_spark runs the loop in this process and needs no Spark session.
    summary = train_on_spark(None, run_config, derived)
    model_config = config.train.model if manifest.dnase else config.train.model.model_copy(update={"use_dnase": False})
    model = load_exported_model(
        versions.export_uri(run_config.run_dir, summary["version"]), model_config, len(manifest.cells), manifest.window
    )
    nearest, identity = nearest_protein(held_out, manifest.proteins)
    own = manifest.proteins[held_out]
    proteins = {
        "own": own,
        "shuffled": shuffled_protein(own, config.unseen.seed),
        "nearest": manifest.proteins[nearest],
    }
    motif = None
    if held_out in config.evaluate.motifs and config.evaluate.motif_db:
        motif = motif_log_odds(config.evaluate.motif_db, {held_out: config.evaluate.motifs[held_out]})[held_out]
    rows = read_test_rows([entry.path for entry in manifest.parquet[TEST]], held_out)
    scores = score_rows(
        model,
        rows,
        config.data.genome_fasta,
        manifest.window,
        proteins,
        model_config.aa_max_length,
        motif,
        config.evaluate.batch_size,
    )
    auprc = auprc_by_cell(rows, scores)
    for cell, values in auprc.items():
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


def run_unseen(config: PipelineConfig, manifest: Manifest) -> dict:
    """Measure every held-out TF and write ``unseen.json`` and ``unseen.png`` beside the LATEST report.

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
    results, notes = [], []
    for protein_input in config.unseen.protein_inputs:
        given = with_protein_input(config, manifest, protein_input)
        block = [{**measure_held_out(config, given, tf, seen), "input": protein_input} for tf in held_out]
        notes += [*verdict(table_rows(block), SIGNAL_MARGIN), *family_note(block, FAMILY_IDENTITY, SIGNAL_MARGIN)]
        results += block
    rows = table_rows(results)
    notes = [
        *notes,
        "Nearest TF: the other TF whose protein shares the most identical residues in a local alignment "
        "(identity over the shorter protein).",
        f"Each held-out model trained in one process (strategy local) on the other TFs' records only; "
        f"seen-TF model: version {version}.",
        "Trainings: "
        + ", ".join(f"{r['tf']} held out, {r['input']}: {r['seconds']:.0f} s (version {r['version']})" for r in results)
        + ".",
    ]
    report_dirs = [versions.report_uri(config.run_dir, version), versions.run_report_uri(config.run_dir)]
    uri = write_table(report_dirs, rows, notes, plot_auprc_bars)
    for note in notes:
        log.info("%s", note)
    return {"uri": uri, "rows": rows, "notes": notes, "results": results}
