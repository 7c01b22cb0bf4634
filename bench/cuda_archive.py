"""Benchmark: the YARN archive for GPU nodes (``make dist GPU=1``), built and checked here.

No GPU exists on this machine, so this builds what a GPU node would run and
checks what can be checked without one:

- ``scripts/build_dist.sh`` with ``GPU=1``: the standalone environment with
  ``tensorflow[and-cuda]`` from PyPI (the ``gpu`` extra), its build time and
  size beside the CPU archive's (built first if missing);
- the archive unpacked as YARN does (``./environment``), its Python run with
  nothing of this machine's Python on the path: TensorFlow reports it is
  built with CUDA and which CUDA and cuDNN it carries;
- the CPU fallback: a chief given a GPU (``gpus_per_worker: 1``) on a host
  without one logs the warning that it runs on the CPU, and why
  (:func:`tf_models.gpus.log_devices`).

Prints JSON and writes ``bench/results/cuda_archive.json``. The build
downloads the CUDA wheels (some GB) once; later runs reuse pip's cache.

    .venv/bin/python bench/cuda_archive.py
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DIST = ROOT / "build" / "dist"
sys.path.insert(0, str(ROOT))

from bench.report import result_path, write_summary  # noqa: E402

#: Run by the archive's own Python inside the unpacked environment.
PROBE = """
import json, logging, io, sys
import tensorflow as tf
from tf_models.gpus import log_devices
stream = io.StringIO()
logging.basicConfig(stream=stream, level=logging.INFO)
log_devices("chief", 0, 1)
build = tf.sysconfig.get_build_info()
print(json.dumps({
    "tensorflow": tf.__version__,
    "built_with_cuda": tf.test.is_built_with_cuda(),
    "cuda_version": build.get("cuda_version"),
    "cudnn_version": build.get("cudnn_version"),
    "gpus_visible": len(tf.config.list_physical_devices("GPU")),
    "fallback_log": stream.getvalue().strip().splitlines(),
}))
"""


def build(gpu: bool) -> dict:
    """``scripts/build_dist.sh`` for one flavour; its wall time and the archive's size."""
    archive = DIST / ("tfbs-env-gpu.tar.gz" if gpu else "tfbs-env.tar.gz")
    env = {**os.environ, "GPU": "1" if gpu else "0", "PYTHON": os.environ.get("PYTHON", "python3.11")}
    started = time.monotonic()
    done = subprocess.run(["bash", "scripts/build_dist.sh"], cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"build_dist.sh GPU={int(gpu)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    return {
        "archive": str(archive.relative_to(ROOT)),
        "bytes": archive.stat().st_size,
        "build_seconds": round(time.monotonic() - started, 1),
        "log": done.stdout.strip().splitlines()[-1:],
    }


def probe(archive: Path) -> dict:
    """Unpack as YARN does and run :data:`PROBE` with the archive's Python alone."""
    with tempfile.TemporaryDirectory(prefix="tfbs-cuda-archive-") as work:
        environment = Path(work) / "environment"
        environment.mkdir()
        with tarfile.open(archive) as packed:
            packed.extractall(environment, filter="tar")
        done = subprocess.run(
            [str(environment / "bin" / "python"), "-c", PROBE],
            cwd=work,
            env={"PATH": "/usr/bin:/bin", "HOME": work, "TF_CPP_MIN_LOG_LEVEL": "2"},
            capture_output=True,
            text=True,
        )
    if done.returncode:
        sys.exit(f"the archive's Python failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=result_path("cuda_archive"))
    args = parser.parse_args(argv)
    cpu = build(gpu=False)
    gpu = build(gpu=True)
    checked = probe(ROOT / gpu["archive"])
    summary = {
        "cpu": cpu,
        "gpu": gpu,
        "size_ratio_gpu_to_cpu": round(gpu["bytes"] / cpu["bytes"], 2),
        "gpu_archive_check": checked,
    }
    write_summary(summary, args.out, args)
    # With CUDA built in and no device here, the node must say it falls back to the CPU, and why.
    ok = checked["built_with_cuda"] and any("finds no GPU device" in line for line in checked["fallback_log"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
