"""The HTML report of a real evaluation, rendered in Debian's headless chromium.

A small model trained on the shared small shards is evaluated (which writes
``report.html``); hand-made sections of the other stages are put beside
``report.json`` and ``tfbs report`` writes the page again. Chromium then
loads it from disk: no console error, every TF/cell shown, every figure
decoded, nothing fetched. The screenshot is kept under the test's tmp dir.
"""

from __future__ import annotations

import argparse
import base64
import json
import shutil
from pathlib import Path

import pytest
from conftest import small_config

from jobs import report as report_job
from tf_models.evaluate import evaluate
from tf_models.report import PAGE_JSON, REPORT_HTML, write_html_report
from tf_models.report.html import anchor
from tf_models.train import train_on_spark
from tfbs import lineage
from tfbs.storage import local_path

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
#: A 2 x 1 PNG (red, blue): the smallest image a section can carry.
TINY_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAIAAAABCAIAAAB7QOjdAAAAEElEQVR4nGP4z8DAwMDAAAAP/AH/aAPvwQAAAABJRU5ErkJggg=="
)
HOSTILE = "<script>alert('x')</script> & co"


@pytest.fixture(scope="module")
def evaluated(spark, small_shards, tmp_path_factory):
    """A 10-step model of the small shards, evaluated: its report directory holds report.html."""
    config, manifest = small_shards
    run_config = small_config(
        tmp_path_factory.mktemp("report-run"),
        f"data.root={local_path(config.data.root)}",
        f"shards_dir={config.shards_uri}",
        "train.placement.strategy=local",
        "train.steps=10",
        "train.checkpoint_every_steps=10",
    )
    summary = train_on_spark(spark, run_config, manifest)
    report = evaluate(spark, run_config, manifest)
    return run_config, manifest, summary["version"], report


def _sections(report_dir: Path) -> None:
    """The other stages' optional sections, by hand, one image each for two of them."""
    (report_dir / "figures").mkdir(exist_ok=True)
    (report_dir / "figures" / "logo.png").write_bytes(TINY_PNG)
    sections = {
        "unseen.json": {
            "title": "Unseen TFs (leave one out)",
            "columns": ["held out", "auPRC", "motif scan auPRC"],
            "rows": [["CTCF", 0.41, 0.30], ["FOXA1", 0.22, 0.18]],
            "notes": ["trained without the held-out TF's labels"],
            "images": [],
        },
        "motifs.json": {
            "title": "Learned motifs",
            "columns": ["filter", "best match", "q-value"],
            "rows": [[3, "CTCF_f2", 1e-5], [7, HOSTILE, 0.2]],
            "notes": [],
            "images": ["figures/logo.png", "../outside.png"],
        },
        "predictions.json": {
            "title": "Genome-wide predictions",
            "columns": ["TF/cell", "submission", "rows", "validated", "bins/s"],
            "rows": [["CTCF/PC-3", "F.CTCF.PC-3.tab.gz", 99000, True, 1248.0]],
            "notes": ["validated against the regions file"],
            "images": ["figures/logo.png"],
        },
    }
    for name, section in sections.items():
        (report_dir / name).write_text(json.dumps(section))


def test_evaluate_writes_the_page_and_its_run_copy(evaluated):
    config, manifest, version, report = evaluated
    report_dir = Path(local_path(lineage.report_uri(config.run_dir, version)))
    run_report = Path(local_path(lineage.run_report_uri(config.run_dir)))
    for name in (REPORT_HTML, PAGE_JSON):
        assert (run_report / name).read_bytes() == (report_dir / name).read_bytes()
    page = json.loads((report_dir / PAGE_JSON).read_text())
    keys = {f"{tf}/{cell}" for tf, cells in manifest.counts.items() for cell in cells}
    assert set(page["curves"]) == keys
    for key, curves in page["curves"].items():
        # The model, the model joined to the boosted baseline and every baseline, each with points and the report's own areas.
        assert set(curves) == {
            "model",
            "model_and_boosted",
            "boosted",
            "dnase_motif",
            "dnase",
            "motif_scan",
            "coarse_pwm_reference",
            "oracle",
        }
        assert curves["model"]["auprc"] == report["results"][key]["auprc"]
        for baseline in ("oracle", "coarse_pwm_reference", "model_and_boosted"):
            assert curves[baseline]["auprc"] == report["baselines"][key][baseline]["auprc"]
        assert all(len(c["recall"]) > 1 and c["recall"][-1] == 1.0 for c in curves.values())
    balance = {(r["key"], r["split"]): r for r in page["class_balance"]}
    for key in keys:
        tf_name, cell = key.split("/")
        kept = manifest.counts[tf_name][cell].kept["test"]
        assert (balance[key, "test"]["B"], balance[key, "test"]["U"]) == (kept["B"], kept["U"])
    for row in page["accounting"]:
        assert row["accounted"] == row["input_rows"] == manifest.inputs[row["key"].split("/")[0]].input_rows
    assert page["lineage"]["version"] == version and page["history"][-1]["step"] == 10
    assert page["notes"] == []


