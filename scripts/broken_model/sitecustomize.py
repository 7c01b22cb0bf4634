"""Train every model of the process on shuffled labels: the suite's broken-model check.

Python imports ``sitecustomize`` at start-up from the first folder of its path
that has one; ``scripts/broken_model_suite.sh`` puts this folder on
``PYTHONPATH``, so the tests' own processes, their ``tfbs`` commands and the
Spark workers and TF nodes those start all load it. Nothing of the product
changes: once ``tf_models.training_run`` is imported, its training stream is
wrapped to set ``train.shuffle_labels`` (the labels permuted within each
batch, the features untouched). A model trained so has learnt nothing about
binding; a test that still passes does not check what the model learnt.

YARN's containers get the folder too: Spark adds the submitting process's
``PYTHONPATH`` to theirs. A standalone cluster's executors take theirs from
the application's settings: a session this process starts gets
``spark.executorEnv.PYTHONPATH`` (through ``PYSPARK_SUBMIT_ARGS``, unless
set already) and the log's name.

Each wrapped stream appends a line to ``$TFBS_BROKEN_MODEL_LOG`` (the test
running, the process), so the report can tell the tests that trained
shuffled from those whose training never loaded this file (processes started
with an environment of their own, e.g. as another user).
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys


def _record() -> None:
    log = os.environ.get("TFBS_BROKEN_MODEL_LOG")
    if not log:
        return
    test = os.environ.get("PYTEST_CURRENT_TEST", "-").split(" (")[0]
    try:
        with open(log, "a") as out:
            out.write(f"{test}\t{os.getpid()}\n")
    except OSError:  # another user's process: the log is the suite's user's
        pass


def _shuffle_the_labels(module) -> None:
    original = module.TrainingRun.dataset

    def dataset(self, cfg, *args, **kwargs):
        _record()
        return original(self, cfg.model_copy(update={"shuffle_labels": True}), *args, **kwargs)

    module.TrainingRun.dataset = dataset


def _executors_too() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    settings = [f"spark.executorEnv.PYTHONPATH={here}"]
    if os.environ.get("TFBS_BROKEN_MODEL_LOG"):
        settings.append(f"spark.executorEnv.TFBS_BROKEN_MODEL_LOG={os.environ['TFBS_BROKEN_MODEL_LOG']}")
    arguments = " ".join(f"--conf {setting}" for setting in settings)
    os.environ.setdefault("PYSPARK_SUBMIT_ARGS", f"{arguments} pyspark-shell")


#: Each module to patch once it is imported, and its patch.
PATCHES = {"tf_models.training_run": _shuffle_the_labels}


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the loader of each of :data:`PATCHES` so its patch follows its execution."""

    def find_spec(self, name, path, target=None):
        if name not in PATCHES:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        execute = loader.exec_module

        def exec_module(module):
            execute(module)
            PATCHES[name](module)

        loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _AfterImport())
_executors_too()
