"""Opaque keyset cursors: a list's sort key, base64url JSON, tagged with the list they
belong to. A cursor never names a tenant: it is only ever read in the caller's tenant."""

import base64
import binascii
import json
from datetime import UTC, datetime
from typing import Any

import orjson

from app.errors import InvalidInput


def encode(kind: str, key: list[Any]) -> str:
    """`kind` and `key` (text, integers, datetimes as isoformat() writes them) as base64url
    JSON without padding."""
    return base64.urlsafe_b64encode(_json([kind, *key])).rstrip(b"=").decode()


def _json(value: list[Any]) -> bytes:
    # orjson: a page encodes one cursor per edge, and json.dumps (with isoformat()) costs
    # several times as much. Where orjson writes a character as it is (beyond ASCII, DEL)
    # or refuses it (a lone surrogate), json.dumps escapes it: json.dumps then, so a key's
    # cursor is the same text whichever wrote it.
    try:
        raw = orjson.dumps(value)
        if raw.isascii() and b"\x7f" not in raw:
            return raw
    except orjson.JSONEncodeError:
        pass
    return json.dumps(value, separators=(",", ":"), default=datetime.isoformat).encode()


def decode(kind: str, cursor: str, *, types: tuple[type, ...], field: str = "after") -> list[Any]:
    """The key inside `cursor`, checked to be of list `kind` with values of `types`."""
    try:
        if len(cursor) > 1000:
            raise ValueError
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        value = json.loads(raw)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise InvalidInput([field], f"{field} is not a valid cursor") from None
    if (
        not isinstance(value, list)
        or len(value) != len(types) + 1
        or value[0] != kind
        or not all(
            isinstance(v, t) and not (t is int and isinstance(v, bool))
            for v, t in zip(value[1:], types, strict=True)
        )
    ):
        raise InvalidInput([field], f"{field} is not a cursor of this list")
    if any(isinstance(v, int) and not -(2**63) <= v < 2**63 for v in value[1:]):
        raise InvalidInput([field], f"{field} is not a valid cursor")
    return value[1:]


def decode_time(value: str, *, field: str = "after") -> datetime:
    """A timestamp from inside a cursor (a forged one is the client's error, not ours)."""
    try:
        parsed = datetime.fromisoformat(value)
        if parsed.tzinfo is None:
            raise ValueError
        return parsed.astimezone(UTC)
    except (ValueError, OverflowError):
        raise InvalidInput([field], f"{field} is not a valid cursor") from None


def decode_search(kind: str, cursor: str | None) -> tuple[int | None, int]:
    """(high-water seq, offset) of a relevance-ordered list; (None, 0) for its first page.

    Relevance lists page by offset within a snapshot: only rows with seq <= the high-water
    mark of the first page are listed. bm25 scores move with every append (they depend on
    the whole index), so a cursor keyed by score would skip or repeat rows; rows that
    existed at the first page keep their relative order, so an offset over them does not.
    """
    if cursor is None:
        return None, 0
    hwm, offset = decode(kind, cursor, types=(int, int))
    if hwm < 0 or offset < 0:
        raise InvalidInput(["after"], "after is not a valid cursor")
    return hwm, offset
