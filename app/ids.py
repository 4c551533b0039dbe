"""Opaque, prefixed, time-sortable ids ("evt_…", "mem_…", "run_…", "ten_…", "key_…", "llm_…").

The part after the prefix is a ULID (https://github.com/ulid/spec): a 48-bit millisecond
timestamp and 80 random bits, 26 characters of Crockford base32, here lowercase. Ids made
by one process are strictly increasing, as python-ulid's default generator made them (its
strict monotonic policy: within one millisecond the random part counts up by one), so
events appended in the same millisecond keep their order in (occurred_at, id) order.

The generator is here, the encoding ulid-transform's (C++): python-ulid's pure-Python
generator and encoder were a visible share of the event loop in a large batch
(docs/benchmarks.md); here a batch takes its randomness in one os.urandom call.
ulid-transform's own generator is not used: it draws from a SplitMix64 seeded once per
thread, which a forked process would share with its parent; os.urandom is the kernel's, fork-safe.
"""

import os
import re
import threading
import time
from functools import cache

from ulid_transform import bytes_to_ulid

EVENT = "evt"
ENTRY = "mem"
RUN = "run"
TENANT = "ten"
API_KEY = "key"
LLM_CALL = "llm"
ERASURE = "era"
REMOVAL = "rmv"
WEBHOOK = "whk"
DELIVERY = "msg"

# What follows the prefix: a ULID as new_ids writes it, lowercase Crockford base32 (no i, l,
# o or u), its first character 0-7 since the 26 characters hold 128 bits.
_ULID = "[0-7][0-9a-hjkmnp-tv-z]{25}"

_RANDOM_LIMIT = 1 << 80
_MAX_MS = (1 << 48) - 1

_lock = threading.Lock()  # ids are made on the event loop and on aiosqlite's threads
_last_ms = -1
_last_random = 0


def new_id(prefix: str) -> str:
    return new_ids(prefix, 1)[0]


def new_ids(prefix: str, n: int) -> list[str]:
    """`n` new ids, in increasing order, after every id this process made before."""
    global _last_ms, _last_random
    now = time.time_ns() // 1_000_000
    with _lock:
        if now > _last_ms:
            ms, first = now, int.from_bytes(os.urandom(10), "big")
        else:  # the same millisecond (or the clock stepped back): count on from the last
            ms, first = _last_ms, _last_random + 1
        if first + n > _RANDOM_LIMIT:  # the millisecond's random space is used up
            ms, first = ms + 1, int.from_bytes(os.urandom(10), "big") >> 1
        if ms > _MAX_MS:
            raise ValueError("the ULID timestamp is out of range")
        _last_ms, _last_random = ms, first + n - 1
    head = ms.to_bytes(6, "big")
    start = prefix + "_"
    return [
        start + bytes_to_ulid(head + r.to_bytes(10, "big")).lower() for r in range(first, first + n)
    ]


def pattern(prefix: str) -> str:
    """The regular expression (Python and ECMA-262 alike) of the ids with `prefix`."""
    return f"^{prefix}_{_ULID}$"


@cache
def _matcher(prefix: str) -> "re.Pattern[str]":
    return re.compile(f"{prefix}_{_ULID}")


def is_id(value: str, prefix: str) -> bool:
    """Whether `value` is an id of `prefix` in the form new_ids makes, nothing around it."""
    return _matcher(prefix).fullmatch(value) is not None
