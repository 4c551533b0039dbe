"""The one composition root: builds the long-lived objects from Settings, and closes them.

The API (lifespan), the worker and the CLI each build one `Container`; tests build theirs
on a temp dir. Nothing is created at import time.
"""

import contextlib
from dataclasses import dataclass, field
from datetime import datetime

import httpx

from app import metrics
from app.adapters.gateway import Gateway, GatewayConfig
from app.adapters.summarisers import BuiltinSummariser, GatewaySummariser
from app.config import Settings
from app.edge.ratelimit import RateLimiter
from app.errors import NotFound
from app.services import compaction, policies, search_cache
from app.services.compaction import CompactionRunRecord
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

    async def aclose(self) -> None:
        await self.tenants.aclose()
        await self.control.aclose()


async def build(settings: Settings) -> Container:
    """Open the control database (migrated to head) and the tenant registry."""
    control = ControlDb(settings)
    await control.migrate()
    shared: dict[str, object] = {}
    if settings.search_cache_pages:
        shared[search_cache.KEY] = search_cache.SearchCache(settings.search_cache_pages)
    return Container(
        settings=settings,
        control=control,
        tenants=TenantDatabases(settings, shared=shared),
        auth=Authenticator(control, ttl=settings.auth_cache_seconds),
        limiter=RateLimiter(settings.rate_limit_per_second, settings.rate_limit_burst),
    )


async def active_tenant_ids(container: Container) -> list[str]:
    """Ids of the tenants the daily compaction covers."""
    return [t.id for t in await container.control.tenants() if t.status == "active"]


async def compact_tenant(
    container: Container,
    tenant_id: str,
    *,
    trigger: str,
    dry_run: bool = False,
    now: datetime | None = None,
    http: httpx.AsyncClient | None = None,
) -> CompactionRunRecord:
    """One compaction run of one tenant under its own policy (gateway, DLP, budget).

    `http` is a shared client (the worker's); without one a client is made for this run.
    Expected problems are recorded on the returned run; anything unexpected is recorded
    on it as FAILED and raised.
    """
    if await container.control.find_tenant(tenant_id) is None:
        # Checked first: leasing an unknown id would create a database for it.
        raise NotFound(["tenant"], f"no tenant {tenant_id!r}")
    policy = await policies.get_policy(container.control, tenant_id)
    async with contextlib.AsyncExitStack() as stack:
        summariser: compaction.Summariser = BuiltinSummariser()
        if policy.gateway_url:
            if http is None:
                http = await stack.enter_async_context(httpx.AsyncClient())
            config = GatewayConfig(
                base_url=policy.gateway_url,
                api_key=policy.gateway_key,
                models=policy.models,
                timeout_s=policy.gateway_timeout_s,
            )
            summariser = GatewaySummariser(Gateway(config, client=http))
        db = await stack.enter_async_context(container.tenants.lease(tenant_id))
        try:
            run = await compaction.run_compaction(
                db,
                policy=policy,
                summariser=summariser,
                settings=container.settings,
                trigger=trigger,
                dry_run=dry_run,
                now=now,
            )
        except Exception:
            metrics.COMPACTION_RUNS.labels(status="failed", trigger=str(trigger)).inc()
            raise
        metrics.record_run(run)
        return run
