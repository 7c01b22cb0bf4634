"""The preprocessing stage's inputs, one broken copy of the small data set each: refused before Spark in
one line, or a duplicate row set aside and counted in the manifest."""

from __future__ import annotations

import gzip
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from bad_input_files import label_file, peak_line, write_file
from conftest import DEMO_CONFIG, REPO, small_config

from preprocess.inputs import check_preprocess_inputs
from tfbs.errors import BadInputError, MissingInputError
from tfbs.formats.genome import check_fasta_index
from tfbs.storage import local_path

# --------------------------------------------------------------------------
# The preprocessing stage's inputs: one broken copy of the small data set each
# --------------------------------------------------------------------------


def _broken_copy(dataset, tmp_path: Path, defect: str) -> tuple[list[str], str, int, str]:
    """Break one input of ``dataset`` in a copy; return the overrides, and the error's file, line and reason."""
    data = dataset.data
    if defect == "labels-header-only":
        (tmp_path / "labels").mkdir()
        uri = label_file(tmp_path / "labels", "")
        return [f"data.labels_dir={tmp_path / 'labels'}"], uri, 1, "header but no data rows"
    if defect == "fai-missing":
        shutil.copy(local_path(data.genome_fasta), tmp_path / "genome.fa")
        return [f"data.genome_fasta={tmp_path / 'genome.fa'}"], "", 0, ""
    if defect == "fai-stale":
        # The FASTA's headers rewritten after indexing, as a renaming script would.
        fasta = Path(local_path(data.genome_fasta)).read_text().replace(">chr2\n", ">chr2 GRCh37\n")
        shutil.copy(local_path(data.genome_fasta) + ".fai", tmp_path / "genome.fa.fai")
        uri = write_file(tmp_path / "genome.fa", fasta)
        offset = check_fasta_index(data.genome_fasta)["chr2"].offset
        reason = (
            f"stale index of {uri} (re-run `samtools faidx`): chr2's offset {offset} does not follow a '>chr2' line"
        )
        return [f"data.genome_fasta={tmp_path / 'genome.fa'}"], uri + ".fai", 2, reason
    if defect == "protein-residue":
        lines = Path(local_path(data.proteins_fasta)).read_text().splitlines(True)
        lines[2] = lines[2][:4] + "J" + lines[2][5:]
        uri = write_file(tmp_path / "proteins.fa", "".join(lines))
        reason = "invalid residue 'J' in CTCF at column 5 (allowed: the 20 amino acids and X)"
        return [f"data.proteins_fasta={tmp_path / 'proteins.fa'}"], uri, 3, reason
    if defect == "dnase-beyond-end":
        shutil.copytree(local_path(data.dnase_dir), tmp_path / "dnase")
        path = tmp_path / "dnase" / "DNASE.K562.conservative.narrowPeak.gz"
        lines = gzip.decompress(path.read_bytes()).decode().splitlines(True)
        lines.insert(5, peak_line("chr21", 59_990, 60_010))
        uri = write_file(path, "".join(lines))
        return [f"data.dnase_dir={tmp_path / 'dnase'}"], uri, 6, "end 60010 is beyond the end of chr21 (60000 bp)"
    if defect == "blacklist-non-integer":
        uri = write_file(tmp_path / "blacklist.bed.gz", "chr2\t100\t200\nchr3\t1,000\t2,000\n")
        return [f"data.blacklist={tmp_path / 'blacklist.bed.gz'}"], uri, 2, "start '1,000' is not an integer"
    raise AssertionError(defect)


