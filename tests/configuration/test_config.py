"""Configuration: validation errors name the file and key; defaults resolve."""

from __future__ import annotations

from typing import Annotated

import pytest
from pydantic import Field

from tfbs.config import Identity, PipelineConfig, PlacementConfig, TrainConfig, load_config
from tfbs.errors import ConfigError
from tfbs.lineage import version_name

DEMO = "conf/demo.yaml"


def test_demo_config_resolves_dream_layout():
    config = load_config(DEMO)
    assert config.data.labels_uri("CTCF").endswith("/build/demo/data/labels/CTCF.train.labels.tsv.gz")
    assert config.data.labels_uri("CTCF").startswith("file:///")
    assert config.data.dnase_peaks_uri("K562").endswith("/dnase/DNASE.K562.conservative.narrowPeak.gz")
    assert config.preprocess.test_chroms == ["chr1", "chr8", "chr21"]
    assert config.preprocess.valid_chroms == ["chr11"]


def test_override_changes_value_and_digest():
    base = load_config(DEMO)
    changed = load_config(DEMO, ["train.steps=7", "data.tfs=[CTCF]"])
    assert changed.train.steps == 7
    assert changed.data.tfs == ["CTCF"]
    assert changed.digest() != base.digest()


def test_content_settings_leave_out_locations_layout_and_operations():
    base = load_config(DEMO)
    settings = base.content_settings({"data", "preprocess", "train"})
    # Locations count only as set or not (null turns DNase or the blacklist off).
    assert settings["data"]["root"] is True and settings["data"]["tfs"] == base.data.tfs
    assert not {"read_block_mb", "rows_per_record_file", "bad_rows"} & set(settings["preprocess"])
    assert "seed" in settings["preprocess"] and not {"placement", "strategy", "num_workers"} & set(settings["train"])
    moved = ["data.root=/elsewhere", "preprocess.read_block_mb=1", "train.placement.num_workers=5"]
    assert load_config(DEMO, moved).content_digest({"data", "preprocess", "train"}) == base.content_digest(
        {"data", "preprocess", "train"}
    )
    assert load_config(DEMO, ["data.dnase_dir=null"]).content_digest({"data"}) != base.content_digest({"data"})
    assert load_config(DEMO, ["preprocess.window=500"]).content_digest({"preprocess"}) != base.content_digest(
        {"preprocess"}
    )


class _WiderPlacement(PlacementConfig):
    """The placement section with a setting added at test time."""

    racks: int = 1


class _WiderTrain(TrainConfig):
    placement: Annotated[_WiderPlacement, Identity.PLACEMENT] = Field(default_factory=_WiderPlacement)
    #: The control: the same kind of setting added to ``train`` itself.
    added_knob: int = 1


class _WiderPipeline(PipelineConfig):
    train: _WiderTrain = Field(default_factory=_WiderTrain)


def test_a_new_placement_setting_never_changes_the_version():
    # The section is left out whole: no list of its keys is kept anywhere to forget the new one in.
    tree = load_config(DEMO).model_dump(exclude={"source"})

    def version(train: dict) -> str:
        wider = _WiderPipeline.model_validate({**tree, "train": {**tree["train"], **train}})
        return version_name(wider, "0" * 64, model_format=1)

    placement = tree["train"]["placement"]
    assert _WiderPipeline.model_validate(tree).model_dump()["train"]["placement"]["racks"] == 1
    assert version({"placement": {**placement, "racks": 8}}) == version({})
    assert version({"placement": {**placement, "strategy": "local", "timeout_s": 5}}) == version({})
    assert version({"added_knob": 2}) != version({})


@pytest.mark.parametrize(
    "override, message",
    [
        ("train.master=yarn", "conf/demo.yaml: train.master moved: training runs on spark.master; a local one"),
        ("train.strategy=local", "conf/demo.yaml: train.strategy moved: now train.placement.strategy"),
        ("train.spark_conf={}", "conf/demo.yaml: train.spark_conf moved: now train.placement.spark_conf"),
    ],
)
def test_a_moved_key_says_where_it_went(override, message):
    with pytest.raises(ConfigError) as err:
        load_config(DEMO, [override])
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    "overrides, master",
    [
        ([], "local-cluster[4,1,1024]"),
        (["train.placement.strategy=multi_worker_mirrored"], "local-cluster[3,1,1024]"),
        (["train.placement.num_workers=1", "train.placement.local_executor_memory_mb=2048"], "local-cluster[3,1,2048]"),
        (["spark.master=local"], "local-cluster[4,1,1024]"),
        (["spark.master=yarn"], "yarn"),
        (["spark.master=local-cluster[5,1,512]"], "local-cluster[5,1,512]"),
    ],
)
def test_training_runs_on_spark_master(overrides, master):
    config = load_config(DEMO, overrides)
    assert config.train.placement.training_master(config.spark.master) == master


@pytest.mark.parametrize(
    "override, message",
    [
        ("train.stepz=3", "conf/demo.yaml: train.stepz: unknown key"),
        (
            "train.placement.num_workers=0",
            "conf/demo.yaml: train.placement.num_workers: Input should be greater than 0",
        ),
        ("preprocess.valid_chroms=[chr1]", "share ['chr1']"),
        ("train.placement.num_ps=0", "parameter_server needs num_ps >= 1"),
        ("generate.chromosomes={chr2: 1000}", "generate.chromosomes"),
        ('train.placement.node_cpus={"gpu:0": "0"}', "'gpu:0' is not chief, ps or worker"),
        ('train.placement.node_cpus={"worker:1": "1-0"}', "'1-0' is not a CPU list"),
    ],
)
def test_bad_keys_are_named(override, message):
    with pytest.raises(ConfigError) as err:
        load_config(DEMO, [override])
    assert message in str(err.value)


def test_missing_file_is_named(tmp_path):
    with pytest.raises(ConfigError, match="nope.yaml: configuration file not found"):
        load_config(tmp_path / "nope.yaml")


def test_bad_override_syntax():
    with pytest.raises(ConfigError, match="expected key=value"):
        load_config(DEMO, ["train.steps"])


@pytest.mark.parametrize(
    "given, expected",
    [
        ("gs://bucket/dream/", "gs://bucket/dream"),
        ("hdfs://nn:8020/data", "hdfs://nn:8020/data"),
        ("file:///", "file:///"),
    ],
)
def test_uris_are_normalised(given, expected):
    from tfbs.storage import to_uri

    assert to_uri(given) == expected


def test_relative_paths_become_absolute_file_uris(tmp_path, monkeypatch):
    from tfbs.storage import to_uri

    monkeypatch.chdir(tmp_path)
    assert to_uri("data/x.bed") == f"file://{tmp_path}/data/x.bed"
