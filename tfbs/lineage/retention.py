"""Which model versions a run keeps once ``LATEST`` moves."""

from __future__ import annotations

from tfbs import storage
from tfbs.lineage.paths import lineage_uri, model_uri
from tfbs.lineage.pointers import read_latest
from tfbs.lineage.records import list_versions


def prunable_versions(run_dir: str, keep: int | None) -> list[str]:
    """The versions :func:`prune_versions` would delete, oldest first (none when ``keep`` is None)."""
    latest = read_latest(run_dir)
    if keep is None or latest is None:
        return []
    names = [lineage.version for lineage in list_versions(run_dir)]
    if latest.version not in names:
        return []
    older = names[: names.index(latest.version)]
    return older[: max(0, len(older) - (keep - 1))]


def prune_versions(run_dir: str, keep: int) -> list[str]:
    """Delete the model versions older than ``LATEST`` beyond the newest ``keep - 1`` of them.

    ``LATEST`` and every version made after it (being trained or evaluated
    now, or below the floors) are never touched, so a scheduled run cannot
    delete what prediction uses or another stage is writing. A version's
    lineage goes last: a prune cut short leaves a version still listed, and
    the next prune finishes it.

    Parameters
    ----------
    run_dir
        The run whose ``models/`` is pruned.
    keep
        How many versions to keep, ``LATEST`` included.

    Returns
    -------
    list of str
        The deleted versions, oldest first.
    """
    doomed = prunable_versions(run_dir, keep)
    for version in doomed:
        lineage = lineage_uri(run_dir, version)
        for uri in storage.list_files(model_uri(run_dir, version)):
            if uri != lineage:
                storage.delete_file(uri)
        storage.delete_dir(model_uri(run_dir, version))
    return doomed
