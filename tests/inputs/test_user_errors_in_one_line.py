"""A user's mistake ends the stage that met it in one line and exit 2: damaged exports, configuration
mistakes, a TF cluster the application cannot host."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import DEMO_CONFIG, REPO

from tfbs.config import load_config
from tfbs.errors import BadInputError, MissingInputError
from tfbs.formats.motifs import read_meme
from tfbs.lineage import read_export_metadata
from tfbs.storage import local_path

# An export's metadata, damaged: the library and `tfbs predict` name file, line and reason

_METADATA = '{\n  "tfs": ["CTCF"],\n  "cells": ["K562"]\n  "window": 1000\n}\n'


def _damaged_export(run_dir: Path, text: str = _METADATA) -> tuple[str, str]:
    """A version ``v1`` whose export's metadata is ``text``; returns the export's and the metadata's URIs."""
    export = run_dir / "models" / "v1" / "export"
    export.mkdir(parents=True)
    (export / "tfbs_metadata.json").write_text(text)
    return f"file://{export}", f"file://{export}/tfbs_metadata.json"


@pytest.mark.parametrize(
    "text, line, reason",
    [
        (_METADATA, 4, "not valid JSON: Expecting ',' delimiter at column 3"),
        ("", 1, "not valid JSON: Expecting value at column 1"),
        ('["CTCF"]\n', 1, "expected a JSON object, found list"),
        ('{"tfs": ["CTCF"], "cells": ["K562"], "window": "1000"}', 1, "no 'window' int in the metadata"),
    ],
    ids=["missing-comma", "empty", "not-an-object", "window-not-int"],
)
def test_damaged_export_metadata_names_file_line_and_reason(tmp_path, text, line, reason):
    export, uri = _damaged_export(tmp_path, text)
    with pytest.raises(BadInputError) as err:
        read_export_metadata(export)
    redo = f"delete {export} and run `tfbs train` to export the model again"
    assert str(err.value) == f"{uri}:{line}: {reason} ({redo})"


def test_cli_predict_refuses_damaged_export_metadata_in_one_line(tmp_path):
    export, uri = _damaged_export(tmp_path / "run")
    run = subprocess.run(
        [sys.executable, "-m", "jobs.cli", "predict", "--config", str(DEMO_CONFIG), f"--set=run_dir={tmp_path / 'run'}"]
        + ["--tf", "CTCF", "--cell", "K562", "--model-version", "v1"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 2, run.stderr
    redo = f"delete {export} and run `tfbs train` to export the model again"
    assert run.stderr.strip().splitlines()[-1] == (
        f"error: {uri}:4: not valid JSON: Expecting ',' delimiter at column 3 ({redo})"
    )
    assert "Traceback" not in run.stderr and "SparkContext" not in run.stderr


# An export damaged after the fact (a truncated variables file): evaluate and predict end in one line


def _export_files(export: Path, version: str, manifest_digest: str) -> Path:
    """A stand-in export of ``version`` with its digests record, as export_model writes one; returns its data file."""
    from tfbs.storage import content_keys

    data = export / "variables" / "variables.data-00000-of-00001"
    data.parent.mkdir(parents=True)
    for path, content in ((export / "saved_model.pb", b"graph"), (export / "variables" / "variables.index", b"index")):
        path.write_bytes(content)
    data.write_bytes(bytes(range(256)) * 64)
    content_keys.record_digests(export)
    metadata = {"version": version, "manifest_digest": manifest_digest, "tfs": ["CTCF"], "cells": ["K562"]}
    (export / "tfbs_metadata.json").write_text(json.dumps({**metadata, "window": 1000}))
    return data


def _no_spark(*args, **kwargs):
    raise AssertionError("a damaged export reached Spark")


def test_cli_predict_refuses_a_truncated_export_in_one_line(tmp_path, monkeypatch, capsys):
    import jobs.predict

    monkeypatch.setattr("tfbs.launch.session.spark_session", _no_spark)
    export = tmp_path / "run" / "models" / "v1" / "export"
    data = _export_files(export, "v1", "0" * 64)
    data.write_bytes(data.read_bytes()[:1000])
    argv = ["--config", str(DEMO_CONFIG), f"--set=run_dir={tmp_path / 'run'}", "--model-version", "v1"]
    code = jobs.predict.main([*argv, "--tf", "CTCF", "--cell", "K562"])
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"error: file://{data}: not the bytes tfbs_digests.json records: damaged, truncated or rewritten since "
        "export (run `tfbs train`: it trains and exports this version again)"
    )


def _exported_version(config, monkeypatch) -> Path:
    """A model version of a stand-in manifest, its lineage and export written, Spark refused; the export's data file."""
    from tf_models import MODEL_FORMAT
    from tf_models.model_format import recorded_model_code
    from tfbs import lineage

    manifest = {"fingerprint": {"inputs": {}}, "created_at": "2026-01-05T00:00:00Z"}
    monkeypatch.setattr("tfbs.formats.manifest.read_manifest", lambda uri: manifest)
    monkeypatch.setattr("tfbs.launch.session.spark_session", _no_spark)
    version = lineage.Lineage.of(config, manifest, MODEL_FORMAT, recorded_model_code())
    lineage.write_lineage(config.run_dir, version)
    export = Path(local_path(lineage.export_uri(config.run_dir, version.version)))
    return _export_files(export, version.version, version.manifest_digest)


def test_cli_evaluate_refuses_a_truncated_export_in_one_line(tmp_path, monkeypatch, capsys):
    import jobs.evaluate

    overrides = [f"run_dir={tmp_path / 'run'}", f"shards_dir={tmp_path / 'shards'}"]
    data = _exported_version(load_config(DEMO_CONFIG, overrides), monkeypatch)
    data.write_bytes(data.read_bytes()[:1000])
    code = jobs.evaluate.main(["--config", str(DEMO_CONFIG), *(f"--set={o}" for o in overrides)])
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"error: file://{data}: not the bytes tfbs_digests.json records: damaged, truncated or rewritten since "
        "export (run `tfbs train`: it trains and exports this version again)"
    )


