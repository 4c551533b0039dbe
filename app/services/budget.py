"""A tenant's token budget, kept in its llm_calls: each call is reserved before it is made
and settled with its actual usage after. Runs inside the caller's write transaction, so
two reservations never both fit where only one does."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import case, delete, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from app import ids
from app.errors import BudgetExceeded
from app.services.policies import TenantPolicy
from app.storage import transactions
from app.storage.models import llm_calls_table as calls_t


@dataclass(frozen=True, slots=True)
class Usage:
    """What one call spent, as the gateway reported it (or estimated, when it did not)."""

    status: str  # done | failed
    model: str
    prompt_tokens: int
    completion_tokens: int


async def tokens_used(conn: AsyncConnection, start: datetime, end: datetime) -> int:
    """Tokens charged to calls made in [start, end): a reservation counts its estimate
    (a call whose worker died mid-call stays charged so)."""
    charged = case(
        (calls_t.c.status == "reserved", calls_t.c.estimated_tokens),
        else_=calls_t.c.prompt_tokens + calls_t.c.completion_tokens,
    )
    stmt = select(func.coalesce(func.sum(charged), 0)).where(
        calls_t.c.created_at >= start, calls_t.c.created_at < end
    )
    return int((await conn.execute(stmt)).scalar_one())


async def check(conn: AsyncConnection, policy: TenantPolicy, *, need: int, at: datetime) -> None:
    """BudgetExceeded when `need` more tokens at `at` would pass the UTC day's or month's."""
    day = at.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    month = day.replace(day=1)
    next_month = (month + timedelta(days=32)).replace(day=1)
    for limit, start, end, name in (
        (policy.budget_daily_tokens, day, day + timedelta(days=1), "daily"),
        (policy.budget_monthly_tokens, month, next_month, "monthly"),
    ):
        if limit is None:
            continue
        used = await tokens_used(conn, start, end)
        if used + need > limit:
            # Name the setting, so whoever reads the problem line knows what to raise.
            setting = f"jet-memory tenants configure {policy.tenant_id} --budget-{name}-tokens"
            raise BudgetExceeded(
                [],
                f"needs ~{need:,} tokens, {name} budget {limit:,} ({setting}) has "
                f"{max(limit - used, 0):,} left; the model was not called",
            )


async def reserve(
    conn: AsyncConnection,
    policy: TenantPolicy,
    *,
    estimates: Sequence[int],
    model: str,
    run_id: str | None,
    at: datetime,
) -> list[str]:
    """Check the budget for every estimate at once, then reserve one call per estimate."""
    # Two workers (or a worker and the CLI) may reserve for one tenant at once: the check
    # and the insert must not interleave, or both fit the same headroom.
    await transactions.serialize(conn, "budget")
    await check(conn, policy, need=sum(estimates), at=at)
    calls = ids.new_ids(ids.LLM_CALL, len(estimates))
    await conn.execute(
        insert(calls_t),
        [
            {
                "id": call,
                "run_id": run_id,
                "created_at": at,
                "model": model,
                "status": "reserved",
                "estimated_tokens": estimate,
                "prompt_tokens": 0,
                "completion_tokens": 0,
            }
            for call, estimate in zip(calls, estimates, strict=True)
        ],
    )
    return calls


async def settle(conn: AsyncConnection, calls: Sequence[str], usage: Sequence[Usage]) -> None:
    """Settle calls[i] with usage[i]; the calls after the last usage were never started,
    and only their reservations are released.

    So every call that was started needs a usage, even one stopped mid-flight (cancelled,
    or an error the caller did not expect): the gateway may have billed it, so the caller
    settles it `failed` at its estimate rather than let it be released here."""
    for call, used in zip(calls, usage, strict=False):
        await conn.execute(
            update(calls_t)
            .where(calls_t.c.id == call)
            .values(
                status=used.status,
                model=used.model,
                prompt_tokens=used.prompt_tokens,
                completion_tokens=used.completion_tokens,
            )
        )
    unmade = list(calls[len(usage) :])
    if unmade:
        await conn.execute(delete(calls_t).where(calls_t.c.id.in_(unmade)))
