"""The shard manifest: every input row accounted for, by outcome.

Outcomes of one (bin, cell) row:

``kept``
    written to the shards (by split and class);
``excluded_blacklist``
    the bin overlaps the blacklist;
``excluded_ambiguous``
    label A outside the test split (A never trains; test keeps it so
    evaluation can remove it the official way);
``excluded_heldout_cell``
    a row of a held-out cell (``data.heldout_cells``) outside the test
    split: no decision reads its label, training never sees it;
``dropped_sampling``
    an unbound bin not drawn for the configured U:B ratio;
``dropped_window_out_of_bounds``
    the sequence window runs off the chromosome (``preprocess.pad_windows``
    pads it with N instead);
``dropped_window_n``
    the window holds more N than ``preprocess.max_n_fraction``;
``rejected_bad_line``
    the line was malformed and set aside (``preprocess.bad_rows=set_aside``);
    the manifest lists each with its line and reason.

An unbound row kept by several negative draws counts once; the manifest's
``draws`` holds the negatives of each draw.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from tfbs import storage
from tfbs.errors import BadInputError

#: 4: the fingerprint holds a content digest of every input; every file entry its SHA-256.
#: 5: a row's ``dnase`` is its proximity to the cell's DNase summit (tfbs.formats.annotate.peak_proximity), not a flag.
#: 6: BLAKE3 instead of SHA-256, in file entries (``blake3``) and the fingerprint (kind ``blake3``).
#: 7: held-out cells (``heldout_cells``, the outcome ``excluded_heldout_cell``).
#: 8: file entries' paths relative to the shard folder in ``manifest.json`` (a moved folder reads its own files).
SCHEMA_VERSION = 8
MANIFEST_NAME = "manifest.json"

#: Outcomes decided per (bin, cell) inside the tasks, by code.
OUTCOMES = (
    "kept",
    "excluded_blacklist",
    "excluded_ambiguous",
    "dropped_sampling",
    "dropped_window_out_of_bounds",
    "dropped_window_n",
    "excluded_heldout_cell",
)
REJECTED = "rejected_bad_line"


class ManifestMismatchError(ValueError):
    """The outcomes of a TF/cell do not add up to its input rows."""


def tally_outcomes(
    rows: Iterable[tuple[str, str, str, str, str, int]],
) -> dict[str, dict[str, dict]]:
    """Fold ``(tf, cell, outcome, split, label, count)`` rows into nested counts.

    Returns
    -------
    dict
        ``{tf: {cell: {"kept": {split: {label: n}}, outcome: n, ...}}}``
    """
    tree: dict = defaultdict(lambda: defaultdict(dict))
    for tf, cell, outcome, split, label, count in rows:
        entry = tree[tf][cell]
        if outcome == "kept":
            entry.setdefault("kept", {}).setdefault(split, {})
            entry["kept"][split][label] = entry["kept"][split].get(label, 0) + count
        else:
            entry[outcome] = entry.get(outcome, 0) + count
    return {tf: dict(cells) for tf, cells in tree.items()}


def check_accounting(totals: dict[str, dict[str, int]], input_rows: dict[str, int]) -> None:
    """Raise unless every TF/cell's outcomes sum to the TF's input rows.

    Parameters
    ----------
    totals
        ``{tf: {cell: rows accounted for}}``.
    input_rows
        ``{tf: data rows of its label file}``.

    Raises
    ------
    ManifestMismatchError
        Naming the TF/cell and both numbers.
    """
    for tf, cells in totals.items():
        for cell, accounted in cells.items():
            if accounted != input_rows[tf]:
                raise ManifestMismatchError(
                    f"{tf}/{cell}: outcomes add up to {accounted}, input has {input_rows[tf]} rows"
                )


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FileEntry(_Record):
    """One written file, its row count and the BLAKE3 of its bytes (as ``b3sum`` prints it).

    The checksum is taken from the bytes as the task wrote them, so a reader
    can tell a copy of this file from one of shards rebuilt since at the
    same path (record files are fixed-length: the size does not tell).
    """

    path: str
    rows: int = Field(ge=0)
    blake3: str = Field(pattern=r"^[0-9a-f]{64}$")


class SplitRecords(_Record):
    """The training-record files of one split: positives, and each negative draw's."""

    positives: list[FileEntry]
    negatives: list[list[FileEntry]]


class CellOutcomes(_Record):
    """What happened to every input row of one TF/cell (see the module docstring)."""

    kept: dict[str, dict[str, int]] = Field(default_factory=dict, description="split -> label -> rows")
    excluded_blacklist: int = 0
    excluded_ambiguous: int = 0
    dropped_sampling: int = 0
    dropped_window_out_of_bounds: int = 0
    dropped_window_n: int = 0
    excluded_heldout_cell: int = 0
    rejected_bad_line: int = 0

    def kept_rows(self, split: str, label: str | None = None) -> int:
        """Rows kept in ``split``, of one label or all."""
        by_label = self.kept.get(split, {})
        return by_label.get(label, 0) if label else sum(by_label.values())

    def total(self) -> int:
        """Every row counted once, whatever its outcome."""
        dropped = sum(getattr(self, outcome) for outcome in (*OUTCOMES[1:], REJECTED))
        return dropped + sum(self.kept_rows(split) for split in self.kept)