# Every user mistake of the configuration in one line, exit 2, through the stage that met it


def _last_error(stage_main: Callable[[list[str]], int], argv: list[str], capsys) -> tuple[int, str]:
    """Run a stage in this process; its exit code and last line on stderr (no traceback before it)."""
    code = stage_main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return code, err.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (
            ["train.steps=[1"],
            "train.steps: --set value '[1' is not valid YAML: expected ',' or ']', but got '<stream end>' at column 3",
        ),
        (
            ['spark.conf={spark.executor.cores: "2.5"}'],
            f"{DEMO_CONFIG}: spark.conf: spark.executor.cores: '2.5' is not a positive whole number",
        ),
        (
            ['train.placement.spark_conf={spark.task.cpus: "0"}'],
            f"{DEMO_CONFIG}: train.placement.spark_conf: spark.task.cpus: '0' is not a positive whole number",
        ),
        (
            ["train.model.motif_cnn.seed_motifs=true", "train.model.motif_cnn.seed_motif_db={tmp}/gone.meme"],
            "file://{tmp}/gone.meme: not found (the MEME motif file train.model.motif_cnn.seed_motif_db names)",
        ),
        (
            [
                "train.model.motif_cnn.seed_motifs=true",
                "train.model.motif_cnn.seed_motif_db=null",
                "evaluate.motif_db={tmp}/gone.meme",
                "evaluate.motifs={CTCF: CTCF_f1}",
            ],
            "file://{tmp}/gone.meme: not found (the MEME motif file evaluate.motif_db names)",
        ),
        (
            # Once a KeyError on every TF node, after the cluster had started.
            ["train.placement.record_cache_dir=/scratch/{USER}"],
            f"{DEMO_CONFIG}: train.placement.record_cache_dir: '/scratch/{{USER}}': {{USER}} is not filled in, "
            "only {user} (the user's name)",
        ),
    ],
    ids=[
        "override-not-yaml",
        "executor-cores-2.5",
        "task-cpus-0",
        "seed-motif-db-missing",
        "motif-db-missing",
        "cache-dir-USER",
    ],
)
def test_cli_changes_refuses_a_configuration_mistake_in_one_line(tmp_path, capsys, overrides, expected):
    import jobs.changes

    sets = [f"--set={o.replace('{tmp}', str(tmp_path))}" for o in [f"run_dir={tmp_path / 'run'}", *overrides]]
    code, line = _last_error(jobs.changes.main, ["--config", str(DEMO_CONFIG), *sets], capsys)
    assert (code, line) == (2, f"error: {expected.replace('{tmp}', str(tmp_path))}")


def test_a_configuration_file_not_in_utf8_is_named_with_its_line(tmp_path, capsys):
    import jobs.changes

    path = tmp_path / "latin1.yaml"
    path.write_bytes(DEMO_CONFIG.read_bytes() + "# r\u00e9sum\u00e9 of the run\n".encode("latin-1"))
    line_number = DEMO_CONFIG.read_bytes().count(b"\n") + 1
    code, line = _last_error(jobs.changes.main, ["--config", str(path)], capsys)
    assert (code, line) == (2, f"error: {path}:{line_number}: not UTF-8 text (byte 0xe9 at column 4); save it as UTF-8")
    # A YAML error names its line too, in one line (PyYAML's own message spans three).
    path.write_text("run_dir: [1\n")
    code, line = _last_error(jobs.changes.main, ["--config", str(path)], capsys)
    assert (code, line) == (
        2,
        f"error: {path}:2: not valid YAML: expected ',' or ']', but got '<stream end>' at column 1",
    )


def test_cli_evaluate_refuses_a_missing_motif_file_before_spark(tmp_path, monkeypatch, capsys):
    import jobs.evaluate

    overrides = [
        f"run_dir={tmp_path / 'run'}",
        f"shards_dir={tmp_path / 'shards'}",
        f"evaluate.motif_db={tmp_path}/gone.meme",
        "evaluate.motifs={CTCF: CTCF_f1}",
    ]
    _exported_version(load_config(DEMO_CONFIG, overrides), monkeypatch)
    code, line = _last_error(
        jobs.evaluate.main, ["--config", str(DEMO_CONFIG), *(f"--set={o}" for o in overrides)], capsys
    )
    assert (code, line) == (2, f"error: file://{tmp_path}/gone.meme: MEME motif file (evaluate.motif_db) not found")
    # Read anywhere else (the baselines, explain, unseen), a missing motif file is the same one-line user error.
    with pytest.raises(MissingInputError, match=r"gone.meme: not found \(a MEME motif file the configuration names\)$"):
        read_meme(f"file://{tmp_path}/gone.meme")


