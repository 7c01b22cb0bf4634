"""A shard build as a typed plan: what the driver decides once and the Spark tasks read.

Everything here is frozen and picklable: the driver builds a
:class:`ShardPlan` from the configuration (:func:`plan_shards`) and the tasks
get its :class:`TaskSettings` in their closures. The rows the stages hand
back to the driver are named after the data contract's fields
(``docs/formats.md``): ``tf``, ``chrom``, ``split``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

import numpy as np

from preprocess.fingerprint import CheckedInputs
from preprocess.label_reader import ReadReport
from preprocess.shard_writer import ChromResult, ShardContext
from preprocess.staging import new_staging_uri
from tfbs.config import PipelineConfig
from tfbs.formats.dream import split_of
from tfbs.formats.genome import FaiEntry, read_fai
from tfbs.formats.records import RecordLayout


@dataclass(frozen=True)
class GenomeSource:
    """The genome FASTA and its index, from which each task cuts its chromosome's windows."""

    uri: str
    fai: dict[str, FaiEntry]


@dataclass(frozen=True)
class LabelFile:
    """Stage 1's unit of work: one TF's label file (``.gz`` cannot be split) and its cells in column order."""

    tf: str
    uri: str
    cells: list[str]


@dataclass(frozen=True)
class TaskSettings:
    """What every chromosome task needs: how to read, decide and write (``preprocess`` settings of the config)."""

    genome: GenomeSource
    context: ShardContext
    window: int
    max_n_fraction: float
    pad_windows: bool
    negative_draws: int
    seed: int
    bad_rows: Literal["fail", "set_aside"]
    read_block_bytes: int
    #: Cells whose labels only the test split reads (``data.heldout_cells``).
    heldout_cells: frozenset[str] = frozenset()
    #: Keep every U bin that is B in another training cell (``preprocess.cross_cell_negatives``).
    cross_cell_negatives: bool = False
    #: The record-writing task of every record file ``(file key, number)``; known from stage 2 on.
    writer_of: Mapping[tuple[str, int], int] = field(default_factory=dict)


@dataclass(frozen=True)
class ShardPlan:
    """A shard build decided on the driver before any task runs."""

    tfs: list[str]
    cells_by_tf: dict[str, list[str]]
    #: Every cell of any TF, sorted: the shards' ``cell_index``.
    cells: list[str]
    label_files: list[LabelFile]
    chroms: list[str]
    splits: dict[str, str]
    layout: RecordLayout
    rows_per_record_file: int
    staging_uri: str
    shards_uri: str
    settings: TaskSettings

    def with_record_files(self, record_files: dict[str, int], writer_of: Mapping[tuple[str, int], int]) -> ShardPlan:
        """The plan once stage 1's counts have fixed the record files and their writers."""
        context = dataclasses.replace(self.settings.context, record_files=record_files)
        settings = dataclasses.replace(self.settings, context=context, writer_of=writer_of)
        return dataclasses.replace(self, settings=settings)


class StagedChromosome(NamedTuple):
    """Stage 1's row of one (TF, chromosome): its class counts, and its result if it was written there."""

    tf: str
    chrom: str
    split: str
    n_bins: int
    #: int64 (n_cells, 3): bound, open unbound, closed unbound (:func:`preprocess.segregate.class_counts`).
    class_counts: np.ndarray
    #: The written shard of a test chromosome; None for one stored in the staging folder.
    result: ChromResult | None


class FileReport(NamedTuple):
    """Stage 1's last row of a label file: what reading it found."""

    tf: str
    report: ReadReport


def plan_shards(config: PipelineConfig, inputs: CheckedInputs) -> ShardPlan:
    """The plan of a build of ``config``'s shards from its checked inputs (reads the genome's index)."""
    data, pp = config.data, config.preprocess
    cells_by_tf = inputs.cells_by_tf
    tfs = list(data.tfs)
    cells = sorted({cell for tf_cells in cells_by_tf.values() for cell in tf_cells})
    fai = read_fai(data.genome_fasta)
    chroms = list(fai)
    layout = RecordLayout(pp.window)
    staging_uri = new_staging_uri(config.shards_uri)
    context = ShardContext(
        staging_uri, tfs, cells, pp.window, pp.seed, pp.rows_per_row_group, pp.test_rows_per_row_group, layout
    )
    settings = TaskSettings(
        genome=GenomeSource(data.genome_fasta, fai),
        context=context,
        window=pp.window,
        max_n_fraction=pp.max_n_fraction,
        pad_windows=pp.pad_windows,
        negative_draws=pp.negative_draws,
        seed=pp.seed,
        bad_rows=pp.bad_rows,
        read_block_bytes=pp.read_block_mb << 20,
        heldout_cells=frozenset(data.heldout_cells),
        cross_cell_negatives=pp.cross_cell_negatives,
    )
    return ShardPlan(
        tfs=tfs,
        cells_by_tf=cells_by_tf,
        cells=cells,
        label_files=[LabelFile(tf, data.labels_uri(tf), cells_by_tf[tf]) for tf in tfs],
        chroms=chroms,
        splits={chrom: split_of(chrom, pp.test_chroms, pp.valid_chroms) for chrom in chroms},
        layout=layout,
        rows_per_record_file=pp.rows_per_record_file,
        staging_uri=staging_uri,
        shards_uri=config.shards_uri,
        settings=settings,
    )