class RejectedLine(_Record):
    line: int
    reason: str


class InputFile(_Record):
    """A label file: where it is, its data rows and the lines set aside."""

    uri: str
    input_rows: int = Field(ge=0)
    rejected: list[RejectedLine] = Field(default_factory=list)


class Splits(_Record):
    test_chroms: list[str]
    valid_chroms: list[str]


class Manifest(_Record):
    """The shard directory's description, the contract between preprocessing and training.

    Validated when built and when read: every TF has its cells, proteins,
    input file and counts, and every TF/cell's outcomes add up to its label
    file's rows.
    """

    schema_version: int
    config_digest: str
    fingerprint: dict = Field(
        description="content digests of every input and of the data/preprocess sections "
        "(preprocess.fingerprint.input_fingerprint)"
    )
    created_unix: int
    tfs: list[str] = Field(min_length=1)
    cells: list[str] = Field(min_length=1)
    cells_by_tf: dict[str, list[str]]
    heldout_cells: list[str] = Field(
        default_factory=list, description="cells whose labels only the test split holds (data.heldout_cells)"
    )
    splits: Splits
    window: int = Field(gt=0)
    dnase: bool = Field(description="whether DNase peaks annotated the bins (else every bin reads closed)")
    negative_draws: int = Field(gt=0)
    record_layout: dict[str, int]
    inputs: dict[str, InputFile]
    draw_probabilities: dict[str, tuple[float, float]] = Field(description="TF/cell/split -> (p_open, p_closed)")
    counts: dict[str, dict[str, CellOutcomes]]
    draws: dict[str, dict[str, dict[str, list[int]]]] = Field(description="TF -> cell -> split -> negatives per draw")
    parquet: dict[str, list[FileEntry]]
    records: dict[str, SplitRecords]
    proteins: dict[str, str]

    @model_validator(mode="before")
    @classmethod
    def _current_schema(cls, data: Any) -> Any:
        # Before the fields: an older manifest's file entries would fail one by one, hiding the reason.
        version = data.get("schema_version") if isinstance(data, dict) else None
        if version != SCHEMA_VERSION:
            raise ValueError(f"schema_version {version}, expected {SCHEMA_VERSION}: run `tfbs preprocess` again")
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Manifest:
        for part, names in (("cells_by_tf", self.cells_by_tf), ("inputs", self.inputs), ("proteins", self.proteins)):
            missing = [tf for tf in self.tfs if tf not in names]
            if missing:
                raise ValueError(f"{part}: no entry for {missing}")
        check_accounting(
            {tf: {cell: outcomes.total() for cell, outcomes in cells.items()} for tf, cells in self.counts.items()},
            {tf: entry.input_rows for tf, entry in self.inputs.items()},
        )
        return self


def _with_paths(manifest: Manifest, change: Callable[[str], str]) -> Manifest:
    """``manifest`` with ``change`` applied to the path of every file entry (Parquet and record files)."""

    def entries(files: list[FileEntry]) -> list[FileEntry]:
        return [entry.model_copy(update={"path": change(entry.path)}) for entry in files]

    parquet = {split: entries(files) for split, files in manifest.parquet.items()}
    records = {
        split: SplitRecords(
            positives=entries(split_records.positives), negatives=[entries(d) for d in split_records.negatives]
        )
        for split, split_records in manifest.records.items()
    }
    return manifest.model_copy(update={"parquet": parquet, "records": records})


def write_manifest(out_uri: str, manifest: Manifest, root: str | None = None) -> str:
    """Write the manifest JSON under ``out_uri``; returns its URI.

    File paths under ``root`` (the shard folder the files will be read from,
    ``out_uri`` by default; a staging folder's manifest names the final
    one) are written relative to it, so the folder may be moved or copied
    whole (:func:`read_manifest` roots them where it finds the manifest).
    """
    base = (root or out_uri).rstrip("/") + "/"
    relative = _with_paths(manifest, lambda path: path.removeprefix(base))
    target = f"{out_uri}/{MANIFEST_NAME}"
    storage.write_text(target, relative.model_dump_json(indent=2))
    return target


def read_manifest(shards_uri: str) -> Manifest:
    """Read and validate a shard directory's manifest.

    Raises
    ------
    MissingInputError
        If there is no manifest (preprocessing has not run, or did not finish).
    BadInputError
        If it is of another schema version or does not validate.
    """
    from tfbs.storage import require

    target = require(f"{shards_uri}/{MANIFEST_NAME}", "shard manifest (run `tfbs preprocess` first)")
    try:
        stored = Manifest.model_validate_json(storage.read_text(target))
    except ValidationError as err:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'manifest'}: {e['msg']}" for e in err.errors())
        raise BadInputError(target, 0, problems) from None
    # Relative paths are the shard folder's own: rooted where the manifest is now, wherever it was built.
    base = shards_uri.rstrip("/")
    return _with_paths(stored, lambda path: path if "://" in path or path.startswith("/") else f"{base}/{path}")
