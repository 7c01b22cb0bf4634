"""What each setting is to the identity of what the pipeline makes, read from its type and tried.

The shards are named by ``data`` and ``preprocess``
(``PipelineConfig.content_digest``), a model version by ``train``
(``tfbs.lineage.naming.training_config``). Each field's kind is written on
its type (``tfbs.config.base.Identity``); no list of keys is kept by hand,
here or in the code. Every field of those sections, nested sections'
included, is changed here one at a time on the small data set's
configuration, and the identities move exactly as its kind says: content
changes its section's identity, a location only when it is turned on or
off, layout, placement and names never.
"""

from __future__ import annotations

import shutil
import typing
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import REPO

from tfbs.config import Identity, PipelineConfig
from tfbs.config.base import Section, field_identity, nested_section
from tfbs.errors import TfbsError
from tfbs.lineage.naming import training_config

#: The sections that name what the pipeline makes, and what they name.
IDENTITY_SECTIONS = {"data": "shards", "preprocess": "shards", "train": "version"}

#: Two motif files: what a setting of a file digested elsewhere is given.
MOTIF_FILES = (
    REPO / "bench" / "motifs" / "demo_tfs_and_partners.meme",
    REPO / "data" / "dream" / "annotations" / "HOCOMOCOv9.meme",
)

#: Names of settings that say where a file or folder is: none may count as content.
_PATH_LIKE = ("root", "_dir", "_fasta", "_sizes", "_db", "blacklist", "_uri", "_path", "_file")


def fields_of(
    section: type[Section], prefix: str, inherited: Identity | None = None
) -> Iterator[tuple[str, Identity, Any]]:
    """Every leaf field under ``section``: dotted name, kind (a left-out section's fields inherit its kind), type."""
    for name, field in section.model_fields.items():
        identity = inherited or field_identity(field)
        inner = nested_section(field)
        if inner is not None:
            yield from fields_of(inner, f"{prefix}.{name}", None if identity is Identity.CONTENT else identity)
        else:
            yield f"{prefix}.{name}", identity, field.annotation


def every_field() -> Iterator[tuple[str, Identity, Any]]:
    """:func:`fields_of` every section that names what the pipeline makes."""
    for section in IDENTITY_SECTIONS:
        yield from fields_of(PipelineConfig.section_type(section), section)


def identities(config: PipelineConfig) -> dict[str, Any]:
    return {"shards": config.content_digest({"data", "preprocess"}), "version": training_config(config)}


def _allowed(annotation: Any) -> list[Any]:
    """The values a Literal (or an optional one) allows."""
    for arg in (annotation, *typing.get_args(annotation)):
        if typing.get_origin(arg) is typing.Literal:
            return list(typing.get_args(arg))
    return []


def other_values(value: Any, annotation: Any) -> list[Any]:
    """Values to try in place of ``value``, nearest first."""
    if _allowed(annotation):
        return [choice for choice in _allowed(annotation) if choice != value]
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [value + 1, value * 2, value - 1, value // 2]
    if isinstance(value, float):
        return [value / 2, min(value * 2, 0.99)]
    if isinstance(value, str):
        return ["/elsewhere/other" if value.startswith(("/", "file:")) else f"{value}x", None]
    if isinstance(value, list):
        return [value[:-1], [*value, *value[-1:]]] if value else [["chr9"], [3], [100, 1000]]
    if isinstance(value, dict):
        return [{}] if value else [{"X": "Y"}, {"chief": "0"}]
    return [1000, 0.5, True, "x", "0", ["K562"], [100, 1000], 4]


def changed(config: PipelineConfig, dotted: str, value: Any) -> PipelineConfig:
    """``config`` with ``dotted`` set to ``value``, validated as on load."""
    tree = config.model_dump()
    *parents, last = dotted.split(".")
    node = tree
    for key in parents:
        node = node[key]
    node[last] = value
    return PipelineConfig.model_validate(tree)


def test_no_path_like_setting_counts_as_content():
    """A path among the content would make moving identical files rebuild the shards or retrain."""
    paths = []
    for dotted, identity, annotation in every_field():
        if dotted.endswith(_PATH_LIKE) and str in (annotation, *typing.get_args(annotation)):
            paths.append(dotted)
            assert identity is not Identity.CONTENT, dotted
    assert "data.genome_fasta" in paths and "train.model.motif_cnn.seed_motif_db" in paths


def test_a_digested_file_counts_by_its_bytes_not_where_it_is(small_dataset, tmp_path):
    digested = [dotted for dotted, identity, _ in every_field() if identity is Identity.DIGESTED]
    assert digested == ["train.model.motif_cnn.seed_motif_db"]
    here, there = tmp_path / "here.meme", tmp_path / "elsewhere" / "there.meme"
    there.parent.mkdir()
    shutil.copy(MOTIF_FILES[0], here)
    shutil.copy(MOTIF_FILES[0], there)
    for dotted in digested:
        same = [identities(changed(small_dataset, dotted, str(path))) for path in (here, there)]
        other = identities(changed(small_dataset, dotted, str(MOTIF_FILES[1])))
        assert same[0] == same[1] and other["version"] != same[0]["version"], dotted


#: Settings refused on load unless another is set: each is tried from a base with that one set.
NEEDS = {"train.model.motif_cnn.expression_products": ("train.model.use_expression", True)}


@pytest.mark.parametrize("section", sorted(IDENTITY_SECTIONS))
def test_every_setting_moves_the_identities_as_its_kind_says(small_dataset, section):
    base = small_dataset
    before = identities(base)
    tried: dict[str, str] = {}
    untried: list[str] = []
    for dotted, identity, annotation in fields_of(PipelineConfig.section_type(section), section):
        if identity is Identity.DIGESTED:
            continue  # by its bytes: test_a_digested_file_counts_by_its_bytes_not_where_it_is
        node: Any = base
        for key in dotted.split("."):
            node = getattr(node, key)
        start, start_identities = base, before
        if dotted in NEEDS:
            start = changed(base, *NEEDS[dotted])
            start_identities = identities(start)
        for value in other_values(node, annotation):
            try:
                after = identities(changed(start, dotted, value))
            except (ValueError, TypeError, TfbsError, OSError):
                continue  # refused on load (a bound, a rule between keys) or needs files: the next value
            moved = {name for name in start_identities if after[name] != start_identities[name]}
            if identity is Identity.CONTENT:
                expected = {IDENTITY_SECTIONS[section]}
            elif identity is Identity.LOCATION:
                expected = {"shards"} if (node is None) != (value is None) else set()
            else:
                expected = set()
            assert moved == expected, (dotted, identity, node, value, moved)
            tried[dotted] = identity.value
            break
        else:
            untried.append(dotted)
    # Every setting was tried: a field no value could change would go unchecked.
    assert untried == [], untried
    assert len(tried) >= 10 and set(tried.values()) >= {"content"}, tried
