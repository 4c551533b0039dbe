"""The domain's expected failures, raised by services and shown to clients as UserErrors.

Field paths and messages use the domain's names (`search`, `idempotencyKey`, `3.body` in a
batch, the empty path for a batch as a whole); each surface adds its own argument or
location to the path (GraphQL `input`/`filter`, REST body/query/header).

    ExpectedError             base of every expected failure (field path, code, message)
    ├── InvalidInput          a value breaks a rule or a documented limit      (INVALID)
    ├── TooLarge              a value is over a size limit                      (TOO_LARGE)
    ├── NotFound              no such id in this tenant                         (NOT_FOUND)
    ├── Conflict              stale version, idempotency key reused             (CONFLICT)
    ├── Forbidden             a client asked for something reserved             (FORBIDDEN)
    └── BudgetExceeded        the tenant's token budget would be exceeded       (BUDGET_EXCEEDED)

Anything else escaping a service is a bug: the edge masks it and logs it with a request id.
"""

from collections.abc import Sequence
from enum import StrEnum


class ErrorCode(StrEnum):
    INVALID = "INVALID"
    NOT_FOUND = "NOT_FOUND"
    CONFLICT = "CONFLICT"
    TOO_LARGE = "TOO_LARGE"
    BUDGET_EXCEEDED = "BUDGET_EXCEEDED"
    FORBIDDEN = "FORBIDDEN"


class ExpectedError(Exception):
    code: ErrorCode = ErrorCode.INVALID

    def __init__(self, field: Sequence[str], message: str) -> None:
        super().__init__(message)
        self.field = list(field)
        self.message = message

    def at(self, *prefix: str) -> "ExpectedError":
        """The same error with its field path nested under `prefix` (e.g. input, 3)."""
        return type(self)([*prefix, *self.field], self.message)

    def renamed(self, field: Sequence[str], name: str) -> "ExpectedError":
        """The same error at a surface's `field`, its message naming it `name` where it
        opened with the domain's name for the field (services' messages open so)."""
        domain = ".".join(self.field)
        message = self.message
        rest = message[len(domain) : len(domain) + 1]
        if domain and message.startswith(domain) and not (rest.isalnum() or rest == "_"):
            message = name + message[len(domain) :]
        return type(self)(field, message)


class InvalidInput(ExpectedError):
    code = ErrorCode.INVALID


class TooLarge(ExpectedError):
    code = ErrorCode.TOO_LARGE


class NotFound(ExpectedError):
    code = ErrorCode.NOT_FOUND


class Conflict(ExpectedError):
    code = ErrorCode.CONFLICT


class Forbidden(ExpectedError):
    code = ErrorCode.FORBIDDEN


class BudgetExceeded(ExpectedError):
    code = ErrorCode.BUDGET_EXCEEDED


class ExpectedErrors(Exception):
    """Several expected failures found at once (a batch with more than one bad item)."""

    def __init__(self, errors: Sequence[ExpectedError]) -> None:
        super().__init__("; ".join(e.message for e in errors))
        self.errors = list(errors)


class Unavailable(Exception):
    """A store cannot serve this request now (app/storage/unavailable.TenantUnavailable):
    each surface answers it with its status and code, and logs one line, not a traceback."""
