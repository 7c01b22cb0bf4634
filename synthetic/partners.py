"""Partners (cofactors) of the realistic profile: who expresses them, their motifs, the RNA-seq files.

A partnered TF binds some of its sites only with a partner: motif sites
with the partner's motif nearby, and indirect sites holding the partner's
motif and none of the TF's. Where the partner is not expressed those sites
stay (mostly) unbound although their chromatin may be open, so binding
differs between cells that DNase alone does not tell apart; the partner's
expression, in each cell's RSEM ``gene_expression`` files (the challenge's
RNA-seq input), tells them apart.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tfbs.config import GenerateConfig

#: Filler genes of every expression file (named GENE0001...), expressed at random as most genes are.
FILLER_GENES = 60
#: RSEM's ``genes.results`` columns, as the challenge's ``gene_expression.<CELL>.biorep<N>.tsv`` have them.
RSEM_COLUMNS = ("gene_id", "transcript_id(s)", "length", "effective_length", "expected_count", "TPM", "FPKM")
BIOREPS = (1, 2)


def partner_presence(gen: GenerateConfig, rng: np.random.Generator) -> np.ndarray:
    """Which cells express each partner, ``(partners, cells)`` bool.

    A partner's ``expressed_in`` is taken as given; otherwise each cell
    expresses it with ``partner_presence``, drawn again until at least one
    cell does and one does not (with one cell, it does).
    """
    cells = list(gen.cells)
    present = np.zeros((len(gen.realistic.partners), len(cells)), dtype=bool)
    for row, partner in enumerate(gen.realistic.partners):
        if partner.expressed_in is not None:
            present[row] = [cell in partner.expressed_in for cell in cells]
            continue
        while True:
            draw = rng.random(len(cells)) < gen.realistic.partner_presence
            if len(cells) == 1 or 0 < draw.sum() < len(cells):
                break
        present[row] = draw
    return present


def expression_tables(gen: GenerateConfig, present: np.ndarray, rng: np.random.Generator) -> dict[str, list[dict]]:
    """Per cell and biological replicate, TPM of every gene: the TFs, the partners and filler genes.

    The TFs are expressed in every cell (they bind there); a partner at
    ``expressed_tpm`` where present and ``absent_tpm`` elsewhere; each value
    log-normal around its median with ``tpm_sigma``, per cell and replicate.

    Returns
    -------
    dict[str, list[dict]]
        ``{cell: [{gene: TPM} per replicate]}``.
    """
    profile = gen.realistic
    genes = [spec.name for spec in gen.tfs] + [p.name for p in profile.partners]
    filler = [f"GENE{i:04d}" for i in range(1, FILLER_GENES + 1)]
    filler_median = np.exp(rng.normal(np.log(5.0), 1.5, len(filler)))
    tables: dict[str, list[dict]] = {}
    for column, cell in enumerate(gen.cells):
        median = [profile.expressed_tpm] * len(gen.tfs) + [
            profile.expressed_tpm if present[row, column] else profile.absent_tpm
            for row in range(len(profile.partners))
        ]
        cell_level = np.asarray(median) * rng.lognormal(0.0, profile.tpm_sigma, len(median))
        tables[cell] = []
        for _rep in BIOREPS:
            named = cell_level * rng.lognormal(0.0, profile.tpm_sigma / 3, len(median))
            rest = filler_median * rng.lognormal(0.0, profile.tpm_sigma, len(filler))
            tables[cell].append(dict(zip(genes + filler, np.concatenate([named, rest]).tolist())))
    return tables


def write_expression(path: Path, tpm: dict[str, float], rng: np.random.Generator) -> None:
    """One RSEM ``genes.results`` file: the TPM given, with lengths, counts and FPKM consistent with it."""
    genes = sorted(tpm)
    length = rng.integers(800, 6000, len(genes))
    effective = np.maximum(length - 180, 1)
    values = np.array([tpm[g] for g in genes])
    counts = np.round(values * effective / 1e3 * 20, 2)
    fpkm = values * 0.9
    lines = ["\t".join(RSEM_COLUMNS)]
    for gene, size, eff, count, tpm_value, fpkm_value in zip(genes, length, effective, counts, values, fpkm):
        lines.append(f"{gene}\t{gene}.1\t{size}\t{eff:.2f}\t{count:.2f}\t{tpm_value:.2f}\t{fpkm_value:.2f}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def partner_offsets(n: int, offset_bp: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
    """Signed distance of each partner motif's centre from its site's centre, in ``offset_bp`` either side."""
    distance = rng.integers(offset_bp[0], offset_bp[1] + 1, size=n)
    return np.where(rng.random(n) < 0.5, -distance, distance).astype(np.int64)
