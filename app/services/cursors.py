"""Opaque keyset cursors: a list's sort key, base64url JSON, tagged with the list they
belong to. A cursor never names a tenant: it is only ever read in the caller's tenant."""

import base64
import binascii
import json
import re
from datetime import UTC, datetime
from typing import Any

import orjson

from app.errors import InvalidInput

# Hand-written JSON and base64url for the common keys: a page encodes one cursor per edge,
# and json.dumps plus base64.urlsafe_b64encode cost several times what is below. The text
# is byte for byte what json.dumps(separators=(",", ":"), ensure_ascii=True) writes (the
# tests compare the two), so every cursor, earlier ones included, decodes the same way.
# Strings of these characters need no escaping in JSON; anything else takes json.dumps.
_PLAIN = re.compile(r"[A-Za-z0-9_ .:+\-]*").fullmatch
_URLSAFE = bytes.maketrans(b"+/", b"-_")
_b2a = binascii.b2a_base64


def _b64(raw: bytes) -> str:
    # base64.urlsafe_b64encode, minus its Python wrappers, and without the padding.
    return _b2a(raw, newline=False).translate(_URLSAFE).rstrip(b"=").decode()


def encode(kind: str, key: list[Any]) -> str:
    out = '["' + kind + '"' if _PLAIN(kind) is not None else None
    for v in key:
        if out is None:
            break
        cls = v.__class__
        if cls is str and _PLAIN(v) is not None:
            out += ',"' + v + '"'
        elif cls is int:  # not bool: json writes true/false
            out += "," + str(v)
        else:
            out = None
    if out is None:
        out = json.dumps([kind, *key], separators=(",", ":"), ensure_ascii=True)
    else:
        out += "]"
    return _b64(out.encode())


def encode_at(kind: str, at: datetime, ident: str) -> str:
    """encode(kind, [at.isoformat(), ident]), the key of lists ordered by (time, id), for
    a plain `kind`. orjson writes an aware UTC datetime as isoformat() does, in a third of
    the time, and the rest as compact json.dumps does when every string is an ASCII
    identifier (the ids of app.ids, e.g. evt_01j…); anything else takes encode."""
    if at.tzinfo is UTC and ident.isascii() and ident.isidentifier():
        return _b64(orjson.dumps([kind, at, ident]))
    return encode(kind, [at.isoformat(), ident])


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
