"""A Ctrl-C that nothing can swallow: noted when it arrives, checked before output is published.

PySpark's SIGINT handler cancels the running jobs and raises
``KeyboardInterrupt`` in whatever Python code runs at that moment. When that
code is a finalizer (py4j's, as a Java object is collected), Python prints
"Exception ignored" and goes on: the stage then ran to its end and published
its outputs as if nobody had pressed Ctrl-C. :func:`note_interrupts` wraps
the handler so the signal is also remembered, and every publishing step of
:mod:`tfbs.storage` calls :func:`raise_if_interrupted` first.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

_interrupted = threading.Event()


def note_interrupts() -> None:
    """Remember every SIGINT from now on, then hand it to the handler installed before.

    Call it after the Spark session started (PySpark installs its own handler
    then). Only the main thread may set signal handlers; elsewhere (a
    notebook's worker thread) this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    previous = signal.getsignal(signal.SIGINT)
    if getattr(previous, "notes_interrupts", False):
        return

    def note(signum: int, frame: FrameType | None) -> None:
        _interrupted.set()
        if callable(previous):
            previous(signum, frame)
        elif previous != signal.SIG_IGN:
            raise KeyboardInterrupt

    note.notes_interrupts = True  # type: ignore[attr-defined]
    signal.signal(signal.SIGINT, note)


def raise_if_interrupted(what: str) -> None:
    """Raise ``KeyboardInterrupt`` if a SIGINT was noted, so ``what`` is not published.

    Raises
    ------
    KeyboardInterrupt
        Once :func:`note_interrupts`' handler has seen a SIGINT in this process.
    """
    if _interrupted.is_set():
        raise KeyboardInterrupt(f"interrupted earlier: {what} is not published")
