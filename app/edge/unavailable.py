"""How a TenantUnavailable (a tenant database locked, corrupt or full) is answered.

Not a masked 500: the status says what happened (503 + Retry-After for a lock held past
busy_timeout, 507 for a full disk, 500 naming corruption), the body names the problem with
a stable code (TENANT_DATABASE_BUSY / _CORRUPT / _FULL) and carries the request id. Only
that tenant is affected: other tenants' databases are other files.
"""

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.types import Scope, Send

from app.storage.unavailable import TenantUnavailable

# (scope, send, the error, request id): one per surface, like answers.ErrorWriter.
UnavailableWriter = Callable[[Scope, Send, TenantUnavailable, str], Awaitable[None]]


def retry_after_headers(exc: TenantUnavailable) -> dict[str, str]:
    return {} if exc.retry_after is None else {"Retry-After": str(exc.retry_after)}


def graphql_extensions(exc: TenantUnavailable, request_id: str | None) -> dict[str, Any]:
    ext: dict[str, Any] = {"code": exc.code, "reason": exc.reason, "requestId": request_id}
    if exc.retry_after is not None:
        ext["retryAfter"] = exc.retry_after
    return ext
