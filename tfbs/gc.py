"""What a run folder holds that nothing will read again: killed writers' leftovers and versions past retention.

``tfbs gc`` lists or removes them (:func:`collect`); every stage already
sweeps leftovers older than :data:`tfbs.storage.leftovers.STALE_AGE` on
start, and evaluation prunes versions past ``evaluate.keep_versions``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from tfbs import lineage, storage
from tfbs.config import PipelineConfig


@dataclass(frozen=True)
class Collected:
    """What :func:`collect` found (and removed, unless a dry run)."""

    leftovers: list[storage.Leftover]
    versions: list[str]

    def describe(self, removed: bool) -> str:
        """One line per leftover and pruned version, then the totals."""
        verb = "removed" if removed else "would remove"
        lines = [f"{verb} {leftover.kind} {leftover.uri}" for leftover in self.leftovers]
        lines += [f"{verb} model version {version} (evaluate.keep_versions)" for version in self.versions]
        lines.append(
            f"{verb} {len(self.leftovers)} leftover(s) of killed writers and {len(self.versions)} old version(s)"
        )
        return "\n".join(lines)


def collect(config: PipelineConfig, older_than: timedelta, dry_run: bool = False) -> Collected:
    """Find, and unless ``dry_run`` remove, the leftovers under ``config.run_dir`` older than ``older_than``
    (:mod:`tfbs.storage.leftovers`) and the model versions past ``evaluate.keep_versions``.

    ``older_than`` of zero takes every leftover: only when no run of this
    folder is writing (a build's staging folder is a leftover only once
    its build is dead).
    """
    keep = config.evaluate.keep_versions
    if dry_run:
        return Collected(
            storage.find_leftovers(config.run_dir, older_than), lineage.prunable_versions(config.run_dir, keep)
        )
    versions = lineage.prune_versions(config.run_dir, keep) if keep is not None else []
    return Collected(storage.remove_leftovers(config.run_dir, older_than), versions)
