"""Writing a benchmark's result: printed, and saved as JSON for later runs to compare."""

from __future__ import annotations

import json
from pathlib import Path


def write_summary(summary: dict, out: str) -> None:
    """Print ``summary`` as JSON and write it to ``out`` (parents created)."""
    text = json.dumps(summary, indent=2)
    print(text)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(text + "\n")
