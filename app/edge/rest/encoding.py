"""The bytes of REST's JSON answers: orjson, and a JSONResponse built directly."""

from collections.abc import Mapping
from typing import Any

import orjson
from starlette.responses import JSONResponse, Response


def dumps(content: Any) -> bytes:
    """The JSON of a response body. Datetimes (from event_body) must be UTC: they come
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