def test_a_reservation_that_runs_out_of_time_is_a_setup_error(tmp_path, monkeypatch, capsys):
    """TFoS's bare Exception on a reservation timeout becomes one line naming the setting, exit 2 (nothing trained)."""
    import contextlib
    import types

    from jobs.common import run_stage
    from tf_models.tfos import driver

    def timed_out(*args, **kwargs):
        raise Exception("timed out waiting for reservations to complete")

    cluster = types.SimpleNamespace(run=timed_out, tf_status={}, InputMode=types.SimpleNamespace(TENSORFLOW=1))
    # Stand-ins for TensorFlowOnSpark (loading it loads TensorFlow) and the reservation server it would start.
    monkeypatch.setitem(sys.modules, "tensorflowonspark", types.SimpleNamespace(TFCluster=cluster))
    patches = types.SimpleNamespace(driver_reservations=lambda host, **_: contextlib.nullcontext())
    monkeypatch.setitem(sys.modules, "tf_models.tfos.tfos_patches", patches)
    cancelled = []

    class _Context(_ExecutorlessContext):
        def getConf(self) -> dict[str, str]:  # noqa: N802 (Spark's name)
            return {"spark.driver.host": "127.0.0.1"}

        def cancelAllJobs(self) -> None:  # noqa: N802 (Spark's name)
            cancelled.append(True)

    def training(config, args):
        driver._reserve_nodes(_Context(), print, {}, 4, 1, None, config.train.placement.reservation_timeout_s)

    argv = [
        "--config",
        str(DEMO_CONFIG),
        f"--set=run_dir={tmp_path / 'run'}",
        "--set=train.placement.reservation_timeout_s=5",
    ]
    code = run_stage("train", training, argv)
    assert code == 2 and cancelled == [True]
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "error: train.placement.reservation_timeout_s: the TF nodes did not all register within 5 s (each node "
        "imports TensorFlow first, which on a busy host can take minutes); nothing was trained: raise it and run again"
    )


def test_a_remote_export_unlike_its_record_is_refused_in_one_line(gcs_base, tmp_path, monkeypatch, capsys):
    """Before Spark (the driver's check) and on a node copying it (the export cache), one line naming the file."""
    from jobs.common import run_stage
    from tf_models.model_dir import local_export
    from tfbs import lineage, storage

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    local = _export_files(tmp_path / "export", "v1", "0" * 64).parents[1]
    export = f"{gcs_base}/run/models/v1/export"
    for path in sorted(p for p in local.rglob("*") if p.is_file()):
        storage.write_bytes(f"{export}/{path.relative_to(local).as_posix()}", path.read_bytes())
    storage.write_bytes(f"{export}/variables/variables.index", b"indeX")  # same size, other bytes
    expected = f"error: {export}/variables/variables.index: not the bytes tfbs_digests.json records: damaged, truncated or rewritten since export"
    argv = ["--config", str(DEMO_CONFIG), f"--set=run_dir={tmp_path / 'run'}"]
    for check in (lambda config, args: lineage.require_whole_export(export), lambda config, args: local_export(export)):
        assert run_stage("predict", check, argv) == 2
        assert capsys.readouterr().err.strip().splitlines()[-1].startswith(expected + " (")


# A TF cluster the application cannot host: the one-line user error, exit 2


class _ExecutorlessContext:
    """What :func:`tf_models.tfos.driver._check_executors` asks of a SparkContext."""

    master = "spark://vm:7077"

    def getConf(self) -> dict[str, str]:  # noqa: N802 (Spark's name)
        return {}


def test_too_few_executors_end_the_stage_in_one_line(tmp_path, monkeypatch, capsys):
    from jobs.common import run_stage
    from tf_models.tfos import driver

    monkeypatch.setattr(driver, "await_executors", lambda sc, count, timeout: 2)

    def training(config, args):
        driver._check_executors(_ExecutorlessContext(), num_ps=1, num_workers=2, timeout=5)

    code = run_stage("train", training, ["--config", str(DEMO_CONFIG), f"--set=run_dir={tmp_path / 'run'}"])
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "error: training needs 4 Spark executors, one per TF node (1 chief + 1 ps + 2 workers); spark://vm:7077 "
        "gave 2 within 5 s (train.placement.executors_timeout_s): give the cluster room for 2 more, or train with fewer "
        "workers (train.placement.num_workers)"
    )


def test_reservation_address_missing_is_a_user_error():
    from tf_models.tfos.driver import reservation_host
    from tfbs.errors import TfbsError

    with pytest.raises(TfbsError, match=r"^spark\.driver\.host is not set: "):
        reservation_host(_ExecutorlessContext())
