"""TensorFlow imported without Keras' optional scikit-learn and matplotlib integrations, the collector paused.

Keras 3 imports scikit-learn (for its estimator wrappers) and
``matplotlib.pyplot`` (for an image gallery) whenever they are installed,
and TensorFlow imports Keras eagerly. This project needs neither inside
Keras, yet every process that imports TensorFlow paid for both: 1.25 of the
4.9 CPU seconds of ``import tensorflow`` on the 2-core machine of
docs/testing.md, once per Spark Python worker that runs a TF node or scores
a model, and once per job driver. :func:`install` hides the two packages
while the first of ``tensorflow`` or ``keras`` is imported (Keras then
leaves those integrations out, as it does where they are not installed) and
gives them back as soon as it is done: the boosted baseline and the report's
plots import them as before, only ``keras.wrappers.SKLearn*`` and
``keras.visualization.plot_image_gallery`` are unusable in the process,
and another thread importing either package during those seconds would
get an ImportError.

The same import also runs with Python's cyclic garbage collector paused,
and what it built is then frozen out of the collector's reach
(:func:`gc.freeze`). The import creates about half a million objects that
live as long as the process and almost no cycles to free (about 2,000
objects in all): with the collector on, it ran some 800 collections during
the import, each walking the survivors so far, 0.75 of 3.7 CPU seconds.
Frozen, they are also spared every full collection the process makes later
(a training's tracing and Keras' model building allocate plenty). What the
freeze keeps from those few cycles is under a megabyte, once a process.
"""

from __future__ import annotations

import gc
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from types import ModuleType

#: Imported by Keras only when installed, and used by this project outside Keras alone.
OPTIONAL_IN_KERAS = ("sklearn", "matplotlib")
#: Either one's first import brings in the other (TensorFlow imports Keras, Keras TensorFlow).
ENTRY_MODULES = ("tensorflow", "keras")


class _HidingLoader(importlib.abc.Loader):
    """Runs ``loader``'s module with :data:`OPTIONAL_IN_KERAS` unimportable, then makes them importable again."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self.loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        # A None entry makes `import name` raise ImportError, the path Keras takes without the package.
        hidden = [name for name in OPTIONAL_IN_KERAS if name not in sys.modules]
        for name in hidden:
            sys.modules[name] = None  # type: ignore[assignment]
        collecting = gc.isenabled()
        gc.disable()
        try:
            self.loader.exec_module(module)
        finally:
            for name in hidden:
                if name in sys.modules and sys.modules[name] is None:
                    del sys.modules[name]
            if collecting:
                gc.enable()
        gc.freeze()


class _FirstTensorFlowImport(importlib.abc.MetaPathFinder):
    """Wraps the loader of the first :data:`ENTRY_MODULES` import, then steps aside."""

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if name not in ENTRY_MODULES:
            return None
        uninstall()
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _HidingLoader(spec.loader)
        return spec


def install() -> None:
    """Hide :data:`OPTIONAL_IN_KERAS` during this process's first TensorFlow or Keras import (idempotent).

    Nothing happens when either is imported already (``tests/training/test_lean_import.py`` shows both cases).
    """
    if installed() or any(name in sys.modules for name in ENTRY_MODULES):
        return
    sys.meta_path.insert(0, _FirstTensorFlowImport())


def installed() -> bool:
    """Whether the next TensorFlow or Keras import will hide :data:`OPTIONAL_IN_KERAS`."""
    return any(isinstance(finder, _FirstTensorFlowImport) for finder in sys.meta_path)


def uninstall() -> None:
    """Import TensorFlow and Keras as usual from now on."""
    sys.meta_path[:] = [finder for finder in sys.meta_path if not isinstance(finder, _FirstTensorFlowImport)]
