"""``make test``'s pytest: the suite as two sessions side by side, the cluster of hosts' tests and the rest.

The tests marked ``hosts`` (tests/conftest.py: they use the cluster of hosts
or ``make dist``'s archive) mostly wait on daemons, container launches and
heartbeats; the one-machine tests keep the cores busy. Run together, the
suite takes about as long as its longer half. Each session writes its own
log and temp folder (``<basetemp>/hosts``, ``<basetemp>/machine``; by
default ``<basetemp>`` is ``$TMPDIR/tfbs-suite-<uid>-<hash of the clone's
path>``, so suites of two clones never share one); a line
every minute says where each stands, and at the end both logs are printed
whole, a failed one last. The run fails when either session does (pytest's
exit 5, no test collected, included). Around the sessions it times a fixed pure-Python loop
on the idle machine, and it reports how busy the cores were meanwhile and
what share the hypervisor took (steal): a suite's minutes compare across
machines, and days, only beside those. Its last lines are each session's
result and failures: a CI page that keeps only the output's tail names them.

    .venv/bin/python tests/run_suite.py [pytest arguments, e.g. -ra --durations=30]

For a part of the suite, call pytest itself.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: Each session's name and its marker expression.
# The hosts' tests mostly wait on daemons; so do those marked ``waits`` (Airflow's
# sensors and failure runs, killed TF nodes), which go beside them to even out the two sessions.
SESSIONS = {"hosts": "hosts or waits", "machine": "not hosts and not waits"}
#: Seconds between two progress lines.
PROGRESS_EVERY_S = 60
#: Iterations of the reference loop: about half a second on one core of the 2026-12-01 machine.
REFERENCE_LOOP = 6_000_000


def reference_seconds(rounds: int = 3) -> float:
    """The median wall time of a fixed pure-Python loop, one core: this machine's speed now."""
    times = []
    for _ in range(rounds):
        started, total = time.perf_counter(), 0
        for i in range(REFERENCE_LOOP):
            total += i * i % 7
        times.append(time.perf_counter() - started)
    return sorted(times)[len(times) // 2]


def cpu_ticks(stat_line: str) -> tuple[int, int, int]:
    """``(busy, steal, total)`` jiffies of all CPUs from ``/proc/stat``'s first line.

    Busy is user, nice, system, irq and softirq; iowait counts as idle.

    Examples
    --------
    >>> cpu_ticks("cpu  100 5 20 800 10 1 2 30 0 0")
    (128, 30, 968)
    """
    user, nice, system, idle, iowait, irq, softirq, steal = (int(field) for field in stat_line.split()[1:9])
    busy = user + nice + system + irq + softirq
    return busy, steal, busy + steal + idle + iowait


def _cpu_now() -> tuple[int, int, int]:
    with open("/proc/stat") as stat:
        return cpu_ticks(stat.readline())


def _last_line(log: Path) -> str:
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    return lines[-1][-100:] if lines else "starting"


def session_summary(log: str, most: int = 8) -> str:
    """pytest's last line, then the first ``most`` of its FAILED and ERROR lines (``-ra``), one line each.

    Examples
    --------
    >>> print(session_summary("x\\nFAILED t.py::a - boom\\nERROR t.py::b\\n== 1 failed, 1 error, 3 passed in 9s =="))
    == 1 failed, 1 error, 3 passed in 9s ==
      FAILED t.py::a - boom
      ERROR t.py::b
    """
    lines = [line for line in log.splitlines() if line.strip()]
    failures = [line[:200] for line in lines if line.startswith(("FAILED ", "ERROR "))]
    shown = [f"  {line}" for line in failures[:most]]
    if len(failures) > most:
        shown.append(f"  ... and {len(failures) - most} more")
    return "\n".join([lines[-1][-200:] if lines else "no output", *shown])


def default_basetemp(clone: Path, uid: int, temp_root: str) -> Path:
    """``<temp_root>/tfbs-suite-<uid>-<hash of the clone's path>``: one per user and clone.

    pytest empties its ``--basetemp`` when a session starts, so two suites
    of one user (two clones, e.g. two branches' worktrees) sharing one
    would wipe each other's files mid-run.

    Examples
    --------
    >>> a = default_basetemp(Path("/home/u/a"), 1000, "/tmp")
    >>> a.parent, a.name.startswith("tfbs-suite-1000-"), a == default_basetemp(Path("/home/u/b"), 1000, "/tmp")
    (PosixPath('/tmp'), True, False)
    """
    digest = hashlib.sha256(str(clone.resolve()).encode()).hexdigest()[:12]
    return Path(temp_root) / f"tfbs-suite-{uid}-{digest}"


def main(args: list[str]) -> int:
    """Run both sessions with ``args``; 0 when both pass."""
    given = next((arg.split("=", 1)[1] for arg in args if arg.startswith("--basetemp=")), None)
    clone = Path(__file__).resolve().parents[1]
    basetemp = Path(given) if given else default_basetemp(clone, os.getuid(), tempfile.gettempdir())
    shared = [arg for arg in args if not arg.startswith("--basetemp=")]
    # This user's alone, as pytest makes its own temp root: tests check that
    # private folders made under it have no parent open to others.
    basetemp.mkdir(mode=0o700, parents=True, exist_ok=True)
    basetemp.chmod(0o700)
    reference_before = reference_seconds()
    cpu_before = _cpu_now()
    started = time.monotonic()
    running: dict[str, tuple[subprocess.Popen, Path]] = {}
    for name, expression in SESSIONS.items():
        log = basetemp / f"{name}.log"
        command = [sys.executable, "-m", "pytest", "-m", expression, f"--basetemp={basetemp / name}", *shared]
        with log.open("w") as out:
            running[name] = (subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT), log)
        print(f"{name}: {' '.join(command[1:])} > {log}", flush=True)
    next_progress = started + PROGRESS_EVERY_S
    while any(process.poll() is None for process, _ in running.values()):
        time.sleep(1)
        # By the clock, not by the loop's turns: a busy machine makes a turn last more than a second.
        if time.monotonic() >= next_progress:
            next_progress += PROGRESS_EVERY_S
            elapsed = time.monotonic() - started
            states = "; ".join(
                f"{name} {'running' if process.poll() is None else f'exited {process.returncode}'}: {_last_line(log)}"
                for name, (process, log) in running.items()
            )
            print(f"[{elapsed / 60:.0f} min] {states}", flush=True)
    # A failed session's log last, and its failures again at the very end.
    ordered = sorted(running.items(), key=lambda item: item[1][0].returncode != 0)
    for name, (process, log) in ordered:
        print(f"\n===== {name} (pytest -m '{SESSIONS[name]}'): exit {process.returncode} =====", flush=True)
        sys.stdout.write(log.read_text(errors="replace"))
    print(f"\nboth sessions done in {(time.monotonic() - started) / 60:.1f} min", flush=True)
    busy, steal, total = (after - before for after, before in zip(_cpu_now(), cpu_before, strict=True))
    print(
        f"meanwhile the {os.cpu_count()} cores were {busy / total:.0%} busy, {steal / total:.1%} taken by the "
        f"hypervisor (steal); a reference loop of {REFERENCE_LOOP:,} turns on one idle core took "
        f"{reference_before:.2f} s before the sessions and {reference_seconds():.2f} s after",
        flush=True,
    )
    for name, (process, log) in ordered:
        print(f"{name}: exit {process.returncode}; {session_summary(log.read_text(errors='replace'))}", flush=True)
    return 0 if all(process.returncode == 0 for process, _ in running.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
