"""``make dist``'s packed environment runs on a node with no Python installed.

YARN unpacks ``build/dist/tfbs-env.tar.gz`` as ``./environment`` in each
container and executors run ``./environment/bin/python``. Here the archive is
unpacked the same way and run in a mount namespace where this machine's
Python installation, the project's ``.venv`` and this checkout are empty
directories: whatever the interpreter or the pipeline's packages load must
come from the archive (or be an OS library).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO

pytestmark = pytest.mark.slow

#: Never hidden, even when Python was installed there (it holds the OS itself).
SYSTEM_DIRS = {Path("/"), Path("/usr"), Path("/usr/local")}
#: Where a node's OS libraries are: the only files outside the archive the environment may load.
OS_LIBRARY_DIRS = ("/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/")
#: What the executors import, and where each part came from.
PROBE = """
import json, sys
import tfbs, preprocess, tf_models, pyspark, tensorflow
mapped = set()
with open("/proc/self/maps") as maps:
    for line in maps:
        fields = line.split(None, 5)
        if len(fields) == 6 and fields[5].startswith("/"):
            mapped.add(fields[5].strip())
print(json.dumps({
    "prefix": sys.prefix,
    "base_prefix": sys.base_prefix,
    "path": [entry for entry in sys.path if entry],
    "modules": [module.__file__ for module in (tfbs, preprocess, tf_models, pyspark, tensorflow)],
    "mapped": sorted(mapped),
    "tensorflow": tensorflow.__version__,
}))
"""


def _host_python() -> list[Path]:
    """This machine's Python: its installation, the ``.venv`` and this checkout (outermost first)."""
    candidates = sorted({Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), REPO.resolve()} - SYSTEM_DIRS)
    hidden: list[Path] = []
    for path in candidates:
        if not any(path.is_relative_to(outer) for outer in hidden):
            hidden.append(path)
    return hidden


@pytest.fixture(scope="module")
def container(dist_archive, tmp_path_factory) -> Iterator[Path]:
    """A container's working directory: the archive unpacked as ``./environment``, as YARN does."""
    # The test's point is running with the host's Python hidden: without a mount namespace it fails, never skips.
    assert shutil.which("unshare"), "unshare (util-linux) is needed to hide the host's Python"
    probe = subprocess.run(["unshare", "--mount", "--map-root-user", "true"], capture_output=True, text=True)
    assert probe.returncode == 0, f"no mount namespace here: {probe.stderr.strip()}"
    workdir = tmp_path_factory.mktemp("container")
    assert not any(workdir.resolve().is_relative_to(path) for path in _host_python())
    (workdir / "environment").mkdir()
    subprocess.run(["tar", "-xzf", str(dist_archive / "tfbs-env.tar.gz"), "-C", "environment"], cwd=workdir, check=True)
    yield workdir
    shutil.rmtree(workdir / "environment")  # 1.9 GB unpacked, and the suite's Hadoop tests come next


def _run_without_host_python(workdir: Path, *command: str) -> subprocess.CompletedProcess:
    """``command`` in ``workdir``, with the host's Python installation, venv and checkout hidden under empty tmpfs."""
    hide = 'while [ "$1" != -- ]; do mount -t tmpfs tmpfs "$1" || exit 97; shift; done; shift; exec "$@"'
    hidden = [str(path) for path in _host_python()]
    # As a container's: no PYTHONPATH or PYTHONHOME, nothing on PATH but the OS.
    env = {"PATH": "/usr/bin:/bin", "HOME": str(workdir), "LANG": "C.UTF-8", "TF_CPP_MIN_LOG_LEVEL": "2"}
    return subprocess.run(
        ["unshare", "--mount", "--map-root-user", "sh", "-c", hide, "sh", *hidden, "--", *command],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_pipeline_imports_from_the_archive_alone(container):
    done = _run_without_host_python(container, "./environment/bin/python", "-c", PROBE)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.splitlines()[-1])
    environment = str((container / "environment").resolve())
    # A Python prefix of its own, not a virtualenv of the host's.
    assert found["prefix"] == found["base_prefix"] == environment
    assert not (container / "environment" / "pyvenv.cfg").exists()
    for where in [*found["path"], *found["modules"]]:
        assert where.startswith(environment + os.sep), where
    # The project's packages are copies, not links back to the checkout.
    assert found["modules"][0] == f"{environment}/lib/python3.11/site-packages/tfbs/__init__.py"
    assert found["tensorflow"]
    outside = [path for path in found["mapped"] if not path.startswith((environment + os.sep, *OS_LIBRARY_DIRS))]
    assert not outside, outside


def test_console_scripts_run_from_where_the_archive_was_unpacked(container):
    done = _run_without_host_python(container, "./environment/bin/tfbs", "--help")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "usage: tfbs" in done.stdout + done.stderr


def test_the_archive_is_rebuilt_only_when_its_sources_change(dist_archive):
    archive = dist_archive / "tfbs-env.tar.gz"
    before = archive.stat().st_mtime_ns
    env = {**os.environ, "PYTHON": getattr(sys, "_base_executable", sys.executable)}
    again = subprocess.run(["bash", "scripts/build_dist.sh"], cwd=REPO, env=env, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stdout.startswith("up to date:")
    assert archive.stat().st_mtime_ns == before
