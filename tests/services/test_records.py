"""fast_constructor (app/services/records.py): the records it builds are the very records
their class builds, frozen and all."""

import copy
import dataclasses
import pickle
from datetime import UTC, datetime

import pytest

from app.services.records import (
    Appended,
    Edge,
    Entry,
    EntrySource,
    Event,
    EventIn,
    Scope,
    fast_constructor,
    new_appended,
    new_edge,
    new_entry,
    new_event,
    new_event_in,
)

NOW = datetime(2026, 11, 30, 5, 40, tzinfo=UTC)
EVENT_ARGS = (
    "evt_1", Scope.ENTITY, "ent_acme", "decision", "Acme said yes.", "inbox", "m1", NOW, NOW,
    None, None, "key-1",
)  # fmt: skip
ENTRY_ARGS = (
    "mem_1", Scope.PROJECT, "prj_1", "Title", "Summary", ["a", "b"], 4, EntrySource.CALL,
    NOW, NOW, 2,
)  # fmt: skip


def cases() -> list[tuple[object, object]]:
    event, entry = Event(*EVENT_ARGS), Entry(*ENTRY_ARGS)
    return [
        (new_event(*EVENT_ARGS), event),
        (new_event(**dataclasses.asdict(event)), event),
        (new_entry(*ENTRY_ARGS), entry),
        (new_event_in(Scope.TEAM, "t1", "note", "hi"), EventIn(Scope.TEAM, "t1", "note", "hi")),
        (
            new_event_in(
                scope=Scope.ENTITY,
                scope_ref="a",
                kind="k",
                body="b",
                source="s",
                source_ref="r",
                occurred_at=NOW,
                idempotency_key="i",
            ),
            EventIn(Scope.ENTITY, "a", "k", "b", "s", "r", NOW, "i"),
        ),  # fmt: skip
        (new_appended(event, True), Appended(event, replayed=True)),
        (new_edge("c1", event), Edge("c1", event)),  # the default score
        (new_edge("c1", entry, -1.5), Edge("c1", entry, -1.5)),
    ]


@pytest.mark.parametrize(("fast", "plain"), cases())
def test_the_fast_construction_is_the_plain_one(fast: object, plain: object) -> None:
    assert type(fast) is type(plain)
    assert fast == plain and plain == fast
    try:
        expected = hash(plain)
    except TypeError:  # an Entry holds a list: neither construction hashes
        with pytest.raises(TypeError):
            hash(fast)
    else:
        assert hash(fast) == expected
    assert repr(fast) == repr(plain)
    assert dataclasses.astuple(fast) == dataclasses.astuple(plain)  # type: ignore[call-overload]
    assert copy.copy(fast) == plain and pickle.loads(pickle.dumps(fast)) == plain
    name = dataclasses.fields(fast)[0].name  # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(fast, name, "changed")
    # No attribute beyond the fields (Python 3.11's frozen slotted dataclasses say so
    # with a TypeError from their __setattr__, the plain construction's too).
    for record in (fast, plain):
        with pytest.raises((AttributeError, TypeError)):
            record.extra = 1  # type: ignore[attr-defined]
    assert not hasattr(fast, "__dict__")


def test_arguments_are_checked_as_the_class_checks_them() -> None:
    with pytest.raises(TypeError):
        new_event(*EVENT_ARGS[:-1])  # one missing
    with pytest.raises(TypeError):
        new_edge("c", None, 1.0, [], 0.5, "extra")  # one too many


def test_only_slotted_dataclasses() -> None:
    @dataclasses.dataclass(frozen=True)
    class NoSlots:
        a: int

    with pytest.raises(TypeError, match="not a slotted dataclass"):
        fast_constructor(NoSlots)
