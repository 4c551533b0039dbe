"""The bounds on open websockets at /graphql, per API process: how many are open in all
(JET_WEBSOCKETS_PER_PROCESS, checked as one opens) and per API key (JET_WEBSOCKETS_PER_KEY,
checked at connection_init, once the key is known). One over a bound is closed with 1013
("try again later", which graphql-ws clients retry with backoff) and a reason naming it.

uvicorn's `limit_concurrency` would count HTTP requests and websockets together and answer
every one over it with a 503, whoever sent it: a count of sockets alone, and per key, is
kept here instead.
"""

import hashlib

# RFC 6455's registry: the server is overloaded, or the client over its share; retry later.
TRY_AGAIN_LATER = 1013


class OpenSockets:
    """This process's open websockets, in all and per API key (held as a digest, never as
    the key itself). The check and the count are one step with no await between them, so
    sockets opening at once never pass a bound together."""

    def __init__(self, *, per_key: int, per_process: int) -> None:
        self.per_key = per_key
        self.per_process = per_process
        self.open = 0
        self._keys: dict[bytes, int] = {}

    def enter(self) -> str | None:
        """Count one more open socket; the reason to close it instead when over the bound."""
        if self.open >= self.per_process:
            return f"this server holds at most {self.per_process} open websockets; retry later"
        self.open += 1
        return None

    def leave(self) -> None:
        self.open -= 1

    def enter_key(self, key: str) -> str | None:
        """Count one more socket for `key`; the reason to close it instead when over."""
        slot = _slot(key)
        held = self._keys.get(slot, 0)
        if held >= self.per_key:
            return f"an API key holds at most {self.per_key} open websockets per server"
        self._keys[slot] = held + 1
        return None

    def leave_key(self, key: str) -> None:
        slot = _slot(key)
        held = self._keys[slot] - 1
        if held:
            self._keys[slot] = held
        else:
            del self._keys[slot]

    def held_by(self, key: str) -> int:
        """The sockets `key` holds open now."""
        return self._keys.get(_slot(key), 0)


def _slot(key: str) -> bytes:
    return hashlib.blake2b(key.encode(), digest_size=16).digest()
