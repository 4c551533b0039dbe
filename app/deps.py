"""The one composition root: builds the long-lived objects from Settings, and closes them.

The API (lifespan), the worker and the CLI each build one `Container`; tests build theirs
on a temp dir. Nothing is created at import time.
"""

from dataclasses import dataclass, field

from app.config import Settings
from app.services import search_cache
from app.services.change_feeds import ChangeFeeds
from app.services.ratelimit import RateLimiter
from app.services.tenants import Authenticator
from app.storage.control import ControlDb
from app.storage.tenants import TenantDatabases


@dataclass
class Container:
    settings: Settings
    control: ControlDb
    tenants: TenantDatabases
    auth: Authenticator
    # Per API key, per process; disabled unless JET_RATE_LIMIT_PER_SECOND is set.
    limiter: RateLimiter = field(default_factory=lambda: RateLimiter(0, 1))
    # Live memoryChanged subscriptions of this process (app/services/change_feeds.py).
    feeds: ChangeFeeds | None = None

    async def aclose(self) -> None:
        if self.feeds is not None:
            await self.feeds.aclose()
        await self.tenants.aclose()
        await self.control.aclose()


async def build(settings: Settings) -> Container:
    """Open the control database (migrated to head) and the tenant registry."""
    control = ControlDb(settings)
    try:
        await control.migrate()
    except BaseException:
        await control.aclose()  # a refused start (citus.CitusNotReady) leaves no pool open
        raise
    shared: dict[str, object] = {}
    if settings.search_cache_pages:
        shared[search_cache.KEY] = search_cache.SearchCache(settings.search_cache_pages)
    tenants = TenantDatabases(settings, shared=shared)
    return Container(
        settings=settings,
        control=control,
        tenants=tenants,
        auth=Authenticator(control, ttl=settings.auth_cache_seconds),
        limiter=RateLimiter(settings.rate_limit_per_second, settings.rate_limit_burst),
        feeds=ChangeFeeds(
            tenants,
            poll=settings.subscription_poll_seconds,
            per_key=settings.subscriptions_per_key,
        ),
    )
