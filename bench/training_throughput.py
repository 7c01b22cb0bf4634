"""Benchmark: steady-state training throughput, single process against TFoS, and scaling on pinned cores.

Same shards, same model (the config's), same batch size and steps, each run
a fresh ``tfbs train`` CLI subprocess with its own run directory:

- ``local``: the training loop in one process (``train.placement.strategy=local``);
- ``ps_2_workers``: TensorFlowOnSpark, ParameterServerStrategy, 1 ps + 2
  workers + the chief on ``local-cluster[4,1,1024]`` (the default);
- ``ps_1_worker``: the same with one worker, ``local-cluster[3,1,1024]``;
- ``ps_2_workers_open``: ``ps_2_workers`` with TF's gRPC servers on the
  host's network (``train.placement.tf_network=open``) instead of private networks
  behind sealed tunnels: ``ps_2_workers`` against it is what the
  protection costs (issue 31's target: under 10 %; pinned as well,
  ``ps_2_workers_pinned_open``).

Unpinned, every process may use every core, and one process already uses
both: a second worker then has no core of its own and cannot show scaling.
The pinned configurations give each computing process a core
(``train.placement.node_cpus``; the ps and the chief, which only apply updates and
schedule, share both):

- ``local_1core``: one process on core 0 (``sched_setaffinity`` before it starts);
- ``local_per_core``: one such process on each core, all at once, their
  examples/s summed (what data parallelism could reach with no exchange:
  a core does less when its neighbour is busy than alone);
- ``ps_1_worker_pinned``: worker:0 on core 0;
- ``ps_1_worker_1core``: worker:0, the ps and the chief all on core 0 (the
  job given one core, against ``ps_2_workers_pinned`` given two);
- ``ps_2_workers_pinned``: worker:0 on core 0, worker:1 on core 1;
- ``allreduce_2_pinned``: all-reduce, the chief on core 0 and worker:0 on
  core 1 (two replicas; all-reduce has no one-replica run, so its 2-vs-1 is
  against ``local_1core``, the same loop on one core).

Steady state excludes start-up (JVMs, TensorFlow servers, tracing, input
pipeline warm-up): the chief's ``history.json`` has one entry per checkpoint
window with that window's examples/s, timed by the chief from the first
closure scheduled to the last one joined (checkpoint writing excluded). The
first window carries the start-up and is dropped; the rate of the others is
their examples over their summed time. Configurations run interleaved
(round 1: a, b, c; round 2: ...), medians over the rounds.

    .venv/bin/python bench/training_throughput.py --config conf/demo.yaml \
        --set shards_dir=build/demo/run/shards --repeats 3 [--pinned]

Prints, unpinned, ps_2_workers/local (ps at most 10% slower than one
process on the same cores) and ps_2_workers/ps_1_worker; with ``--pinned``,
2 workers against 1 on pinned cores (issue 16's target: >= 1.7) for ps
(against one worker beside a ps and chief on both cores, and against the
whole one-worker job on one core) and for all-reduce, and ps with 2 pinned
workers against one process per core (``local_per_core``; target >= 0.9)
and, given ``--only local`` as well, against one process on both cores.
The exchange with the ps costs each worker step a fixed time, so that
ratio depends on the batch: measure at the one you train with
(``--set train.batch_size=128`` for conf/encode_dream_ctcf.yaml's).
JSON printed and written to ``bench/results/training_throughput.json`` (``--out``
names each measured variant's file).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TFBS = ROOT / ".venv" / "bin" / "tfbs"

#: Passed to every run: the chief's validation at each checkpoint is outside
#: the timed windows, so scoring fewer examples only shortens the wall time.
COMMON = ["train.validation_examples=1024"]

#: name -> the ``--set`` overrides that make that configuration.
CONFIGURATIONS: dict[str, list[str]] = {
    "local": ["train.placement.strategy=local"],
    "ps_2_workers": [
        "train.placement.strategy=parameter_server",
        "train.placement.num_ps=1",
        "train.placement.num_workers=2",
    ],
    "ps_1_worker": [
        "train.placement.strategy=parameter_server",
        "train.placement.num_ps=1",
        "train.placement.num_workers=1",
    ],
}
# The same with TF's gRPC servers on the host's network instead of private
# ones behind sealed tunnels (train.placement.tf_network): what the protection costs.
CONFIGURATIONS["ps_2_workers_open"] = [*CONFIGURATIONS["ps_2_workers"], "train.placement.tf_network=open"]

#: The pinned configurations (``--pinned``): each computing process on a core of its own.
PINNED: dict[str, list[str]] = {
    "local_1core": ["train.placement.strategy=local"],
    # One process per core at once (PROCESS_CPUS): the cores share caches
    # and memory bandwidth (on a VM, a host), so a busy neighbour slows a core.
    "local_per_core": ["train.placement.strategy=local"],
    "ps_1_worker_pinned": [
        *CONFIGURATIONS["ps_1_worker"],
        'train.placement.node_cpus={"worker:0": "0", "chief": "0-1", "ps": "0-1"}',
    ],
    # The whole one-worker job on one core: with ps_2_workers_pinned, the same job given one core and then two.
    "ps_1_worker_1core": [
        *CONFIGURATIONS["ps_1_worker"],
        'train.placement.node_cpus={"worker:0": "0", "chief": "0", "ps": "0"}',
    ],
    "ps_2_workers_pinned": [
        *CONFIGURATIONS["ps_2_workers"],
        'train.placement.node_cpus={"worker:0": "0", "worker:1": "1", "chief": "0-1", "ps": "0-1"}',
    ],
    "ps_2_workers_pinned_open": [
        *CONFIGURATIONS["ps_2_workers_open"],
        'train.placement.node_cpus={"worker:0": "0", "worker:1": "1", "chief": "0-1", "ps": "0-1"}',
    ],
    "allreduce_2_pinned": [
        "train.placement.strategy=multi_worker_mirrored",
        "train.placement.num_workers=1",
        'train.placement.node_cpus={"chief": "0", "worker:0": "1"}',
    ],
}

#: Configurations whose whole process tree runs on these CPUs (TFoS runs pin their nodes instead).
PROCESS_CPUS: dict[str, list[set[int]]] = {
    "local_1core": [{0}],
    "local_per_core": [{cpu} for cpu in sorted(os.sched_getaffinity(0))],
}


def steady_rate(history: list[dict], batch_size: int, skip: int = 1) -> float:
    """Examples/s over the history windows after the first ``skip``.

    Each entry's ``examples_per_s`` covers the steps since the previous
    entry; a window's time is its examples over that rate.
    """
    examples = seconds = 0.0
    previous_step = history[skip - 1]["step"] if skip else 0
    for entry in history[skip:]:
        window_examples = (entry["step"] - previous_step) * batch_size
        examples += window_examples
        seconds += window_examples / entry["examples_per_s"]
        previous_step = entry["step"]
    if not examples:
        raise ValueError(f"history has {len(history)} windows: nothing after the first {skip}")
    return examples / seconds


def _command(name: str, args: argparse.Namespace, run_dir: Path) -> list[str]:
    """The ``tfbs train`` command of configuration ``name`` in ``run_dir``."""
    command = [str(TFBS), "train", "--config", args.config, *[f"--set={o}" for o in args.overrides]]
    command += [f"--set={o}" for o in COMMON + {**CONFIGURATIONS, **PINNED}[name]]
    return command + [
        f"--set=run_dir={run_dir}",
        f"--set=train.steps={args.steps}",
        f"--set=train.steps_per_execution={args.steps_per_execution}",
        f"--set=train.checkpoint_every_steps={args.window_steps}",
    ]


def _history(run_dir: Path) -> list[dict]:
    (model_dir,) = [path.parent for path in (run_dir / "models").glob("*/lineage.json")]  # its one version
    return json.loads((model_dir / "history.json").read_text())


def train_once(name: str, args: argparse.Namespace, run_dir: Path) -> dict:
    """One ``tfbs train`` subprocess (or one per core, at once); history, steady rate and wall time."""
    if run_dir.exists():
        shutil.rmtree(run_dir)
    # A configuration pinned whole to CPUs runs one process per CPU set, all at once.
    cpu_sets = PROCESS_CPUS.get(name, [None])
    run_dirs = [run_dir / f"cpu{sorted(cpus)[0]}" if len(cpu_sets) > 1 else run_dir for cpus in cpu_sets]
    started = time.monotonic()
    processes = []
    for cpus, directory in zip(cpu_sets, run_dirs):
        directory.mkdir(parents=True)
        with open(directory / "train.log", "w") as log:  # the child keeps its own descriptor
            processes.append(
                subprocess.Popen(
                    _command(name, args, directory),
                    cwd=ROOT,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    preexec_fn=(lambda cpus=cpus: os.sched_setaffinity(0, cpus)) if cpus else None,
                )
            )
    codes = [process.wait() for process in processes]  # all of them, before raising for one
    for code, directory in zip(codes, run_dirs):
        if code:
            raise RuntimeError(f"{name}: tfbs train exited {code}, see {directory / 'train.log'}")
    wall = time.monotonic() - started
    histories = [_history(directory) for directory in run_dirs]
    return {
        # Processes that ran at once: their examples per second add up.
        "steady_examples_per_s": sum(steady_rate(history, args.batch_size) for history in histories),
        "wall_seconds": wall,
        "history": histories[0] if len(histories) == 1 else histories,
        "load_average_1min_after": os.getloadavg()[0],
    }


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from bench.report import as_given, result_path, write_summary

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="conf/demo.yaml")
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="passed to every run")
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--steps-per-execution", type=int, default=20)
    parser.add_argument("--window-steps", type=int, default=200, help="checkpoint (history) window")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pinned", action="store_true", help="the pinned configurations instead")
    parser.add_argument("--only", action="append", choices=sorted({**CONFIGURATIONS, **PINNED}), help="default: all")
    parser.add_argument("--work-dir", default="build/bench/training_runs", help="run directories (replaced)")
    parser.add_argument("--keep-runs", action="store_true")
    parser.add_argument("--out", default=result_path("training_throughput"))
    args = parser.parse_args()
    from tfbs.config import load_config

    config = load_config(args.config, args.overrides)
    args.batch_size = config.train.batch_size
    names = args.only or list(PINNED if args.pinned else CONFIGURATIONS)
    work = Path(args.work_dir).resolve()

    runs: dict[str, list[dict]] = {name: [] for name in names}
    for round_index in range(args.repeats):
        for name in names:
            run_dir = work / f"{name}-{round_index}"
            result = train_once(name, args, run_dir)
            runs[name].append(result)
            print(
                f"round {round_index + 1}/{args.repeats} {name}: {result['steady_examples_per_s']:.0f} "
                f"examples/s steady, {result['wall_seconds']:.0f} s wall",
                file=sys.stderr,
            )
            if not args.keep_runs:
                shutil.rmtree(run_dir)

    medians = {name: statistics.median(r["steady_examples_per_s"] for r in results) for name, results in runs.items()}
    summary: dict = {"steady_examples_per_s": medians}
    if {"ps_2_workers", "local"} <= medians.keys():
        summary["ratio_ps_2_workers_to_local"] = medians["ps_2_workers"] / medians["local"]
    if {"ps_2_workers", "ps_2_workers_open"} <= medians.keys():
        summary["ratio_private_to_open_tf_network"] = medians["ps_2_workers"] / medians["ps_2_workers_open"]
    if {"ps_2_workers_pinned", "ps_2_workers_pinned_open"} <= medians.keys():
        summary["ratio_pinned_private_to_open_tf_network"] = (
            medians["ps_2_workers_pinned"] / medians["ps_2_workers_pinned_open"]
        )
    if {"ps_2_workers", "ps_1_worker"} <= medians.keys():
        summary["ratio_ps_2_workers_to_ps_1_worker"] = medians["ps_2_workers"] / medians["ps_1_worker"]
    if {"ps_2_workers_pinned", "ps_1_worker_pinned"} <= medians.keys():
        summary["ratio_pinned_ps_2_to_1_worker"] = medians["ps_2_workers_pinned"] / medians["ps_1_worker_pinned"]
    if {"ps_2_workers_pinned", "ps_1_worker_1core"} <= medians.keys():
        summary["ratio_pinned_ps_2_cores_to_1_core"] = medians["ps_2_workers_pinned"] / medians["ps_1_worker_1core"]
    if {"allreduce_2_pinned", "local_1core"} <= medians.keys():
        summary["ratio_pinned_allreduce_2_to_1_replica"] = medians["allreduce_2_pinned"] / medians["local_1core"]
    if {"ps_2_workers_pinned", "local_per_core"} <= medians.keys():
        # A process on each core at once: what data parallelism could reach without any exchange.
        summary["ratio_pinned_ps_2_workers_to_process_per_core"] = (
            medians["ps_2_workers_pinned"] / medians["local_per_core"]
        )
    if {"local_per_core", "local_1core"} <= medians.keys():
        # What the machine itself gives a second busy core.
        summary["ratio_process_per_core_to_one_core_alone"] = medians["local_per_core"] / medians["local_1core"]
    if {"ps_2_workers_pinned", "local"} <= medians.keys():
        # One process free to use both cores, the cores the pinned ps run shares out.
        summary["ratio_pinned_ps_2_workers_to_local"] = medians["ps_2_workers_pinned"] / medians["local"]
    summary["median_wall_seconds"] = {
        name: statistics.median(r["wall_seconds"] for r in results) for name, results in runs.items()
    }
    summary.update(
        {
            "batch_size": args.batch_size,
            "steps": args.steps,
            "steps_per_execution": args.steps_per_execution,
            "window_steps": args.window_steps,
            "steady_steps": args.steps - args.window_steps,
            "repeats": args.repeats,
            "cores": os.cpu_count(),
            "shards": as_given(config.shards_uri),
            "overrides": {name: COMMON + {**CONFIGURATIONS, **PINNED}[name] for name in names},
            "runs": runs,
        }
    )
    write_summary(summary, args.out, args)


if __name__ == "__main__":
    main()
