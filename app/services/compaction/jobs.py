"""The per-tenant entry points the worker, the CLI and the API call: which tenants the
daily run covers, and one tenant's run under its own policy (gateway, DLP, budget)."""

import contextlib
from datetime import datetime
from typing import Protocol

import httpx

from app import metrics
from app.adapters.gateway import Gateway, GatewayConfig
from app.adapters.summarisers.base import Summariser
from app.adapters.summarisers.builtin import BuiltinSummariser
from app.adapters.summarisers.gateway import GatewaySummariser
from app.config import Settings
from app.errors import NotFound
from app.services import policies
from app.services.compaction.run import run_compaction
from app.services.policies import TenantPolicy
from app.services.records import CompactionRunRecord
from app.storage.control import ControlDb
from app.storage.tenants import TenantDatabases


class Stores(Protocol):
    """What a run needs from the composition root (app.deps.Container has it)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def control(self) -> ControlDb: ...

    @property
    def tenants(self) -> TenantDatabases: ...


async def active_tenant_ids(control: ControlDb) -> list[str]:
    """Ids of the tenants the daily compaction covers."""
    return [t.id for t in await control.tenants() if t.status == "active"]


def summariser_for(policy: TenantPolicy, http: httpx.AsyncClient, settings: Settings) -> Summariser:
    """The tenant's gateway when its policy names one, else the built-in summariser."""
    if not policy.gateway_url:
        return BuiltinSummariser()
    config = GatewayConfig(
        base_url=policy.gateway_url,
        api_key=policy.gateway_key,
        models=policy.models,
        timeout_s=policy.gateway_timeout_s,
        max_answer_bytes=settings.gateway_max_answer_bytes,
    )
    return GatewaySummariser(Gateway(config, client=http))


async def compact_tenant(
    stores: Stores,
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
    if await stores.control.find_tenant(tenant_id) is None:
        # Checked first: leasing an unknown id would create a database for it.
        raise NotFound(["tenant"], f"no tenant {tenant_id!r}")
    policy = await policies.get_policy(stores.control, tenant_id)
    async with contextlib.AsyncExitStack() as stack:
        summariser: Summariser = BuiltinSummariser()
        if policy.gateway_url:
            if http is None:
                http = await stack.enter_async_context(httpx.AsyncClient())
            summariser = summariser_for(policy, http, stores.settings)
        db = await stack.enter_async_context(stores.tenants.lease(tenant_id))
        try:
            run = await run_compaction(
                db,
                policy=policy,
                summariser=summariser,
                settings=stores.settings,
                trigger=trigger,
                dry_run=dry_run,
                now=now,
            )
        except Exception:
            metrics.COMPACTION_RUNS.labels(status="failed", trigger=str(trigger)).inc()
            raise
        record_run(run)
        return run


def record_run(run: CompactionRunRecord) -> None:
    """Count one finished compaction run (a dry run spends nothing and is counted by status)."""
    metrics.COMPACTION_RUNS.labels(status=run.status.value, trigger=str(run.trigger)).inc()
    if run.dry_run:
        return
    metrics.COMPACTION_BUCKETS.labels(outcome="compacted").inc(run.buckets_compacted)
    metrics.COMPACTION_BUCKETS.labels(outcome="skipped").inc(run.buckets_skipped)
    metrics.COMPACTION_TOKENS.labels(kind="prompt").inc(run.prompt_tokens)
    metrics.COMPACTION_TOKENS.labels(kind="completion").inc(run.completion_tokens)
    if run.budget_exceeded:
        metrics.COMPACTION_BUDGET_STOPS.inc()
    # Problem lines are "scope ref: why"; DLP's is "…: blocked by DLP: counts". Beyond
    # the first MAX_PROBLEMS lines only a count is kept, so this can undercount then.
    metrics.COMPACTION_DLP_STOPS.inc(sum("blocked by DLP" in p for p in run.problems))
