#!/usr/bin/env bash
# Create (idempotently) .venv-petastorm: an environment of its own for the
# Petastorm comparison benchmark (bench/input_vs_petastorm.py) only.
#
#     bash scripts/petastorm_env.sh            # prints the venv's python
#
# Petastorm 0.13.1 (unmaintained) uses pyarrow APIs removed after pyarrow 13,
# which needs numpy<2 and pandas<2.3; TensorFlow 2.17 is the newest
# tensorflow-cpu built against numpy 1.x (2.18 requires numpy 2 ABI). None of
# this touches the project's .venv.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${PETASTORM_VENV:-$ROOT/.venv-petastorm}"
PYTHON="${PYTHON:-python3.11}"
PINS=(petastorm==0.13.1 pyarrow==13.0.0 'numpy<2' 'pandas<2.3' tensorflow-cpu==2.17.1 'setuptools<82')

if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi
# Skip pip entirely when every pin is already satisfied.
if ! "$VENV/bin/python" - "${PINS[@]}" <<'EOF' 2>/dev/null
import sys
from importlib.metadata import version, PackageNotFoundError
from packaging.requirements import Requirement
for spec in sys.argv[1:]:
    req = Requirement(spec)
    if not req.specifier.contains(version(req.name), prereleases=True):
        sys.exit(1)
EOF
then
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    "$VENV/bin/python" -m pip install --quiet "${PINS[@]}"
fi
"$VENV/bin/python" -c 'import petastorm, pyarrow, tensorflow as tf, numpy; print("petastorm", petastorm.__version__, "pyarrow", pyarrow.__version__, "numpy", numpy.__version__, "tensorflow", tf.__version__)' >&2
echo "$VENV/bin/python"
