"""Request ids: the client's X-Request-Id when it is sane, else a new one; every answer and
log line of a request carries it (TenantBound binds it, app/edge/auth.py)."""

import random
import re

from starlette.types import Scope

_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


def request_id_of(scope: Scope) -> str:
    """The client's X-Request-Id when it is sane (the first such header), else a new one."""
    for name, value in scope.get("headers", ()):
        if name == b"x-request-id":
            text = sane_request_id(value)
            if text is not None:
                return text
    return new_request_id()


def current_request_id(scope: Scope) -> str:
    """The id TenantBound gave this request, else request_id_of(scope) (an answer made
    before or without TenantBound)."""
    return scope.get("state", {}).get("request_id") or request_id_of(scope)


def bind_request_id(scope: Scope, client_request_id: str | None) -> str:
    """The request's id, kept in its scope's state: one given earlier on this request, else
    the client's (already checked with sane_request_id), else a new one."""
    state = scope.setdefault("state", {})
    request_id: str = state.get("request_id") or client_request_id or new_request_id()
    state["request_id"] = request_id
    return request_id


def sane_request_id(value: bytes) -> str | None:
    text = value.decode("latin-1")
    return text if _REQUEST_ID.fullmatch(text) else None


def new_request_id() -> str:
    # 128 random bits as 32 hex digits (uuid4().hex's shape): ids need to be unique, not
    # secret (they are echoed and logged), and `random` (reseeded in every forked child)
    # costs no system call, where uuid4 reads os.urandom on every request.
    # The bytes' hex is f"{n:032x}" (leading zeros kept), and cheaper to make.
    return random.getrandbits(128).to_bytes(16, "big").hex()
