"""app/allocator.py: JET_MALLOC_ARENAS bounds the arenas glibc's malloc makes for a process's
threads (each of which otherwise takes one of its own, up to 8 per core, and keeps what was
freed in it), seen in the process's memory map. In a fresh interpreter each time: a process
sets its arenas once, before its threads start."""

import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc only")

THREADS = 8
PROGRAM = f"""
import sys, threading
from app import allocator

arenas = int(sys.argv[1])
print(allocator.limit_arenas(arenas))
started = threading.Barrier({THREADS})

def work():
    blocks = [bytearray(2000) for _ in range(500)]  # malloc's, not Python's small-object pool
    started.wait()  # every thread alive, holding its blocks, at once

threads = [threading.Thread(target=work) for _ in range({THREADS})]
for t in threads:
    t.start()
for t in threads:
    t.join()
# A thread arena is an anonymous read-write mapping aligned to its 64 MiB reservation.
with open("/proc/self/maps") as maps:
    fields = [line.split() for line in maps]
print(sum(1 for f in fields if len(f) == 5 and f[1].startswith("rw")
          and int(f[0].split("-")[0], 16) % (64 << 20) == 0))
"""


def thread_arenas(arenas: int) -> tuple[str, int]:
    command = [sys.executable, "-c", PROGRAM, str(arenas)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=True)
    applied, count = done.stdout.split()
    return applied, int(count)


def test_the_setting_bounds_the_arenas_of_the_threads() -> None:
    applied, default = thread_arenas(0)  # glibc's default: an arena for nearly every thread
    assert applied == "False" and default >= THREADS // 2
    assert thread_arenas(2) == ("True", 1)  # the main arena and one for every thread
    assert thread_arenas(1) == ("True", 0)  # the main arena alone
