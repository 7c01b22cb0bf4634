"""How long a ``local-cluster`` takes to serve its first job, its executors on the driver's class archive or not.

Every TensorFlowOnSpark training on one machine starts a ``local-cluster``
of one executor JVM per TF node (four for the demo's ps, two workers and
the chief), and many tests start one. Each round starts one in a
process of its own, through the project's launch profile
(:func:`tfbs.launch.session.build_session`), and times it up to the end of
a first job with a task on every executor:

- ``archive``: as the profile starts it, the executors mapping the
  driver's class archive (``spark.class_archive_dir``, ``make
  class-archive``);
- ``jdk_archive``: the same, but the executors on the JDK's own archive
  alone, as before they mapped the driver's (named as their
  ``-XX:SharedArchiveFile``, which the profile then leaves as it is).

The two alternate, the order turned each round. ``python
bench/cluster_start.py [--rounds 5]`` writes
``bench/results/cluster_start.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VARIANTS = ("archive", "jdk_archive")


def _jdk_archive() -> str:
    """The JDK's default class archive, the one a JVM maps when given none."""
    from tfbs.launch.jvm import java_binary

    found = sorted(java_binary().parent.parent.glob("lib/server/classes*.jsa"))
    if not found:
        raise SystemExit(f"no default class archive beside {java_binary()}")
    return str(found[0])


def start_once(config_path: str, master: str, variant: str) -> dict:
    """Start ``master`` in this process, run a task on every executor, stop; the seconds each part took."""
    from tfbs.config import load_config
    from tfbs.launch import USE_OPTION
    from tfbs.launch.session import build_session

    overrides = []
    if variant == "jdk_archive":  # spark.quick_jvm's options go before it, as before
        overrides.append(f'spark.conf={{"spark.executor.extraJavaOptions": "{USE_OPTION}{_jdk_archive()}"}}')
    spark_config = load_config(config_path, overrides).spark
    executors = int(master.removeprefix("local-cluster[").split(",")[0])
    with tempfile.TemporaryDirectory(prefix="tfbs-cluster-start-") as scratch:
        started = time.monotonic()
        session = build_session(spark_config, master=master, app_suffix="-cluster-start", scratch_dir=scratch)
        session_up = time.monotonic()
        executor_options = session.sparkContext.getConf().get("spark.executor.extraJavaOptions", "").split()
        pids = session.sparkContext.parallelize(range(executors), executors).map(lambda _: os.getppid()).collect()
        done = time.monotonic()
        session.stop()
    return {
        "variant": variant,
        "session_s": round(session_up - started, 2),
        "first_job_s": round(done - session_up, 2),
        "total_s": round(done - started, 2),
        "executors_reached": len(set(pids)),
        "executor_archive": next(Path(o.removeprefix(USE_OPTION)).name for o in executor_options if USE_OPTION in o),
    }


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from bench.report import result_path, write_summary

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="conf/demo.yaml")
    parser.add_argument("--master", default="local-cluster[4,1,1024]")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--one", choices=VARIANTS, help=argparse.SUPPRESS)
    parser.add_argument("--out", default=result_path("cluster_start"))
    args = parser.parse_args()
    if args.one:
        print(json.dumps(start_once(args.config, args.master, args.one)))
        return

    runs: dict[str, list[dict]] = {variant: [] for variant in VARIANTS}
    for round_index in range(args.rounds):
        order = VARIANTS if round_index % 2 == 0 else VARIANTS[::-1]
        for variant in order:
            command = [sys.executable, __file__, "--one", variant, "--config", args.config, "--master", args.master]
            done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise SystemExit(f"{variant} failed:\n{done.stderr[-4000:]}")
            result = json.loads(next(line for line in reversed(done.stdout.splitlines()) if line.startswith("{")))
            runs[variant].append(result)
            print(f"round {round_index + 1}/{args.rounds} {variant}: {result['total_s']:.1f} s", file=sys.stderr)

    medians = {variant: statistics.median(r["total_s"] for r in results) for variant, results in runs.items()}
    summary = {
        "median_total_s": medians,
        "ratio_archive_to_jdk_archive": round(medians["archive"] / medians["jdk_archive"], 3),
        "master": args.master,
        "runs": runs,
    }
    write_summary(summary, args.out, args)


if __name__ == "__main__":
    main()
