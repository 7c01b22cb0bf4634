"""Modules that moved into a floor's subpackage, still importable by the names users knew.

``import tfbs.bed`` (or ``from tfbs import bed``) gives the very module
:mod:`tfbs.formats.bed` and warns once (``DeprecationWarning``) with its new
name; the project itself imports only the new names.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType

_FORMATS = "annotate bed bedtools dream expression genome labels manifest metrics motifs proteins records submission"
_LAUNCH = "class_archive current_tokens kerberos session web_ui"
_STORAGE = "content_keys dir_swap hadoop_conf owned_dirs private_dirs"

#: Old name -> new name, for every module the floors' subpackages took in.
MOVED: dict[str, str] = {
    **{f"tfbs.{name}": f"tfbs.formats.{name}" for name in _FORMATS.split()},
    **{f"tfbs.{name}": f"tfbs.launch.{name}" for name in _LAUNCH.split()},
    **{f"tfbs.{name}": f"tfbs.storage.{name}" for name in _STORAGE.split()},
    "tfbs.storage_gateway": "tfbs.storage.gateway",
    "tfbs.storage_gateway_server": "tfbs.storage.gateway_server",
}


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves an old name of :data:`MOVED` to the module under its new name (one module object, not a copy)."""

    def find_spec(
        self, fullname: str, path: object, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        return importlib.util.spec_from_loader(fullname, self) if fullname in MOVED else None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(f"{spec.name} moved to {MOVED[spec.name]}", DeprecationWarning, stacklevel=2)
        return importlib.import_module(MOVED[spec.name])

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module was executed under its new name."""


def install() -> None:
    """Put :class:`MovedModules` on the import path once (``tfbs/__init__.py`` calls it)."""
    if not any(isinstance(finder, MovedModules) for finder in sys.meta_path):
        sys.meta_path.append(MovedModules())
