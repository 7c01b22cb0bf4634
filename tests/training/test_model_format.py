"""The model's code counts itself: a change to what defines a model fails here until it is recorded.

The recorded fingerprint (``tf_models/model_code.json``) is part of every
model version's name and lineage (``tests/configuration/test_changes.py`` checks that
another one retrains), so recording it retrains; forgetting to is this
file's failure.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tf_models import model_format
from tf_models.model_format import MODEL_CODE_FILES, code_fingerprint, record, recorded_model_code, unrecorded_changes


def test_the_model_code_is_as_recorded():
    changed = unrecorded_changes()
    assert not changed, (
        f"the model's code changed since it was recorded ({', '.join(changed)}): run "
        "`python -m tf_models.model_format --record` and commit tf_models/model_code.json; every run after it "
        "trains a new model version (docs/operations.md, 'Model versions and lineage')"
    )
    assert recorded_model_code() == code_fingerprint()


@pytest.fixture
def checkout(tmp_path) -> Path:
    """A copy of the model's code files and their record, to edit."""
    root = tmp_path / "checkout"
    for name in MODEL_CODE_FILES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(model_format.repository_root() / name, root / name)
    shutil.copyfile(model_format.record_path(), root / "record.json")
    return root


def _edit(root: Path, name: str, old: str, new: str) -> None:
    path = root / name
    text = path.read_text()
    assert old in text, f"{old!r} not in {name}"
    path.write_text(text.replace(old, new, 1))


def test_a_change_of_what_models_learn_fails_until_recorded(checkout):
    record_file = checkout / "record.json"
    assert unrecorded_changes(checkout, record_file) == []
    # Layout only: the same tokens. Then new code: the file is named.
    _edit(checkout, "tf_models/model.py", "import", "import  ")  # spacing: no token changes
    assert unrecorded_changes(checkout, record_file) == []
    encoding = checkout / "tf_models" / "encoding.py"
    encoding.write_text(encoding.read_text() + "\n\ndef _helper():\n    return 1\n")
    assert unrecorded_changes(checkout, record_file) == ["tf_models/encoding.py"]

    recorded = record(checkout, record_file)
    assert unrecorded_changes(checkout, record_file) == []
    assert recorded != recorded_model_code() and recorded_model_code(record_file) == recorded
    assert json.loads(record_file.read_text())["files"].keys() == set(MODEL_CODE_FILES)


def test_comments_docstrings_and_wrapping_are_no_part_of_it(checkout):
    before = code_fingerprint(checkout)
    path = checkout / "tf_models" / "layers.py"
    text = path.read_text()
    lines = text.splitlines(keepends=True)
    # A comment, a blank line, and the module's docstring rewritten.
    docstring_end = text.index('"""', 3) + 3
    path.write_text('"""Another docstring."""' + text[docstring_end:] + "\n# why, not what\n\n")
    assert code_fingerprint(checkout) == before
    path.write_text("".join(lines) + "\nLEAKY = 0.1\n")
    assert code_fingerprint(checkout) != before


def test_the_check_exits_1_naming_the_files(checkout, monkeypatch, capsys):
    monkeypatch.setattr(model_format, "repository_root", lambda: checkout)
    monkeypatch.setattr(model_format, "record_path", lambda: checkout / "record.json")
    assert model_format.main([]) == 0
    (checkout / "tfbs" / "formats" / "records.py").write_text(
        (checkout / "tfbs" / "formats" / "records.py").read_text() + "\nX = 1\n"
    )
    assert model_format.main([]) == 1
    assert capsys.readouterr().err.startswith(
        "the model's code changed since it was recorded: tfbs/formats/records.py; run "
    )
    assert model_format.main(["--record"]) == 0 and model_format.main([]) == 0
