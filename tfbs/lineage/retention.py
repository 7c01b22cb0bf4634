"""Which model versions a run keeps once ``LATEST`` moves."""

from __future__ import annotations

from tfbs import storage
from tfbs.lineage.paths import lineage_uri, model_uri
from tfbs.lineage.pointers import read_latest
from tfbs.lineage.records import list_versions


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
    latest = read_latest(run_dir)
    if latest is None:
        return []
    versions = list_versions(run_dir)
    names = [lineage.version for lineage in versions]
    if latest.version not in names:
        return []
    older = names[: names.index(latest.version)]
    doomed = older[: max(0, len(older) - (keep - 1))]
    for version in doomed:
        lineage = lineage_uri(run_dir, version)
        for uri in storage.list_files(model_uri(run_dir, version)):
            if uri != lineage:
                storage.delete_file(uri)
        storage.delete_dir(model_uri(run_dir, version))
    return doomed
