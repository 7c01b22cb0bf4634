"""Keeping a preprocessing worker's freed memory for its next arrays.

A chromosome task allocates and frees arrays of tens to hundreds of MB one
after another. glibc's malloc serves each one above 32 MB with a fresh
``mmap`` and gives it back with ``munmap``, and trims the heap's top, so
every such array is zeroed and faulted in page by page again; on a VM
whose host takes freed pages back (free page reporting) a first touch
costs more than the work on the array. Told to use no ``mmap`` and not to
trim, malloc hands freed memory back out instead: the writing tasks of a
full-size run ran about 10 % faster (test and three training chromosomes:
9.4-10.9 s to 8.9-9.3 s). Peak memory rises a little (full size: 3.45 GB
to 3.47-3.55 GB for the whole run), as a worker holds what it held at its
peak for as long as it lives (one Spark application).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging
import platform

log = logging.getLogger("tfbs.preprocess")

#: mallopt parameters (glibc's malloc.h).
_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4
#: A trim threshold of -1 reads as the largest size_t: never trim.
_NEVER_TRIM = -1


@functools.cache
def keep_freed_memory() -> bool:
    """Tell glibc's malloc in this process to reuse freed memory rather than return it; once per process.

    Returns
    -------
    bool
        False where the C library is not glibc (nothing is changed there).
    """
    if platform.libc_ver()[0] != "glibc":
        return False
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    done = libc.mallopt(_M_MMAP_MAX, 0) == 1 and libc.mallopt(_M_TRIM_THRESHOLD, _NEVER_TRIM) == 1
    if not done:
        log.warning("mallopt refused: this worker's malloc returns freed memory as usual")
    return done
