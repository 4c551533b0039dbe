"""`jet-memory serve` with a memory probe: what the API process holds, written at intervals.

Bench-only (never imported by app/), run by `bench.soak --probe-every S` in place of
`jet-memory serve`, or by hand (any `jet-memory` command line after `--`):

    .venv/bin/python bench/memory_probe.py --out DIR --every 60 --frames 16 -- serve --port 8001

Every `--every` seconds a thread of the served process appends one JSON line to
`DIR/probe.jsonl`: RSS, and RSS by kind of mapping (glibc's main heap, its thread arenas,
other anonymous memory, files); glibc's heap (mallinfo2: in use, free inside the arenas,
mapped apart); SQLite's own allocator (`sqlite3_memory_used`: page caches, statements,
never seen by tracemalloc); the length of every container held by an app module or an app
object, of every `lru_cache` and SQLAlchemy LRUCache, and what the containers of 64 items or
more hold ("KiB Class.attr"). With `--frames N` (N > 0) tracemalloc traces N frames from
the first probe on, and each later probe writes `DIR/top-<seconds>.txt`: the 40 tracebacks
whose memory grew most since the second probe (the first snapshot), and since the previous
one.

A diagnostic, not a measurement: a probe holds the GIL while it walks the objects (2-20 s
under the soak on a busy machine; a traced snapshot a minute or more, long enough for
appends to time out on the writer's lock), and what it allocates shows in the RSS.
"""

import argparse
import contextlib
import ctypes
import ctypes.util
import gc
import json
import os
import sys
import threading
import time
import tracemalloc
from collections import OrderedDict
from pathlib import Path
from types import FunctionType, ModuleType
from typing import Any
from weakref import WeakKeyDictionary, WeakValueDictionary

from app.cli import main as jet_main

CONTAINERS = (dict, OrderedDict, set, list, WeakValueDictionary, WeakKeyDictionary)
TOP = 40
BIG = 64  # containers of this many items or more are weighed (deep_size)


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _libc() -> Any:
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.mallinfo2.restype = _MallInfo2
    return libc


def _sqlite() -> Any:
    import sqlite3  # noqa: F401  (loads the library the server's connections use)

    lib = ctypes.CDLL(ctypes.util.find_library("sqlite3"))
    lib.sqlite3_memory_used.restype = ctypes.c_int64
    lib.sqlite3_memory_highwater.restype = ctypes.c_int64
    return lib


def rss_mib(pid: int | str = "self") -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def smaps_mib() -> dict[str, float]:
    """The process's RSS by kind of mapping: glibc's main heap, its thread arenas (64 MiB
    aligned anonymous mappings), other anonymous memory (pymalloc's arenas, big blocks,
    numpy arrays, stacks) and files."""
    kinds: dict[str, float] = {}
    kind = ""
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            head = line.split(maxsplit=5)
            if "-" in head[0] and len(head) >= 5:
                name = head[5].strip() if len(head) > 5 else ""
                if name == "[heap]":
                    kind = "heap"
                elif name.startswith("/"):
                    kind = "files"
                elif name:
                    kind = "other"
                else:
                    start = int(head[0].split("-")[0], 16)
                    kind = "thread_arenas" if start % 0x4000000 == 0 else "anon"
            elif head[0] == "Rss:":
                kinds[kind] = kinds.get(kind, 0.0) + int(head[1]) / 1024
    return {k: round(v, 1) for k, v in sorted(kinds.items())}


def _sizes(limit: int = 2_000_000) -> dict[str, int]:
    """Lengths of the containers held by app modules and app objects ("module.NAME",
    "Class.attr", the largest of each), of lru_caches ("lru_cache module.function") and of
    SQLAlchemy's LRUCaches, found by walking references from the modules: the server
    froze what lived at its start (gc.freeze), which gc.get_objects no longer lists."""
    from sqlalchemy.util import LRUCache

    sizes: dict[str, int] = {}
    lru_total = 0
    big: dict[str, list[Any]] = {}  # "Class.attr" -> its containers of BIG or more items

    def note(name: str, n: int) -> None:
        sizes[name] = max(sizes.get(name, 0), n)

    modules = [m for m in list(sys.modules.values()) if m is not None]
    for module in modules:
        modname = module.__name__
        ours = modname == "app" or modname.startswith("app.")
        for attr, value in list(vars(module).items()):
            if ours and isinstance(value, CONTAINERS) and not attr.startswith("__"):
                note(f"{modname}.{attr}", len(value))
            # Anything may sit in a module (ctypes.cdll makes a library of any attribute).
            with contextlib.suppress(Exception):
                info = value.cache_info if type(value).__name__ == "_lru_cache_wrapper" else None
                if info is not None and value.__module__ == modname:
                    note(f"lru_cache {modname}.{attr}", info().currsize)
    seen: set[int] = set()
    # Roots: the modules, every thread's stack (the server's own objects hang from uvicorn's
    # frames) and what the collector still tracks.
    todo: list[Any] = [vars(m) for m in modules]
    for frame in sys._current_frames().values():
        while frame is not None:
            todo.append(frame)
            frame = frame.f_back  # type: ignore[assignment]
    todo.extend(gc.get_objects())
    leaves = (str, bytes, int, float, bool, type(None), type)
    while todo and len(seen) < limit:
        obj = todo.pop()
        if id(obj) in seen or isinstance(obj, leaves):
            continue
        seen.add(id(obj))
        if isinstance(obj, LRUCache):
            lru_total += len(obj)
            note("sqlalchemy LRUCache (largest)", len(obj))
        cls = type(obj)
        if cls.__module__.startswith("app."):
            attrs = getattr(obj, "__dict__", None)
            if attrs is None:
                attrs = {a: getattr(obj, a, None) for a in getattr(cls, "__slots__", ())}
            for attr, value in attrs.items():
                if isinstance(value, CONTAINERS):
                    note(f"{cls.__name__}.{attr}", len(value))
                    if len(value) >= BIG:
                        big.setdefault(f"{cls.__name__}.{attr}", []).append(value)
        with contextlib.suppress(Exception):
            todo.extend(gc.get_referents(obj))
    sizes["sqlalchemy LRUCache (all)"] = lru_total
    sizes["objects walked"] = len(seen)
    for name, held in big.items():
        sizes[f"KiB {name}"] = deep_size(held) // 1024
    return dict(sorted(sizes.items()))