@pytest.mark.parametrize(
    "defect",
    ["labels-header-only", "fai-missing", "fai-stale", "protein-residue", "dnase-beyond-end", "blacklist-non-integer"],
)
def test_preprocess_inputs_refuse_a_broken_copy(small_dataset, tmp_path, defect):
    overrides, uri, line, reason = _broken_copy(small_dataset, tmp_path, defect)
    config = small_config(tmp_path, f"data.root={local_path(small_dataset.data.root)}", "data.tfs=[CTCF]", *overrides)
    if defect == "fai-missing":
        with pytest.raises(MissingInputError, match=r"genome\.fa\.fai: genome FASTA index"):
            check_preprocess_inputs(config.data)
        return
    with pytest.raises(BadInputError) as err:
        check_preprocess_inputs(config.data)
    assert str(err.value) == f"{uri}:{line}: {reason}"


def _tfbs_preprocess(root: str, tmp_path: Path, *overrides: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "jobs.cli", "preprocess", "--config", str(DEMO_CONFIG)]
        + [f"--set={o}" for o in (f"data.root={root}", f"run_dir={tmp_path / 'run'}", "data.tfs=[CTCF]", *overrides)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.parametrize("defect", ["labels-header-only", "fai-stale"])
def test_cli_refuses_before_spark_in_one_line(small_dataset, tmp_path, defect):
    overrides, uri, line, reason = _broken_copy(small_dataset, tmp_path, defect)
    run = _tfbs_preprocess(local_path(small_dataset.data.root), tmp_path, *overrides)
    assert run.returncode == 2
    assert run.stderr.strip().splitlines()[-1] == f"error: {uri}:{line}: {reason}"
    assert "SparkContext" not in run.stderr and "Traceback" not in run.stderr


def _with_duplicate(dataset, tmp_path: Path) -> tuple[str, int, str, int]:
    """CTCF's labels with one chr2 row repeated; returns the labels dir, the repeat's line and reason, and the rows."""
    source = gzip.decompress(Path(local_path(dataset.data.labels_uri("CTCF"))).read_bytes()).decode()
    lines = source.splitlines(True)
    first_chr2 = next(i for i, line in enumerate(lines) if line.startswith("chr2\t"))
    position = first_chr2 + 7
    lines.insert(position + 1, lines[position])
    chrom, start = lines[position].split("\t")[:2]
    (tmp_path / "labels").mkdir()
    write_file(tmp_path / "labels" / "CTCF.train.labels.tsv.gz", "".join(lines))
    return str(tmp_path / "labels"), position + 2, f"duplicate of line {position + 1} ({chrom} {start})", len(lines) - 1


@pytest.mark.spark  # in a subprocess: the marker is not inferred from fixtures
def test_cli_duplicate_row_fails_in_spark_with_one_line(small_dataset, tmp_path):
    labels_dir, line, reason, _ = _with_duplicate(small_dataset, tmp_path)
    run = _tfbs_preprocess(local_path(small_dataset.data.root), tmp_path, f"data.labels_dir={labels_dir}")
    assert run.returncode == 2
    uri = f"file://{labels_dir}/CTCF.train.labels.tsv.gz"
    assert run.stderr.strip().splitlines()[-1] == f"error: {uri}:{line}: {reason}"
    # The task's traceback stays in Spark's log, above the one line.
    assert "Traceback (most recent call last)" in run.stderr and "label_reader.py" in run.stderr
    assert not list(tmp_path.glob("run/shards*"))


def test_duplicate_row_set_aside_is_counted_in_the_manifest(spark, small_dataset, tmp_path):
    from preprocess.build_shards import build_shards

    labels_dir, line, reason, n_rows = _with_duplicate(small_dataset, tmp_path)
    config = small_config(
        tmp_path,
        f"data.root={local_path(small_dataset.data.root)}",
        f"data.labels_dir={labels_dir}",
        "data.tfs=[CTCF]",
        "preprocess.bad_rows=set_aside",
    )
    manifest = build_shards(spark, config)
    assert manifest.inputs["CTCF"].input_rows == n_rows
    assert [entry.model_dump() for entry in manifest.inputs["CTCF"].rejected] == [{"line": line, "reason": reason}]
    for outcomes in manifest.counts["CTCF"].values():
        assert outcomes.rejected_bad_line == 1 and outcomes.total() == n_rows
