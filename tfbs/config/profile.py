"""The generator's realistic profile: ``generate.realistic`` (used when ``generate.profile: realistic``).

Each value's source, a published observation or an assumption, is in
``docs/model-quality.md`` ("The realistic profile"); the defaults here are
those values.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from tfbs.config.base import Section


class PartnerSpec(Section):
    """A partner (cofactor) TF: not predicted, read only through its motif and its expression."""

    name: str = Field(description="gene name, as written in the RNA-seq files")
    motif: str = Field(description="motif id in generate.motif_db")
    expressed_in: list[str] | None = Field(
        None,
        description="cells that express it (None: drawn from the seed with partner_presence, at least one cell "
        "with and one without)",
    )


class RealisticConfig(Section):
    """Cells that differ as they do in life: partners, binding outside DNase peaks, a structured background."""

    partners: list[PartnerSpec] = Field(
        default_factory=list, description="cofactors; a TF names its own in tfs[].partners"
    )
    partner_presence: float = Field(0.5, gt=0, lt=1, description="chance a cell expresses a partner (drawn ones)")
    partner_site_fraction: float = Field(
        0.5,
        ge=0,
        le=1,
        description="of a partnered TF's motif sites, those with a partner motif nearby that bind only where "
        "the partner is expressed",
    )
    indirect_share: float = Field(
        0.7,
        ge=0,
        le=1,
        description="of a partnered TF's motif-less sites, those bound through a partner (its motif, no TF motif)",
    )
    partner_leak: float = Field(
        0.05, ge=0, le=1, description="relative chance a partner-dependent site binds where the partner is absent"
    )
    partner_offset_bp: tuple[int, int] = Field(
        (25, 90), description="distance range of a partner motif's centre from its site's centre"
    )
    partner_decoys_per_mb: float = Field(
        25.0, ge=0, description="open regions holding a partner motif and no TF site (the partner's own sites)"
    )
    closed_binding: float = Field(
        0.1, ge=0, le=1, description="relative chance a site binds where its location is closed (no DNase peak)"
    )
    open_correlation: float = Field(
        0.45, ge=0, lt=0.5, description="variance share of a location's openness common to every cell"
    )
    dnase_summit_sd: float = Field(40.0, gt=0, description="bp between an open location's centre and its DNase summit")
    motif_offset_sd: float = Field(
        50.0, ge=0, description="bp between a site's centre (its ChIP summit) and its motif's centre"
    )
    motif_offset_max: int = Field(100, ge=0, description="motif offsets are clipped to this many bp")
    cpg_islands_per_mb: float = Field(9.4, ge=0, description="CpG islands, each a constitutively open promoter")
    cpg_island_bp: tuple[int, int] = Field((200, 2000), description="CpG island length range")
    cpg_island_gc: float = Field(0.65, gt=0, lt=1, description="G+C content of a CpG island")
    promoter_open_fraction: float = Field(0.9, gt=0, le=1, description="chance a promoter is open in a cell")
    repeat_fraction: float = Field(0.107, ge=0, lt=0.5, description="share of the genome in copies of one repeat")
    repeat_bp: int = Field(300, gt=0, description="length of the repeat's consensus")
    repeat_divergence: float = Field(0.09, ge=0, lt=1, description="share of a copy's bases mutated from the consensus")
    expressed_tpm: float = Field(20.0, gt=0, description="median TPM of an expressed gene")
    absent_tpm: float = Field(0.2, ge=0, description="median TPM of a gene not expressed")
    tpm_sigma: float = Field(0.6, ge=0, description="log-normal spread of TPM across cells and replicates")

    @model_validator(mode="after")
    def _ranges(self) -> "RealisticConfig":
        for name in ("partner_offset_bp", "cpg_island_bp"):
            low, high = getattr(self, name)
            if not 0 < low <= high:
                raise ValueError(f"{name}: need 0 < low <= high, got {(low, high)}")
        names = [p.name for p in self.partners]
        if len(set(names)) != len(names):
            raise ValueError(f"partners: names must be unique, got {names}")
        return self