@pytest.fixture(scope="module")
def browser():
    """Debian's chromium, headless, through its chromedriver (scripts/system_deps.sh installs both)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not shutil.which(path)]
    assert not missing, f"{missing}: run `TEST_DEPS=1 bash scripts/system_deps.sh`"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    options.add_argument("--window-size=1280,1000")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


def test_the_page_in_headless_chromium(evaluated, browser, tmp_path):
    config, manifest, version, report = evaluated
    report_dir = Path(local_path(lineage.report_uri(config.run_dir, version)))
    _sections(report_dir)
    # The version is LATEST: `tfbs report` writes its page and the run's copy again.
    page_uri = report_job.run(config, argparse.Namespace(version=None))
    html = Path(local_path(page_uri)).read_text()
    assert Path(local_path(lineage.run_report_uri(config.run_dir)), REPORT_HTML).read_text() == html
    assert "http://" not in html and "https://" not in html and "<script" not in html

    browser.get(Path(local_path(page_uri)).as_uri())
    severe = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert severe == []
    keys = {f"{tf}/{cell}" for tf, cells in manifest.counts.items() for cell in cells}
    shown = browser.execute_script("return [...document.querySelectorAll('section.tfcell')].map(s => s.id)")
    assert sorted(shown) == sorted(anchor(key) for key in keys)
    widths = browser.execute_script("return [...document.images].map(i => [i.alt, i.complete, i.naturalWidth])")
    # A figure per TF/cell, the baselines' bars, the history, and the two sections' logos.
    assert len(widths) == len(keys) + 4
    assert all(complete and width > 0 for _, complete, width in widths), widths
    assert browser.execute_script("return document.scripts.length") == 0
    resources = browser.execute_script("return performance.getEntriesByType('resource').map(r => r.name)")
    assert [name for name in resources if not name.startswith("data:")] == []
    # Each stage's section, its hostile text shown as text, and the image outside the report dir refused.
    for name, title in (("unseen", "Unseen TFs"), ("motifs", "Learned motifs"), ("predictions", "Genome-wide")):
        text = browser.execute_script(f"return document.getElementById('extra-{name}').innerText")
        assert title in text
    motifs = browser.execute_script("return document.getElementById('extra-motifs').innerText")
    assert HOSTILE in motifs and "1e-05" in motifs and "image ../outside.png: not found" in motifs
    summary = browser.execute_script("return document.getElementById('summary').parentElement.innerText")
    assert f"{report['mean_auprc']:.3f}" in summary

    height = browser.execute_script("return document.body.scrollHeight")
    browser.set_window_size(1280, min(height + 40, 12000))
    screenshot = tmp_path / "report.png"
    assert browser.save_screenshot(str(screenshot)) and screenshot.stat().st_size > 50_000
    print(f"screenshot: {screenshot}")


def test_a_report_with_gaps_still_renders(tmp_path):
    """No predictions, history or manifest, and a broken section: the page says so and shows the rest."""
    run_dir, version = str(tmp_path / "run"), "v1"
    report_dir = Path(local_path(lineage.report_uri(run_dir, version)))
    report_dir.mkdir(parents=True)
    metrics = {"auprc": 0.5, "auroc": 0.8, "recall_at_fdr_10": 0.1, "recall_at_fdr_50": 0.4, "n_pos": 5, "n_neg": 50}
    report = {
        "results": {"CTCF/K562": metrics},
        "baselines": {"CTCF/K562": {"coarse_pwm_reference": {**metrics, "auprc": 0.7}}},
        "mean_auprc": 0.5,
        "mean_auroc": 0.8,
        "baseline_mean_auprc": {"coarse_pwm_reference": 0.7},
        "lineage": {"version": version, "manifest_digest": "0" * 64},
    }
    (report_dir / "report.json").write_text(json.dumps(report))
    (report_dir / "unseen.json").write_text('{"title": "Unseen"')
    (report_dir / "motifs.json").write_text('{"title": "Motifs", "rows": []}')
    html = Path(local_path(write_html_report(run_dir, version))).read_text()
    page = json.loads((report_dir / PAGE_JSON).read_text())
    assert set(page["curves"]["CTCF/K562"]) == {"model", "coarse_pwm_reference"}
    assert page["curves"]["CTCF/K562"]["coarse_pwm_reference"]["auprc"] == 0.7
    assert page["sections"]["unseen"]["problem"].endswith("unseen.json: not JSON (Expecting ',' delimiter, line 1)")
    assert page["sections"]["motifs"]["problem"].endswith("motifs.json: no columns, notes, images")
    notes = " ".join(page["notes"])
    assert "predictions: not found" in notes and "history.json: not found" in notes and "no manifest given" in notes
    assert 'id="tfcell-CTCF-K562"' in html and "coarse_pwm_reference" in html
    # The summary says it is one training, and gives the gaps per TF, not only the mean.
    assert "One training (train.seed not recorded)" in html and "Per TF (auPRC, mean over cells)" in html
    assert not (tmp_path / "run" / "report").exists()


def test_tfbs_report_needs_an_evaluated_version(tmp_path, capsys):
    """Before any version passed evaluation, `tfbs report` names the missing LATEST and exits 2."""
    from conftest import DEMO_CONFIG

    assert report_job.main(["--config", str(DEMO_CONFIG), "--set", f"run_dir={tmp_path}"]) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error == (
        f"error: {lineage.latest_uri(tmp_path.as_uri())}: not found: no model has passed evaluation yet "
        "(run `tfbs evaluate`, or name one with --model-version)"
    )
    assert report_job.main(["--config", str(DEMO_CONFIG), "--set", f"run_dir={tmp_path}", "--model-version", "v9"]) == 2
    assert "models/v9/report/report.json: not found (run `tfbs evaluate` first)" in capsys.readouterr().err
