"""app/ids.py: ULIDs (https://github.com/ulid/spec) behind a prefix, strictly increasing
within a process, from any thread."""

import re
import sys
import threading
import time

import pytest

from app import ids

CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"
ID = re.compile(r"evt_[0-7][0-9a-hjkmnp-tv-z]{25}")


def decode(ident: str) -> tuple[int, int]:
    """(milliseconds, randomness) of an id, decoded the plain way (the spec's base32)."""
    value = 0
    for char in ident.split("_", 1)[1]:
        value = value * 32 + CROCKFORD.index(char)
    return value >> 80, value & ((1 << 80) - 1)


def test_ids_are_ulids_of_the_current_millisecond() -> None:
    before = time.time_ns() // 1_000_000
    made = [ids.new_id(ids.EVENT) for _ in range(50)] + ids.new_ids(ids.EVENT, 500)
    after = time.time_ns() // 1_000_000
    for ident in made:
        assert ID.fullmatch(ident), ident
        ms, _ = decode(ident)
        assert before <= ms <= after + 1  # +1: a used-up millisecond moves to the next
    assert ids.new_id(ids.TENANT).startswith("ten_")


def test_ids_strictly_increase_as_text_and_as_numbers() -> None:
    made = [ids.new_id(ids.EVENT) for _ in range(2000)]
    for batch in range(20):
        made += ids.new_ids(ids.EVENT, batch)
    assert made == sorted(made) and len(set(made)) == len(made)
    values = [decode(i) for i in made]
    assert values == sorted(values)
    # A batch in one millisecond counts up by one, as python-ulid's strict policy did.
    batch = [decode(i) for i in ids.new_ids(ids.EVENT, 100)]
    assert batch == [(batch[0][0], batch[0][1] + i) for i in range(100)]


def test_a_clock_that_steps_back_does_not_break_the_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = ids.new_id(ids.EVENT)
    monkeypatch.setattr(time, "time_ns", lambda: 1_000_000_000_000)  # 2001
    later = ids.new_ids(ids.EVENT, 3)
    assert [first, *later] == sorted([first, *later])
    assert decode(later[0])[0] == decode(first)[0]  # carries on in the last millisecond


def test_a_used_up_millisecond_moves_to_the_next(monkeypatch: pytest.MonkeyPatch) -> None:
    first = ids.new_id(ids.EVENT)
    ms, _ = decode(first)
    monkeypatch.setattr(ids, "_last_random", (1 << 80) - 2)  # one value left in `ms`
    monkeypatch.setattr(time, "time_ns", lambda: ms * 1_000_000)
    made = ids.new_ids(ids.EVENT, 3)
    assert [decode(i)[0] for i in made] == [ms + 1] * 3
    assert [first, *made] == sorted([first, *made])


def test_threads_share_one_sequence() -> None:
    made: list[list[str]] = [[] for _ in range(4)]

    def make(out: list[str]) -> None:
        for _ in range(2000):
            out.append(ids.new_id(ids.EVENT))
        out.extend(ids.new_ids(ids.EVENT, 500))

    threads = [threading.Thread(target=make, args=(out,)) for out in made]
    # Threads switch every microsecond rather than every 5 ms, so that an unguarded
    # read-modify-write of the sequence would be interrupted (and caught) here.
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(previous)
    everything = [i for out in made for i in out]
    assert len(set(everything)) == len(everything) == 4 * 2500
    assert all(out == sorted(out) for out in made)


def test_is_id_takes_what_new_ids_makes_and_nothing_else() -> None:
    made = ids.new_ids(ids.ENTRY, 1000)
    for good in [*made, "mem_" + "0" * 26, "mem_7" + "z" * 25]:
        assert ids.is_id(good, ids.ENTRY), good
        assert re.search(ids.pattern(ids.ENTRY), good), good
    bad = [
        "mem_" + "0" * 25,
        "mem_" + "0" * 27,
        "mem_8" + "0" * 25,
        made[0].upper(),
        made[0] + "\n",
        " " + made[0],
        "evt_" + made[0][4:],
        "mem" + made[0][4:],
        "../../etc/passwd",
        *("mem_" + "0" * 25 + c for c in "ilou"),
    ]
    for value in bad:
        assert not ids.is_id(value, ids.ENTRY), value