def deep_size(roots: list[Any], limit: int = 3_000_000) -> int:
    """sys.getsizeof summed over what `roots` reach (not through types, modules or
    functions): roughly what dropping them would free, shared objects counted once."""
    seen: set[int] = {id(roots)}
    todo = list(roots)
    total = 0
    skip = (type, ModuleType, FunctionType)
    while todo and len(seen) < limit:
        obj = todo.pop()
        if id(obj) in seen or isinstance(obj, skip):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj, 0)
        todo.extend(gc.get_referents(obj))
    return total


def _top(now: tracemalloc.Snapshot, then: tracemalloc.Snapshot) -> list[str]:
    lines = []
    for stat in now.compare_to(then, "traceback")[:TOP]:
        if stat.size_diff <= 0:
            break
        lines.append(
            f"{stat.size_diff / 1024:+.0f} KiB ({stat.count_diff:+d} blocks), "
            f"{stat.size / 1024:.0f} KiB now"
        )
        lines.extend(f"    {line}" for line in stat.traceback.format(most_recent_first=True))
    return lines


def probe_loop(out: Path, every: float, frames: int) -> None:
    libc, sqlite = _libc(), _sqlite()
    started = time.monotonic()
    first: tracemalloc.Snapshot | None = None
    first_s = 0
    previous: tracemalloc.Snapshot | None = None
    skip = [tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, __file__)]
    while True:
        time.sleep(every)
        seconds = round(time.monotonic() - started)
        took = time.monotonic()
        heap = libc.mallinfo2()
        line: dict[str, Any] = {
            "s": seconds,
            "rss_mib": round(rss_mib(), 1),
            "malloc_in_use_mib": round(heap.uordblks / 2**20, 1),
            "malloc_free_in_arenas_mib": round(heap.fordblks / 2**20, 1),
            "malloc_mmapped_mib": round(heap.hblkhd / 2**20, 1),
            "sqlite_memory_used_mib": round(sqlite.sqlite3_memory_used() / 2**20, 1),
            "sqlite_highwater_mib": round(sqlite.sqlite3_memory_highwater(0) / 2**20, 1),
            "rss_by_mapping_mib": smaps_mib(),
            "threads": threading.active_count(),
            "os_threads": len(os.listdir("/proc/self/task")),
        }
        if frames and not tracemalloc.is_tracing():
            # From the first probe on: the start (the embedder's model) traced would take
            # minutes, and what grows under load is allocated after it anyway.
            tracemalloc.start(frames)
        elif frames:
            snapshot = tracemalloc.take_snapshot().filter_traces(skip)
            line["traced_mib"] = round(tracemalloc.get_traced_memory()[0] / 2**20, 1)
            text = [f"at {seconds} s, RSS {line['rss_mib']} MiB, traced {line['traced_mib']} MiB"]
            if first is not None and previous is not None:
                text += ["", f"== since the first probe ({first_s} s)", *_top(snapshot, first)]
                text += ["", "== since the previous probe", *_top(snapshot, previous)]
                (out / f"top-{seconds:05d}.txt").write_text("\n".join(text) + "\n")
            else:
                first, first_s = snapshot, seconds
            previous = snapshot
        line["sizes"] = _sizes()
        line["probe_s"] = round(time.monotonic() - took, 2)
        with (out / "probe.jsonl").open("a") as f:
            f.write(json.dumps(line) + "\n")


def main() -> int:
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True, help="where probe.jsonl and top-*.txt go")
    p.add_argument("--every", type=float, default=60.0, help="seconds between probes")
    p.add_argument("--frames", type=int, default=0, help="tracemalloc frames (0: no tracing)")
    args = p.parse_args(argv[:cut])
    args.out.mkdir(parents=True, exist_ok=True)
    threading.Thread(
        target=probe_loop,
        args=(args.out, args.every, args.frames),
        daemon=True,
        name="memory-probe",
    ).start()
    os.environ.setdefault("JET_WORKERS", "1")  # one process: the probe's
    return jet_main(argv[cut + 1 :])


if __name__ == "__main__":
    sys.exit(main())
