"""The model's code in its identity: a fingerprint of the modules that define what a model learns.

A model version is named by its shards, its ``train`` settings and the code
that trains it (:mod:`tfbs.lineage`). That code was once counted by hand
(``tf_models.MODEL_FORMAT``), and a change that altered what models learn
went out without a bump, so deployed models were never retrained under it.
Here the code counts itself: :data:`MODEL_CODE_FILES` (the model, its layers,
the encodings, the input pipeline, the optimizer and training loop, early
stopping and the choice of the exported weights, the export, how training
starts and its numeric policy, the record layout and the protein alphabet) are hashed (SHA-256 of each file's
:func:`normalised_source`, in order), and the digest recorded in
:data:`RECORD_NAME` beside this module is part of every version's lineage
and name. So:

- changing any of those files without recording fails
  ``tests/training/test_model_format.py`` (and ``python -m tf_models.model_format``
  exits 1), naming the files to look at;
- recording (``python -m tf_models.model_format --record``) makes every run
  after it a new model: ``tfbs changes`` reports "model code", training
  trains a new version beside the old ones, and a version that failed its
  floors is tried again.

Comments, docstrings, blank lines and how lines are wrapped are no part of
the fingerprint; anything else is, even a change that keeps what models
learn (it then retrains once: the price of a rule nobody has to remember).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import io
import json
import sys
import tokenize
from pathlib import Path

#: The code that defines a model and its training, relative to the repository root.
MODEL_CODE_FILES = (
    "tf_models/model.py",
    "tf_models/layers.py",
    "tf_models/motif_cnn.py",
    "tf_models/summit_ring.py",
    "tf_models/summit_classes.py",
    "tf_models/expression_products.py",
    "tf_models/factornet.py",
    "tf_models/encoding.py",
    "tf_models/input_pipeline.py",
    "tf_models/optimizer.py",
    "tf_models/packed_step.py",
    "tf_models/train_loop.py",
    "tf_models/weight_average.py",
    "tf_models/training_run.py",
    "tf_models/train_progress.py",
    "tf_models/export.py",
    # How training starts: the seed motifs of the first filters and the expression table (node_inputs.py),
    # each node's strategy (node.py), and the numeric policy (mixed precision, gpus.py).
    "tf_models/node_inputs.py",
    "tf_models/node.py",
    "tf_models/gpus.py",
    "tfbs/formats/records.py",
    "tfbs/formats/proteins.py",
)
#: Beside this module: the fingerprint recorded for the code as it is (package data).
RECORD_NAME = "model_code.json"
#: Tokens that carry no meaning: how lines break and what is commented.
_LAYOUT_TOKENS = (tokenize.COMMENT, tokenize.NL, tokenize.ENCODING)


def repository_root() -> Path:
    """The folder holding ``tf_models/`` and ``tfbs/`` (the checkout, or site-packages when installed)."""
    return Path(__file__).resolve().parents[1]


def record_path() -> Path:
    """Where the recorded fingerprint lives: ``tf_models/model_code.json``."""
    return Path(__file__).resolve().with_name(RECORD_NAME)


def _docstring_starts(tree: ast.Module) -> set[tuple[int, int]]:
    """``(line, column)`` of every docstring: the first statement of the module, a class or a function, if a string."""
    starts = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                starts.add((first.lineno, first.col_offset))
    return starts


def normalised_source(text: str) -> str:
    """Python source as its meaningful tokens, one per line: no comments, docstrings or line layout.

    Tokens, not the syntax tree: :mod:`ast`'s dump changes between Python
    versions, which would retrain every model on an interpreter upgrade.

    Examples
    --------
    >>> a = "def f(x):\\n    'Doc.'\\n    return (x +  # why\\n            1)\\n"
    >>> b = "def f(x):\\n\\n    return (x + 1)\\n"
    >>> normalised_source(a) == normalised_source(b)
    True
    >>> normalised_source(b) == normalised_source(b.replace("1", "2"))
    False
    """
    docstrings = _docstring_starts(ast.parse(text))
    kept = []
    after_docstring = False
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type in _LAYOUT_TOKENS:
            continue
        if token.type == tokenize.STRING and token.start in docstrings:
            after_docstring = True  # the docstring's statement ends with a NEWLINE of its own: that goes too
            continue
        if after_docstring and token.type == tokenize.NEWLINE:
            after_docstring = False
            continue
        after_docstring = False
        kept.append(f"{tokenize.tok_name[token.type]} {token.string}")
    return "\n".join(kept)


def code_fingerprint(root: Path | None = None) -> str:
    """SHA-256 (hex) over :data:`MODEL_CODE_FILES` as they are under ``root`` (the repository's by default)."""
    base = root or repository_root()
    digest = hashlib.sha256()
    for name in MODEL_CODE_FILES:
        digest.update(f"{name}\n".encode())
        digest.update(normalised_source((base / name).read_text(encoding="utf-8")).encode())
        digest.update(b"\n\0")
    return digest.hexdigest()


def file_fingerprints(root: Path | None = None) -> dict[str, str]:
    """SHA-256 of each file's :func:`normalised_source`: recorded beside the whole so a mismatch names its files."""
    base = root or repository_root()
    return {
        name: hashlib.sha256(normalised_source((base / name).read_text(encoding="utf-8")).encode()).hexdigest()
        for name in MODEL_CODE_FILES
    }


def recorded_model_code(record: Path | None = None) -> str:
    """The fingerprint recorded in :data:`RECORD_NAME`: this code's part of every model version's identity.

    Raises
    ------
    FileNotFoundError
        If nothing was recorded (run ``python -m tf_models.model_format --record``).
    """
    return str(json.loads((record or record_path()).read_text(encoding="utf-8"))["fingerprint"])


def unrecorded_changes(root: Path | None = None, record: Path | None = None) -> list[str]:
    """The files of :data:`MODEL_CODE_FILES` whose code differs from what was recorded; empty when none does."""
    recorded = json.loads((record or record_path()).read_text(encoding="utf-8"))
    now = file_fingerprints(root)
    changed = [name for name in MODEL_CODE_FILES if recorded.get("files", {}).get(name) != now[name]]
    if not changed and recorded.get("fingerprint") != code_fingerprint(root):
        changed = ["(the list of files)"]
    return changed


def record(root: Path | None = None, record: Path | None = None) -> str:
    """Write :data:`RECORD_NAME` for the code as it is; returns the fingerprint."""
    fingerprint = code_fingerprint(root)
    text = json.dumps({"fingerprint": fingerprint, "files": file_fingerprints(root)}, indent=2) + "\n"
    (record or record_path()).write_text(text, encoding="utf-8")
    return fingerprint


def main(argv: list[str] | None = None) -> int:
    """Check (exit 1 when the model's code changed unrecorded) or ``--record`` the fingerprint."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--record", action="store_true", help="record the code as it is: every later run trains a new model version"
    )
    args = parser.parse_args(argv)
    if args.record:
        print(f"recorded model code {record()} in {record_path()}")
        return 0
    changed = unrecorded_changes()
    if changed:
        print(
            f"the model's code changed since it was recorded: {', '.join(changed)}; run "
            "`python -m tf_models.model_format --record`: every run after it trains a new model version",
            file=sys.stderr,
        )
        return 1
    print(f"model code {recorded_model_code()}: as recorded")
    return 0


if __name__ == "__main__":
    sys.exit(main())
