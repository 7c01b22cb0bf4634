"""The bedtools command line, called as a subprocess.

Labels are built with the real ``bedtools`` binary rather than a Python
re-implementation, because the ENCODE-DREAM labelling rule is *defined* by
bedtools' overlap semantics (``intersect -c -f 0.5 -F 0.5 -e``); matching
them bit for bit is easiest by running the same program.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import Sequence


class BedtoolsError(RuntimeError):
    """A bedtools call that failed; the message holds the command and its stderr."""


def bedtools_binary(binary: str | None = None) -> str:
    """Return the path of the ``bedtools`` executable.

    Parameters
    ----------
    binary
        An explicit path or command name; defaults to the ``TFBS_BEDTOOLS``
        environment variable, then ``bedtools`` on ``PATH``.

    Returns
    -------
    str
        An absolute path to an executable file.

    Raises
    ------
    BedtoolsError
        If no executable is found, with how to install or point to one.
    """
    wanted = binary or os.environ.get("TFBS_BEDTOOLS") or "bedtools"
    found = shutil.which(wanted)
    if found is None:
        raise BedtoolsError(
            f"bedtools executable {wanted!r} not found. Install bedtools >= 2.27 "
            "(e.g. `apt-get install bedtools` or `conda install -c bioconda bedtools`) "
            "or set TFBS_BEDTOOLS=/path/to/bedtools."
        )
    return found


def run_bedtools(
    args: Sequence[str | os.PathLike[str]],
    stdout_path: str | os.PathLike[str] | None = None,
    binary: str | None = None,
) -> str:
    """Run ``bedtools <args>`` and return its output.

    Parameters
    ----------
    args
        Arguments after ``bedtools``, e.g. ``["merge", "-i", "peaks.bed"]``.
    stdout_path
        If given, standard output is streamed into this file (never held in
        memory, so whole-genome outputs are fine) and the path is returned.
    binary
        The executable, see :func:`bedtools_binary`.

    Returns
    -------
    str
        ``stdout_path`` if given, else the captured standard output.

    Raises
    ------
    BedtoolsError
        If the executable is missing or the call exits non-zero; the message
        shows the command line and the end of its stderr.
    """
    command = [bedtools_binary(binary), *[str(arg) for arg in args]]
    if stdout_path is None:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        stdout = done.stdout
    else:
        with open(stdout_path, "wb") as sink:
            done = subprocess.run(command, stdout=sink, stderr=subprocess.PIPE, text=True, check=False)
        stdout = str(stdout_path)
    if done.returncode != 0:
        # The tail of stderr is enough to diagnose and keeps messages short
        # when bedtools repeats a warning per line.
        stderr = (done.stderr or "").strip()[-2000:]
        target = f" > {shlex.quote(str(stdout_path))}" if stdout_path is not None else ""
        raise BedtoolsError(f"bedtools failed (exit {done.returncode}): {shlex.join(command)}{target}\n{stderr}")
    return stdout
