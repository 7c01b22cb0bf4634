#!/usr/bin/env bash
# What YARN containers run the pipeline with (scripts/submit_yarn.sh ships both):
#   build/dist/tfbs-env.tar.gz   the packed Python environment
#                                (--archives build/dist/tfbs-env.tar.gz#environment
#                                 --conf spark.pyspark.python=./environment/bin/python)
#   build/dist/spark-jars.zip    the jars of that environment's pyspark, for
#                                spark.yarn.archive (else every application
#                                uploads ~400 MB of jars)
# A fresh virtualenv with the package installed as a wheel (not editable: the
# archive must not point back at this checkout), packed by venv-pack so it
# unpacks and runs anywhere with the same OS and Python. Rebuilt only when the
# package's sources or dependencies changed.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3.11}"
OUT=build/dist
ENV="$OUT/env"
ARCHIVE="$OUT/tfbs-env.tar.gz"
JARS="$OUT/spark-jars.zip"
STAMP="$OUT/.sources.sha256"

sources=$(find pyproject.toml setup.py tfbs preprocess synthetic tf_models jobs -type f -not -path '*/__pycache__/*' \
  | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1)
if [ -f "$ARCHIVE" ] && [ -f "$JARS" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$sources" ]; then
  echo "up to date: $ARCHIVE"
  exit 0
fi
rm -rf "$ENV" "$ARCHIVE" "$JARS" "$STAMP"
mkdir -p "$OUT"
started=$(date +%s)
"$PYTHON" -m venv "$ENV"
"$ENV/bin/python" -m pip install --quiet --upgrade pip
"$ENV/bin/python" -m pip install --quiet '.[hdfs]' venv-pack
"$ENV/bin/venv-pack" --quiet -p "$ENV" -o "$ARCHIVE"
# Jars at the zip's top level, stored (they are compressed already).
"$ENV/bin/python" - "$JARS.tmp" <<'PY'
import pathlib, sys, zipfile
import pyspark
jars = sorted((pathlib.Path(pyspark.__file__).parent / "jars").glob("*.jar"))
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_STORED) as archive:
    for jar in jars:
        archive.write(jar, jar.name)
PY
mv "$JARS.tmp" "$JARS"
echo "$sources" > "$STAMP"
echo "built $ARCHIVE ($(du -h "$ARCHIVE" | cut -f1)) and $JARS ($(du -h "$JARS" | cut -f1)) in $(( $(date +%s) - started )) s"
