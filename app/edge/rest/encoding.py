"""The bytes of REST's JSON answers: a record's JSON object, orjson, and a JSONResponse built
directly."""

from collections.abc import Callable, Collection, Mapping
from dataclasses import fields
from datetime import UTC, datetime
from types import NoneType
from typing import Any, get_args, get_origin, get_type_hints

import orjson
from pydantic import PlainSerializer
from pydantic.alias_generators import to_camel
from starlette.responses import JSONResponse, Response

Encoder = Callable[[Any], dict[str, Any]]


def record_encoder(
    record: Any,
    *,
    hidden: Collection[str] = (),
    inline: tuple[str, Encoder] | None = None,
    nested: Mapping[str, Encoder] | None = None,
) -> Encoder:
    """A function from an instance of `record` (a dataclass, or a generic one's alias) to its
    JSON object for `dumps`: every field but `hidden`, under its camelCase name, in order;
    datetimes in UTC; a field annotated with a PlainSerializer through its function; the
    `nested` fields through their own encoder (a list item by item), and the `inline` field's
    object merged in its place.

    Generated as one dict display, as dataclasses generates __init__: pydantic's dump of a
    page of 50 events took twice as long, and a page of events is the hottest answer. The
    tests hold its output equal to pydantic's dump of the record.
    """
    cls = get_origin(record) or record
    hints = get_type_hints(cls, include_extras=True)
    nested = nested or {}
    names: dict[str, Any] = {"UTC": UTC}
    items = []
    for f in fields(cls):
        value, hint, function = f"r.{f.name}", hints[f.name], f"_{f.name}"
        serializers = [
            m for m in getattr(hint, "__metadata__", ()) if isinstance(m, PlainSerializer)
        ]
        if f.name in hidden:
            continue
        if inline is not None and f.name == inline[0]:
            names[function] = inline[1]
            items.append(f"**{function}({value})")
            continue
        if f.name in nested:
            names[function] = nested[f.name]
            many = get_origin(hint) is list
            value = f"[{function}(v) for v in {value}]" if many else f"{function}({value})"
        elif serializers:
            names[function] = serializers[-1].func
            value = f"{function}({value})"
        elif hint is datetime:
            value = f"(v if (v := {value}).tzinfo is UTC else v.astimezone(UTC))"
        elif set(get_args(hint)) == {datetime, NoneType}:
            value = f"(v if (v := {value}) is None or v.tzinfo is UTC else v.astimezone(UTC))"
        items.append(f"{to_camel(f.name)!r}: {value}")
    exec(f"def encode(r):\n    return {{{', '.join(items)}}}\n", names)
    encoder: Encoder = names["encode"]
    return encoder


def dumps(content: Any) -> bytes:
    """The JSON of a response body. Datetimes (from record_encoder) must be UTC: they come
    out as pydantic writes them, with `Z`."""
    return orjson.dumps(content, option=orjson.OPT_UTC_Z)


class OrjsonResponse(JSONResponse):
    """Starlette's JSONResponse (UTF-8, compact), encoded by orjson: several times faster
    on a page of items. JSON's numbers, strings and nulls come out the same."""

    def __init__(
        self, content: Any, status_code: int = 200, headers: Mapping[str, str] | None = None
    ) -> None:
        if headers:
            super().__init__(content, status_code, headers)
            return
        # Without headers, what Response.__init__ and init_headers (Starlette 1.10) make
        # of it, built directly: every append answers this way, and their generic path
        # (the headers mapping, its key scan, the media type's charset check) was most of
        # its cost. tests/edge/test_rest_responses.py compares the two.
        self.status_code = status_code
        self.background = None
        self.body = body = dumps(content)
        if status_code < 200 or status_code in (204, 304):
            self.raw_headers = [(b"content-type", b"application/json")]
        else:
            self.raw_headers = [
                (b"content-length", str(len(body)).encode("latin-1")),
                (b"content-type", b"application/json"),
            ]

    def render(self, content: Any) -> bytes:
        return dumps(content)


def json_response(
    content: object, status: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    return OrjsonResponse(content, status, headers)
