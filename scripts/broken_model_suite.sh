#!/usr/bin/env bash
# The broken-model check: `make test`'s suite with every model trained on
# shuffled labels (scripts/broken_model/sitecustomize.py). Every test that
# judges a trained model should fail; the list of those that pass is the
# report. Arguments go to tests/run_suite.py (e.g. -rA --basetemp=DIR).
#
#   bash scripts/broken_model_suite.sh -rA
#
# Writes the trainings it shuffled to $TFBS_BROKEN_MODEL_LOG (default
# <clone>/build/broken-model-trainings.tsv): one line per training stream,
# the test and the process.
set -euo pipefail
clone=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH="$clone/scripts/broken_model${PYTHONPATH:+:$PYTHONPATH}"
export TFBS_BROKEN_MODEL_LOG="${TFBS_BROKEN_MODEL_LOG:-$clone/build/broken-model-trainings.tsv}"
mkdir -p "$(dirname "$TFBS_BROKEN_MODEL_LOG")"
: > "$TFBS_BROKEN_MODEL_LOG"
chmod 666 "$TFBS_BROKEN_MODEL_LOG"
exec "$clone/.venv/bin/python" "$clone/tests/run_suite.py" "$@"
