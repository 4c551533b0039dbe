"""glibc's malloc set for a long-running process with many threads (JET_MALLOC_ARENAS).

glibc gives each thread that allocates concurrently an arena of its own (up to 8 per core),
keeps in each the memory freed there, and raises its threshold for mapping a big block apart
to the size of the biggest block freed so far. In the API process, whose threads (one per
SQLite connection, the thread pool's) allocate blocks that grow with a tenant's entries
(its vectors, read again after each write), that lets RSS grow for hours with memory that
is free but kept (docs/benchmarks.md, "Memory under a soak"). So at the process's start:
at most JET_MALLOC_ARENAS arenas, and a fixed threshold (glibc's default 128 KiB) above
which a block is mapped apart and given back to the system when freed. A no-op elsewhere
(musl, macOS) and with JET_MALLOC_ARENAS=0.
"""

import ctypes
import logging
import platform

log = logging.getLogger(__name__)

# mallopt's parameters (glibc's malloc.h).
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8
MMAP_THRESHOLD = 128 * 1024


def limit_arenas(arenas: int) -> bool:
    """Set glibc's malloc to at most `arenas` arenas and a fixed mmap threshold, for the
    threads this process starts from now on; True if it was set. Called before the
    process starts its threads (an existing thread keeps its arena)."""
    if arenas < 1 or platform.libc_ver()[0] != "glibc":
        return False
    libc = ctypes.CDLL(None)  # the C library the interpreter is linked with
    done = bool(libc.mallopt(M_ARENA_MAX, arenas) == 1)
    done = bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1) and done
    if not done:
        log.warning("glibc's mallopt refused JET_MALLOC_ARENAS=%d: its defaults stay", arenas)
    return done
