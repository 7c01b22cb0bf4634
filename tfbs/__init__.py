"""tfbs-spark core: what the stages share; it imports none of them.

Configuration, storage URIs, the shard contract (records, manifest,
lineage), the input formats of ENCODE-DREAM, the official metrics and the
Spark sessions. The stages live in ``preprocess``, ``tf_models`` and
``jobs`` (whose ``jobs/cli.py`` is the ``tfbs`` command).
"""

#: The package's version, written here only: ``pyproject.toml`` reads it
#: (``[tool.setuptools.dynamic]``) and lineage records it as ``tfbs_version``.
__version__ = "0.2.0"

from tfbs import moved as _moved

_moved.install()
