"""What evaluation decided of a version: below the floors (``floors_failed.json``), or ``LATEST``."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from tfbs import storage
from tfbs.errors import MissingInputError
from tfbs.lineage.naming import utc_now
from tfbs.lineage.paths import FLOOR_FAILURE_NAME, latest_uri, model_uri
from tfbs.lineage.records import Lineage, read_record


class FloorFailure(BaseModel):
    """``<run_dir>/models/<version>/floors_failed.json``: the version fell below evaluation's floors.

    With the floors it was held to: other floors may pass it.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: str
    min_mean_auroc: float | None
    min_mean_auprc: float | None
    mean_auroc: float
    mean_auprc: float
    failures: list[str]
    failed_at: str

    def held_to(self, min_mean_auroc: float | None, min_mean_auprc: float | None) -> bool:
        """Whether these are the floors it failed."""
        return (self.min_mean_auroc, self.min_mean_auprc) == (min_mean_auroc, min_mean_auprc)


def floor_failure_uri(run_dir: str, version: str) -> str:
    """``<run_dir>/models/<version>/floors_failed.json``."""
    return f"{model_uri(run_dir, version)}/{FLOOR_FAILURE_NAME}"


def write_floor_failure(
    run_dir: str,
    lineage: Lineage,
    floors: tuple[float | None, float | None],
    means: tuple[float, float],
    failures: list[str],
) -> FloorFailure:
    """Record that ``lineage.version`` fell below ``floors`` (auROC, auPRC) with mean ``means``."""
    record = FloorFailure(
        version=lineage.version,
        min_mean_auroc=floors[0],
        min_mean_auprc=floors[1],
        mean_auroc=means[0],
        mean_auprc=means[1],
        failures=failures,
        failed_at=utc_now(),
    )
    storage.write_text(floor_failure_uri(run_dir, lineage.version), record.model_dump_json(indent=2))
    return record


def read_floor_failure(run_dir: str, version: str) -> FloorFailure | None:
    """The record of ``version`` falling below the floors, or None if it has none."""
    return read_record(floor_failure_uri(run_dir, version), FloorFailure, "a floor failure record")


def clear_floor_failure(run_dir: str, version: str) -> None:
    """Remove the record of ``version`` falling below the floors, if there is one (it passed since)."""
    storage.delete_file(floor_failure_uri(run_dir, version))


# --------------------------------------------------------------------------
# LATEST: the version prediction uses
# --------------------------------------------------------------------------


class Latest(BaseModel):
    """``<run_dir>/models/LATEST``: the version that last passed evaluation."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: str
    manifest_digest: str
    mean_auroc: float
    mean_auprc: float
    promoted_at: str


def read_latest(run_dir: str) -> Latest | None:
    """What ``LATEST`` names, or None before any version passed evaluation.

    Raises
    ------
    LineageError
        If the file is there but unreadable as a pointer.
    """
    return read_record(latest_uri(run_dir), Latest, "a LATEST pointer")


def chosen_version(run_dir: str, requested: str | None = None) -> str:
    """The model version a stage works on: ``requested``, else the one ``LATEST`` names.

    Raises
    ------
    MissingInputError
        If none is requested and no version has passed evaluation yet.
    """
    if requested:
        return requested
    latest = read_latest(run_dir)
    if latest is None:
        raise MissingInputError(
            f"{latest_uri(run_dir)}: not found: no model has passed evaluation yet "
            "(run `tfbs evaluate`, or name one with --model-version)"
        )
    return latest.version


def write_latest(run_dir: str, lineage: Lineage, mean_auroc: float, mean_auprc: float) -> Latest:
    """Point ``LATEST`` at ``lineage.version`` (one write; readers see the old or the new pointer)."""
    latest = Latest(
        version=lineage.version,
        manifest_digest=lineage.manifest_digest,
        mean_auroc=mean_auroc,
        mean_auprc=mean_auprc,
        promoted_at=utc_now(),
    )
    storage.write_text(latest_uri(run_dir), latest.model_dump_json(indent=2))
    return latest
