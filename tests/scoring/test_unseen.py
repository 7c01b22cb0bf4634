"""Leave-one-TF-out (``tfbs unseen``): the controls, the filtered shards and a small run end to end."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from conftest import DEMO_CONFIG, REPO, model_inputs, small_config

from tf_models import MODEL_FORMAT
from tf_models.unseen.domains import domains_only
from tf_models.unseen.proteins import identical_aligned_residues, nearest_protein, protein_identity, shuffled_protein
from tf_models.unseen.run import family_control_config, held_out_config, run_unseen
from tf_models.unseen.score import load_exported_model
from tf_models.unseen.shards import count_by_tf, without_tf
from tf_models.unseen.table import COLUMNS, INPUTS, JSON_NAME, PNG_NAME, SITES, control_note, family_note
from tfbs import lineage
from tfbs.errors import BadInputError, ConfigError, MissingInputError
from tfbs.formats.records import RecordLayout
from tfbs.storage import local_path

PROTEIN = "MSTEKLAGHWQRPDYNVCFIAAKKLLEEGG" * 10


def test_shuffle_keeps_composition_and_length_and_changes_order():
    shuffled = shuffled_protein(PROTEIN, seed=3)
    assert len(shuffled) == len(PROTEIN)
    assert Counter(shuffled) == Counter(PROTEIN)
    assert shuffled != PROTEIN
    # Most positions change, not a rotation of a few residues.
    assert sum(a != b for a, b in zip(shuffled, PROTEIN)) > 0.8 * len(PROTEIN)
    assert shuffled_protein(PROTEIN, seed=3) == shuffled
    assert shuffled_protein(PROTEIN, seed=4) != shuffled


def _random_protein(rng: np.random.Generator, length: int) -> str:
    return "".join(rng.choice(list("ACDEFGHIKLMNPQRSTVWY"), size=length))


def test_nearest_protein_is_the_one_sharing_a_domain():
    rng = np.random.default_rng(0)
    domain = _random_protein(rng, 60)
    mutated = domain[:10] + ("A" if domain[10] != "A" else "C") + domain[11:]
    proteins = {
        "FOXA": _random_protein(rng, 150) + domain + _random_protein(rng, 90),
        "FOXB": _random_protein(rng, 40) + mutated + _random_protein(rng, 200),
        "ZNF": _random_protein(rng, 300),
        "LONG": _random_protein(rng, 600),  # long and unrelated: more chance matches, still not near
    }
    nearest, identity = nearest_protein("FOXA", proteins)
    assert nearest == "FOXB"
    assert 59 <= identical_aligned_residues(proteins["FOXA"], proteins["FOXB"]) <= 62
    shorter = min(len(proteins["FOXA"]), len(proteins["FOXB"]))
    assert identity == pytest.approx(identical_aligned_residues(proteins["FOXA"], proteins["FOXB"]) / shorter)
    assert protein_identity(proteins["FOXA"], proteins["ZNF"]) < 0.1
    assert nearest_protein("FOXB", proteins)[0] == "FOXA"
    with pytest.raises(ValueError, match="no protein besides"):
        nearest_protein("ZNF", {"ZNF": proteins["ZNF"]})


def test_a_family_label_gives_family_members_one_stand_in_and_other_families_another(small_shards):
    """``unseen.protein_inputs: [family]``: the demo's forkhead paralogues share one stand-in protein, every other
    family has its own, none carries a residue run of the real proteins."""
    from synthetic.proteins import synthetic_protein
    from tf_models.unseen.run import with_protein_input
    from tfbs.config import load_config

    config, manifest = small_shards
    demo = load_config(DEMO_CONFIG)
    proteins = {tf.name: synthetic_protein(tf.name, tf.family, demo.generate.seed)[0] for tf in demo.generate.tfs}
    given = with_protein_input(config, manifest.model_copy(update={"proteins": proteins}), "family").proteins
    assert given["FOXA1"] == given["FOXA2"] and len({given["CTCF"], given["EGR1"], given["FOXA1"]}) == 3
    assert all(len(given[tf]) == 300 and set(given[tf]) <= set("ACDEFGHIKLMNPQRSTVWY") for tf in given)
    assert all(protein_identity(given[tf], proteins[tf]) < 0.1 for tf in given)
    assert load_config(DEMO_CONFIG, ["unseen.protein_inputs=[full, family]"]).unseen.protein_inputs == [
        "full",
        "family",
    ]
    assert demo.unseen.protein_inputs == ["full", "dbd"]


def test_held_out_config_trains_in_one_process_in_its_own_folder(tmp_path):
    config = small_config(tmp_path, "unseen.epochs=2")
    derived = held_out_config(config, "CTCF")
    assert derived.run_dir == f"{config.run_dir}/unseen/CTCF"
    assert (derived.train.placement.strategy, derived.train.epochs, derived.train.steps) == ("local", 2, None)
    assert held_out_config(small_config(tmp_path), "CTCF").train.steps == config.train.steps
    assert held_out_config(small_config(tmp_path, "unseen.steps=20"), "CTCF").train.steps == 20
    # A motif file that may hold the held-out TF's motif starts no filter of its trainings.
    seeded = small_config(
        tmp_path, f"train.model.motif_cnn.seed_motif_db={REPO / 'bench/motifs/demo_tfs_and_partners.meme'}"
    )
    scan = held_out_config(seeded, "CTCF").train.model.motif_cnn
    assert seeded.train.model.motif_cnn.seed_motif_db and (scan.seed_motifs, scan.seed_motif_db) == (True, None)


def test_filtered_shards_hold_no_row_of_the_held_out_tf(small_shards, tmp_path):
    _, manifest = small_shards
    layout = RecordLayout(manifest.window)
    derived = without_tf(manifest, "CTCF", f"file://{tmp_path}/shards")
    assert derived.tfs == ["FOXA1"] and list(derived.proteins) == ["FOXA1"]
    ctcf, foxa1 = manifest.tfs.index("CTCF"), manifest.tfs.index("FOXA1")
    for split, files in manifest.records.items():
        for before, after in [
            (files.positives, derived.records[split].positives),
            *zip(files.negatives, derived.records[split].negatives),
        ]:
            original, filtered = count_by_tf(before, layout), count_by_tf(after, layout)
            assert original[ctcf] > 0  # there was something to remove
            # FOXA1 renumbered to 0, every row of it kept; nothing else left.
            assert filtered[0] == original[foxa1] == sum(entry.rows for entry in after)
            assert filtered.sum() == original.sum() - original[ctcf]
    with pytest.raises(ValueError, match="cannot hold out"):
        without_tf(manifest, "EGR1", f"file://{tmp_path}/other")


#: What a held-out model must reach on the TFs it trained on (mean test auPRC per protein input, 20
#: steps, filters seeded): 0.63 with whole proteins and 0.56 with their DNA-binding domains; with
#: its training labels shuffled 0.38 and 0.34 (the seeded filters alone read the motifs).
UNSEEN_TRAINED_MIN_MEAN_AUPRC = 0.48


def _seen_model(config, manifest) -> dict:
    """A LATEST version with a report, as evaluation leaves it (the seen-TF reference)."""
    version_lineage = lineage.claim_version(config.run_dir, lineage.Lineage.of(config, manifest, MODEL_FORMAT))
    results = {f"{tf}/{cell}": {"auprc": 0.5} for tf in manifest.tfs for cell in manifest.cells}
    lineage.write_latest(config.run_dir, version_lineage, 0.9, 0.5)
    report_dir = local_path(lineage.report_uri(config.run_dir, version_lineage.version))
    Path(report_dir).mkdir(parents=True, exist_ok=True)
    (Path(report_dir) / "report.json").write_text(json.dumps({"results": results}))
    return results


def test_unseen_end_to_end_writes_the_table(small_shards, tmp_path):
    config, manifest = small_shards
    run_config = small_config(
        tmp_path, f"data.root={local_path(config.data.root)}", f"shards_dir={config.shards_uri}", "unseen.steps=20"
    )
    with pytest.raises(MissingInputError, match="no evaluated model"):
        run_unseen(run_config, manifest)
    with pytest.raises(ConfigError, match="unseen.tfs"):
        run_unseen(small_config(tmp_path, "unseen.tfs=[EGR1]"), manifest)
    _seen_model(run_config, manifest)
    # The small shards have no family (CTCF, FOXA1): the control, given, measures nothing and says so.
    result = run_unseen(run_config, manifest, control=(run_config, manifest))

    for report_dir in (
        lineage.report_uri(run_config.run_dir, lineage.read_latest(run_config.run_dir).version),
        lineage.run_report_uri(run_config.run_dir),
    ):
        folder = Path(local_path(report_dir))
        table = json.loads((folder / JSON_NAME).read_text())
        assert table["columns"] == COLUMNS and table["images"] == [PNG_NAME]
        assert (folder / PNG_NAME).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert table["rows"] == result["rows"] and table["notes"]
    rows = result["rows"]
    # Every held-out TF in every cell, each scoring a probability-ranked auPRC.
    # conf/demo.yaml gives the model whole proteins, then their DNA-binding domains.
    assert sorted((row[0], row[1], row[3]) for row in rows) == sorted(
        (tf, cell, given)
        for tf in manifest.tfs
        for cell in manifest.cells
        for given in (INPUTS[i] for i in run_config.unseen.protein_inputs)
    )
    for row in rows:
        assert row[2] == SITES["shared"]
        assert row[4].startswith("FOXA1" if row[0] == "CTCF" else "CTCF")
        assert all(0.0 <= value <= 1.0 for value in row[5:11]), row
        assert row[9] == 0.5  # the seen reference, from the LATEST report
        # Five shuffles (unseen.shuffles), their mean inside their range.
        low, high, count = re.fullmatch(r"(\d\.\d{3})-(\d\.\d{3}) \((\d+)\)", row[11]).groups()
        assert count == "5" and float(low) - 5e-4 <= row[6] <= float(high) + 5e-4
    # A held-out model that learnt: on the TFs it trained on, per protein input, it passes the floor a
    # model of shuffled labels fails (the unseen TF's own figures cannot tell them apart after 20 steps).
    for given in {row[3] for row in rows}:
        trained = [row[10] for row in rows if row[3] == given]
        assert np.mean(trained) > UNSEEN_TRAINED_MIN_MEAN_AUPRC, (given, trained)
    assert any("held-out models score the TFs they trained on" in note for note in result["notes"])
    assert any("protein branch" in note for note in result["notes"])
    assert any("no held-out TF has a family member" in note for note in result["notes"])
    cell_scores = next(iter(result["results"][0]["auprc"].values()))
    assert sorted(k for k in cell_scores if k.startswith("shuffled_")) == [f"shuffled_{i}" for i in range(5)]

    # The scored model is the export: the same logits as its own signature, on the TFs it was trained with.
    held = result["results"][0]
    export = lineage.export_uri(held_out_config(run_config, held["tf"]).run_dir, held["version"])
    model = load_exported_model(export, run_config.train.model, len(manifest.cells), manifest.window)
    rng = np.random.default_rng(1)
    dna = [rng.choice(list(b"ACGT"), size=manifest.window).astype(np.uint8).tobytes() for _ in range(4)]
    trained_with = [manifest.proteins[tf] for tf in manifest.tfs if tf != held["tf"]]
    cells, dnase = [0, 1, 0, 1], [0.0, 1.0, 0.5, 0.0]
    inputs = model_inputs(dna, trained_with, run_config.train.model.aa_max_length, [0] * 4, cells, dnase)
    indexed = tf.saved_model.load(local_path(export)).signatures["indexed"](
        dna=tf.constant(dna), tf_index=tf.constant([0] * 4), cell_index=tf.constant(cells), dnase=tf.constant(dnase)
    )
    np.testing.assert_allclose(model(inputs).numpy(), indexed["logit"].numpy(), rtol=1e-4, atol=1e-5)
    # And with a protein it never saw, as the export's raw-sequence signature scores it.
    protein = shuffled_protein(manifest.proteins[held["tf"]], seed=1)
    inputs = model_inputs(dna, [protein], run_config.train.model.aa_max_length, [0] * 4, cells, dnase)
    served = tf.saved_model.load(local_path(export)).signatures["serving_default"](
        dna=tf.constant(dna),
        protein=tf.constant([protein] * 4),
        cell_index=tf.constant(cells),
        dnase=tf.constant(dnase),
    )
    np.testing.assert_allclose(model(inputs).numpy(), served["logit"].numpy(), rtol=1e-4, atol=1e-5)


def test_family_note_says_whether_the_unseen_protein_itself_carries_the_signal():
    def scored(own: float, shuffled: float, nearest: float) -> list[dict]:
        values = {"own": own, "shuffled": shuffled, "nearest": nearest}
        return [
            {"tf": "FOXA1", "nearest": "FOXA2", "identity": 0.28, "auprc": {"HepG2": values}},
            {"tf": "CTCF", "nearest": "FOXA2", "identity": 0.02, "auprc": {"HepG2": {"own": 0.04, "nearest": 0.03}}},
        ]

    alone, identifier = family_note(scored(0.2, 0.21, 0.6), family_identity=0.2, margin=0.02)
    assert "without a family member (CTCF): own protein 0.040" in alone
    assert "FOXA1 (via FOXA2)" in identifier and "CTCF" not in identifier
    assert "own protein gives 0.200, a shuffled one 0.210, the member's protein 0.600" in identifier
    assert "TF identifier" in identifier and "reads the protein" not in identifier
    _, reads = family_note(scored(0.55, 0.12, 0.6), family_identity=0.2, margin=0.02)
    assert "reads the protein" in reads and "still does better" in reads and "TF identifier" not in reads
    assert "no family" in family_note(scored(0.2, 0.2, 0.6)[1:], family_identity=0.2, margin=0.02)[-1]


def test_family_control_plants_the_run_data_sites_apart_in_its_own_folder(tmp_path):
    config = small_config(tmp_path)
    control = family_control_config(config)
    assert control.generate.family_share == 0.0 and config.generate.family_share == 0.8
    assert control.generate.model_copy(update={"family_share": 0.8}) == config.generate
    root = f"{config.run_dir}/unseen/family_control"
    assert (control.run_dir, control.shards_uri) == (root, f"{root}/shards")
    assert control.data.labels_dir == f"{root}/data/labels" and control.data.tfs == config.data.tfs
    with pytest.raises(ConfigError, match="unseen.family_control"):
        family_control_config(config.model_copy(update={"generate": None}))


def test_control_note_tells_transfer_through_the_protein_from_shared_sites():
    def block(sites: str, own: float, shuffles: list[float], nearest: float) -> dict:
        values = {"own": own, "nearest": nearest, **{f"shuffled_{i}": v for i, v in enumerate(shuffles)}}
        return {"tf": "FOXA2", "input": "full", "sites": sites, "auprc": {"HepG2": values}}

    shared = block("shared", 0.5, [0.2, 0.3], 0.6)
    (reads,) = control_note([shared, block("apart", 0.45, [0.1, 0.2], 0.5)], margin=0.02)
    assert "sites apart: own 0.450, shuffled 0.150 (best shuffle 0.200)" in reads
    assert "transfer goes through the protein" in reads
    (sites_only,) = control_note([shared, block("apart", 0.22, [0.1, 0.3], 0.5)], margin=0.02)
    assert "came through the sites the family shares" in sites_only
    assert control_note([shared], margin=0.02) == []


def test_domains_are_cut_from_the_fasta_headers(tmp_path):
    fasta = tmp_path / "proteins.fa"
    fasta.write_text(">TFA family=f dbd=2-5\nMKVLAWQ\n>TFB family=g\nMKKK\n")
    assert domains_only({"TFA": "MKVLAWQ"}, str(fasta)) == {"TFA": "VLA"}
    with pytest.raises(BadInputError, match="no dbd=START-END span in the header of TFB"):
        domains_only({"TFA": "MKVLAWQ", "TFB": "MKKK"}, str(fasta))
    with pytest.raises(BadInputError, match="runs past"):
        domains_only({"TFA": "MKV"}, str(fasta))
