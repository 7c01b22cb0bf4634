"""What every job shares: argument parsing, logging and clean failures."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable
from typing import TextIO

from tfbs.config import PipelineConfig, load_config
from tfbs.errors import TfbsError

DEFAULT_CONFIG = "conf/demo.yaml"

#: What a scheduler's task does with a check's answer (:func:`print_verdict`).
VERDICTS = ("go", "wait", "skip", "fail")

#: TensorFlow is an extra of its own (pyproject.toml): say which when it is missing.
MISSING_TENSORFLOW = (
    "tensorflow: not installed; pip install 'tfbs-spark[cpu]', or 'tfbs-spark[gpu]' for TensorFlow with CUDA"
)


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``--config`` and ``--set`` options every stage takes."""
    parser.add_argument("--config", default=DEFAULT_CONFIG, help="pipeline YAML (default: %(default)s)")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a configuration key, e.g. --set train.steps=200 (repeatable)",
    )


class _CurrentStderr(logging.StreamHandler):
    """A handler writing to ``sys.stderr`` as it is when a record comes, not as it was when logging was set up.

    A stage run in-process (the tests, a notebook) may replace ``sys.stderr``
    and close the replacement after; a handler holding it would then fail on
    every later record.
    """

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: object) -> None:
        # StreamHandler.__init__ assigns it: the stream is always the current one.
        pass


def configure_logging(verbose: bool = False) -> None:
    """Timestamped log lines on stderr; quiet third-party chatter."""
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        handlers=[_CurrentStderr()],
        force=True,
    )
    for noisy in ("py4j", "matplotlib", "absl", "tensorflow"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def _remove_leftovers(run_dir: str) -> None:
    """What killed writers left under the run directory long enough ago (tfbs.storage.remove_leftovers)."""
    from tfbs import storage

    for leftover in storage.remove_leftovers(run_dir):
        logging.getLogger("tfbs").info("removed a killed writer's %s %s", leftover.kind, leftover.uri)


def run_stage(
    description: str,
    stage: Callable[[PipelineConfig, argparse.Namespace], object],
    argv: list[str] | None = None,
    extra_arguments: Callable[[argparse.ArgumentParser], None] | None = None,
    sweep: bool = True,
) -> int:
    """Parse arguments, load the configuration, sweep the run folder's stale leftovers and run ``stage``.

    Returns the process exit code: 0 on success, 2 on a user error (bad
    configuration or input, reported in one line naming the file).
    ``sweep=False`` for a stage that collects the leftovers itself (``tfbs gc``):
    one listing of the run folder, not two.
    """
    parser = argparse.ArgumentParser(description=description)
    add_config_arguments(parser)
    parser.add_argument("-v", "--verbose", action="store_true")
    if extra_arguments:
        extra_arguments(parser)
    args = parser.parse_args(argv)
    configure_logging(args.verbose)
    try:
        config = load_config(args.config, args.overrides)
        if sweep:
            _remove_leftovers(config.run_dir)
        stage(config, args)
    except TfbsError as err:  # the user's to fix: one clear line, no traceback
        print(f"error: {err}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as err:
        if err.name != "tensorflow":
            raise
        print(f"error: {MISSING_TENSORFLOW}", file=sys.stderr)
        return 2
    return 0


def stage_answer(
    description: str,
    stage: Callable[[PipelineConfig, argparse.Namespace], int],
    argv: list[str] | None = None,
    extra_arguments: Callable[[argparse.ArgumentParser], None] | None = None,
) -> int:
    """:func:`run_stage` for a check whose answer is its exit code (``tfbs changes``, ``tfbs ready``).

    A user error (exit 2) wins; otherwise the exit code is what ``stage``
    returned. Read-only: the run folder's leftovers are not swept.
    """
    answer: list[int] = []
    code = run_stage(
        description,
        lambda config, args: answer.append(stage(config, args)),
        argv,
        extra_arguments=extra_arguments,
        sweep=False,
    )
    return answer[0] if code == 0 and answer else code


def print_verdict(verdict: str, reason: str, **details: object) -> None:
    """A check's answer for a scheduler, as the last line of stdout: ``{"verdict": ..., "reason": ..., ...}``.

    ``verdict`` is what the scheduler's task does: ``go`` (succeed), ``wait``
    (look again later), ``skip`` (skip the rest of the run) or ``fail``
    (fail the run, no retry). The DAG's tasks read it
    (``airflow_dags/tfbs_tasks.py``); the exit codes stay for people and scripts.
    """
    if verdict not in VERDICTS:
        raise ValueError(f"verdict {verdict!r}: one of {', '.join(VERDICTS)}")
    print(json.dumps({"verdict": verdict, "reason": reason, **details}), flush=True)
