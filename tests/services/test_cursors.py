"""Cursor encoding: orjson's text where it writes what json.dumps does, else json.dumps's, so
every cursor is exactly what json.dumps + base64 wrote, and cursors given out before keep
decoding the same way."""

import base64
import json
import random
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from app.errors import InvalidInput
from app.services import cursors


def reference(kind: str, key: list[Any]) -> str:
    """The encoding cursors.encode has always had (json.dumps, base64url, no padding)."""
    raw = json.dumps([kind, *key], separators=(",", ":"), ensure_ascii=True)
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


ODD_STRINGS = [
    "",
    " ",
    "evt_01jdx0v7c2k9m5ht0q3b2a1xyz",
    "mem_X",
    "a-b.c:d+e",
    'q"uote',
    "back\\slash",
    "sl/ash",
    "tab\there",
    "new\nline",
    "\x00\x1f\x7f",
    "é",
    "日本",
    "🙂",
    "\u2028\u2029",
    "\ud800",
    "<script>",
    "a'b",
    "100%",
    "2026-01-01T00:00:00+00:00",
]
ODD_VALUES: list[Any] = [
    *ODD_STRINGS,
    0,
    1,
    -1,
    2**63 - 1,
    -(2**63),
    2**70,
    True,
    False,
    None,
    1.5,
    [1, "a"],
]


@pytest.mark.parametrize("value", ODD_VALUES, ids=repr)
@pytest.mark.parametrize("kind", ["events", "events-search", "sources", "k\u00e9"])
def test_encode_writes_what_json_dumps_did(kind: str, value: Any) -> None:
    for key in ([value], [value, value], ["plain", value], [value, 7]):
        assert cursors.encode(kind, key) == reference(kind, key)


def random_datetimes(n: int) -> list[datetime]:
    rnd = random.Random(20261130)
    out = [
        datetime(1, 1, 1, tzinfo=UTC),
        datetime(1970, 1, 1, tzinfo=UTC),
        datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC),
        datetime(2026, 3, 4, 5, 6, 7, 1, tzinfo=UTC),
        datetime(2026, 3, 4, 5, 6, 7, 120000, tzinfo=UTC),
        datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    ]
    start = datetime(1900, 1, 1, tzinfo=UTC)
    for _ in range(n):
        seconds = rnd.randrange(250 * 365 * 86400)
        microseconds = rnd.choice([0, rnd.randrange(10**6)])
        out.append(start + timedelta(seconds=seconds, microseconds=microseconds))
    return out


@pytest.mark.parametrize("ident", ODD_STRINGS, ids=repr)
def test_the_events_cursor_is_what_json_dumps_wrote(ident: str) -> None:
    # Not in UTC last (never so from the database, but it must still be right).
    others = [
        datetime(2026, 3, 4, 5, 6, 7, 89, tzinfo=timezone(timedelta(hours=h))) for h in (0, 5.5, -8)
    ]
    for at in random_datetimes(200) + others:
        expected = reference("events", [at.isoformat(), ident])
        assert cursors.encode("events", [at, ident]) == expected


def test_round_trip_through_decode() -> None:
    for at in random_datetimes(100):
        cursor = cursors.encode("events", [at, "evt_01abc"])
        got_at, got_id = cursors.decode("events", cursor, types=(str, str))
        assert (cursors.decode_time(got_at), got_id) == (at, "evt_01abc")
        assert cursors.decode_time(got_at).tzinfo is not None
    assert cursors.decode("s", cursors.encode("s", [3, -4]), types=(int, int)) == [3, -4]
    with pytest.raises(InvalidInput):
        cursors.decode("sources", cursors.encode("events", [1]), types=(int,))


@pytest.mark.parametrize(
    ("cursor", "kind", "types", "key"),
    [  # written by the json.dumps version of encode: cursors clients may hold
        (
            "WyJldmVudHMiLCIyMDI2LTAzLTA0VDA1OjA2OjA3LjAwMDA4OSswMDowMCIsImV2dF8wMWh6eiJd",
            "events",
            (str, str),
            ["2026-03-04T05:06:07.000089+00:00", "evt_01hzz"],
        ),
        (
            "WyJldmVudHMiLCIyMDI2LTAzLTA0VDA1OjA2OjA3KzAwOjAwIiwiXHUwMGU5dnQgXCJxXCIiXQ",
            "events",
            (str, str),
            ["2026-03-04T05:06:07+00:00", 'évt "q"'],
        ),
        ("WyJldmVudHMtc2VhcmNoIiwxMiwzXQ", "events-search", (int, int), [12, 3]),
    ],
)
def test_earlier_cursors_still_decode_and_encode_the_same(
    cursor: str, kind: str, types: tuple[type, ...], key: list[Any]
) -> None:
    assert cursors.decode(kind, cursor, types=types) == key
    assert cursors.encode(kind, key) == cursor
