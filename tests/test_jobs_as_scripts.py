"""Every stage's job file runs under ``spark-submit``, as the README and the
YARN profile tell users to run it: ``spark-submit jobs/<stage>.py``.

Python puts a script's folder first on the path; ``jobs/preprocess.py`` used
to shadow the ``preprocess`` package there, and every stage failed.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DEMO_CONFIG, REPO, SMALL_OVERRIDES

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SPARK_SUBMIT = Path(sys.executable).parent / "spark-submit"


def _submit(
    stage: str, root: Path, *overrides: str, master: str = "local[2]", arguments: tuple[str, ...] = ()
) -> subprocess.CompletedProcess:
    """``spark-submit --master <master> jobs/<stage>.py`` on the small data set under ``root``."""
    command = [str(SPARK_SUBMIT), "--master", master, str(REPO / "jobs" / f"{stage}.py"), "--config", str(DEMO_CONFIG)]
    for override in [*SMALL_OVERRIDES, f"data.root={root / 'data'}", f"run_dir={root / 'run'}", *overrides]:
        command += ["--set", override]
    # spark-submit starts the driver with $PYSPARK_PYTHON (else `python3`).
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    return subprocess.run([*command, *arguments], cwd=REPO, env=env, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def submitted(tmp_path_factory) -> tuple[Path, dict[str, subprocess.CompletedProcess]]:
    """Each stage submitted in pipeline order on one small data set."""
    root = tmp_path_factory.mktemp("submit")
    regions = root / "regions.bed"
    regions.write_text("chr8\t10000\t10200\nchr8\t10050\t10250\nchr21\t5000\t5200\n")
    runs = {
        "generate": _submit("generate", root),
        # From the generated peaks, with the official rule (overwrites the generator's own labels).
        "labels": _submit("labels", root, "data.cells=[GM12878, HepG2, K562]"),
        "preprocess": _submit("preprocess", root),
        # One process under local[2]; the default ps/workers need an executor per node.
        "train": _submit("train", root, "train.strategy=local"),
        "train_ps": _submit(
            "train",
            root,
            f"run_dir={root / 'run-ps'}",
            f"shards_dir={root / 'run' / 'shards'}",
            master="local-cluster[4,1,1024]",
        ),
        "evaluate": _submit("evaluate", root),
    }
    arguments = ("--regions", str(regions), "--tf", "CTCF", "--cell", "K562", "--out", str(root / "F.CTCF.K562.tab.gz"))
    runs["predict"] = _submit("predict", root, arguments=arguments)
    return root, runs


@pytest.mark.parametrize("stage", ["generate", "labels", "preprocess", "train", "train_ps", "evaluate", "predict"])
def test_stage_runs_under_spark_submit(submitted, stage):
    _, runs = submitted
    run = runs[stage]
    assert run.returncode == 0, run.stderr[-3000:]
    assert "ModuleNotFoundError" not in run.stderr


def test_the_stages_outputs_chain(submitted):
    root, _ = submitted
    assert (root / "data" / "labels" / "CTCF.train.labels.tsv.gz").exists()
    manifest = json.loads((root / "run" / "shards" / "manifest.json").read_text())
    assert manifest["tfs"] == ["CTCF", "FOXA1"]
    report = json.loads((root / "run" / "report" / "report.json").read_text())
    assert len(report["results"]) == 6 and set(report["baselines"]) == set(report["results"])
    for run_dir in ("run", "run-ps"):
        (version,) = [path.parent for path in (root / run_dir / "models").glob("*/lineage.json")]
        metadata = json.loads((version / "export" / "tfbs_metadata.json").read_text())
        assert metadata["strategy"] == ("local" if run_dir == "run" else "parameter_server")
    # The evaluated version is the one prediction used.
    latest = json.loads((root / "run" / "models" / "LATEST").read_text())
    assert report["version"] == latest["version"]
    with gzip.open(root / "F.CTCF.K562.tab.gz", "rt") as handle:
        lines = handle.read().splitlines()
    assert [line.split("\t")[:2] for line in lines] == [["chr8", "10000"], ["chr8", "10050"], ["chr21", "5000"]]
