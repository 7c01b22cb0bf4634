"""What a model version's motif filters started as, in words, from its lineage (reports name it beside results)."""

from __future__ import annotations

from typing import Any


def seeding_note(train: dict[str, Any]) -> tuple[str, str]:
    """What the model's filters started as, from a version's lineage ``train`` tree: a short tag and a sentence.

    Examples
    --------
    >>> seeding_note({"model": {"architecture": "motif_cnn", "motif_cnn": {"seed_motifs": False}}})[0]
    'filters started at random'
    >>> seeding_note({"model": {"architecture": "motif_cnn", "motif_cnn": {"seed_motifs": True}},
    ...     "seed_motifs_from": {"motifs": {"CTCF": "CTCF_f2"}, "motif_db_blake3": "ab"}})[0]
    'filters seeded with CTCF_f2'
    """
    model = train.get("model", {})
    seeded_from = train.get("seed_motifs_from")
    if model.get("architecture") != "motif_cnn" or not seeded_from:
        return (
            "filters started at random",
            "No filter started as a known motif (train.model.motif_cnn.seed_motifs off, or no motif configured): "
            "a TF's own motif as the best match is a motif the model found unaided.",
        )
    if "motifs" in seeded_from:
        names = sorted(set(seeded_from["motifs"].values()))
        return (
            f"filters seeded with {', '.join(names)}",
            f"The first filters started as the known motifs {', '.join(names)} (train.model.motif_cnn.seed_motifs; on "
            "generated data, the very motifs the generator planted): a recovered motif shows what the model uses, "
            "not that it found it unaided.",
        )
    source = model.get("motif_cnn", {}).get("seed_motif_db")
    return (
        f"filters seeded from {source}",
        f"The first filters started as the motifs of {source} (train.model.motif_cnn.seed_motif_db).",
    )
