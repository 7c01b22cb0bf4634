"""Benchmark: large writes and reads on HDFS through the project's storage, against ``hdfs dfs -put`` / ``-get``.

On Hadoop's own mini cluster (``hadoop/minicluster.py``, one NameNode and one
DataNode on this machine), the same bytes each way, one after the other,
``--repeats`` rounds:

- ``put``: Hadoop's shell (``FsShell -put``, what ``hdfs dfs -put`` runs,
  JVM start included) against ``tfbs.storage.upload_file`` (checkpoints,
  exports, staged files) and a Parquet table written through
  ``tfbs.storage.open_output`` (shards, predictions);
- ``get``: ``FsShell -get`` against ``tfbs.storage.fetch_file`` (record
  caches, resumed model directories).

Medians and ratios project / shell (issue 16's target: >= 0.7 both ways).
Prints JSON and writes ``bench/results/hdfs_speed.json``.

    .venv/bin/python bench/hdfs_speed.py --megabytes 512 --repeats 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "hadoop"))

from bench.report import result_path, write_summary  # noqa: E402


def shell(cluster, *arguments: str) -> float:
    """Hadoop's ``FsShell`` (``hdfs dfs``) on the cluster's class path and client configuration; its wall time."""
    from jvm import ensure_classpath

    class_path = f"{cluster.conf_dir}:{ensure_classpath(cluster.cache_dir)}/*"
    started = time.monotonic()
    subprocess.run(
        ["java", "-cp", class_path, "org.apache.hadoop.fs.FsShell", *arguments],
        check=True,
        env={**os.environ, **cluster.env()},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.monotonic() - started


def timed(action) -> float:
    started = time.monotonic()
    action()
    return time.monotonic() - started


def parquet_table(n_bytes: int):
    """A table shaped like the shards' (sequence bytes, a few small columns), about ``n_bytes`` on disk."""
    import numpy as np
    import pyarrow as pa

    window = 1000
    rows = n_bytes // window
    rng = np.random.default_rng(0)
    sequences = rng.choice(np.frombuffer(b"ACGT", np.uint8), size=(rows, window))
    return pa.table(
        {
            "start": pa.array(np.arange(rows, dtype=np.int64) * 50),
            "label_code": pa.array(rng.integers(0, 2, rows).astype(np.int8)),
            "sequence": pa.array([row.tobytes() for row in sequences], pa.binary()),
        }
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--megabytes", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workdir", default=None, help="mini cluster work dir (default: a temporary one)")
    parser.add_argument("--out", default=result_path("hdfs_speed"))
    args = parser.parse_args(argv)

    import pyarrow.parquet as pq
    from minicluster import MiniCluster

    from tfbs import storage

    scratch = Path(tempfile.mkdtemp(prefix="tfbs-hdfs-bench-"))
    source = scratch / "blob.bin"
    with open(source, "wb") as out:
        for _ in range(args.megabytes):
            out.write(os.urandom(1 << 20))
    table = parquet_table(args.megabytes << 20)
    runs: dict[str, list[float]] = {
        "shell_put": [],
        "upload_file": [],
        "parquet": [],
        "shell_get": [],
        "fetch_file": [],
    }
    with MiniCluster(args.workdir or str(scratch / "cluster")) as cluster:
        base = f"{cluster.fs_default_fs}/bench"
        shell(cluster, "-mkdir", "-p", base)
        for round_index in range(args.repeats):
            runs["shell_put"].append(shell(cluster, "-put", "-f", str(source), f"{base}/shell.bin"))
            runs["upload_file"].append(timed(lambda: storage.upload_file(source, f"{base}/project.bin")))

            def write_parquet() -> None:
                with storage.open_output(f"{base}/shard.parquet", compression=None) as stream:
                    pq.write_table(table, stream, compression="zstd")

            runs["parquet"].append(timed(write_parquet))
            for name in ("shell.bin", "project.bin"):
                (scratch / name).unlink(missing_ok=True)
            runs["shell_get"].append(shell(cluster, "-get", f"{base}/shell.bin", str(scratch / "shell.bin")))
            runs["fetch_file"].append(timed(lambda: storage.fetch_file(f"{base}/project.bin", scratch / "project.bin")))
            print(
                f"round {round_index + 1}/{args.repeats}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in runs.items())
            )
        parquet_bytes = storage.list_sizes(base)[f"{base}/shard.parquet"]
    medians = {name: statistics.median(values) for name, values in runs.items()}
    megabytes = args.megabytes
    summary = {
        "megabytes": megabytes,
        "parquet_megabytes": round(parquet_bytes / (1 << 20), 1),
        "mb_per_s": {
            "shell_put": megabytes / medians["shell_put"],
            "upload_file": megabytes / medians["upload_file"],
            "parquet_write": parquet_bytes / (1 << 20) / medians["parquet"],
            "shell_get": megabytes / medians["shell_get"],
            "fetch_file": megabytes / medians["fetch_file"],
        },
        "ratio_upload_to_shell_put": medians["shell_put"] / medians["upload_file"],
        "ratio_fetch_to_shell_get": medians["shell_get"] / medians["fetch_file"],
        "runs_seconds": runs,
        "repeats": args.repeats,
    }
    write_summary(summary, args.out, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
