"""The background indexer's passes: the tenants open in the process on every pass, the
others a few at a time and in turn, opened apart so a pass never evicts or reorders the
tenants requests are using."""

from typing import Any

from app.config import Settings
from app.deps import Container, build
from app.services import entries
from app.services.records import EntryIn, Scope
from app.services.search import indexer
from tests.conftest import make_tenant


class Counting:
    """The local model under its own name, counting the texts it embeds."""

    model = "sweep-model"

    def __init__(self, inner: Any) -> None:
        self.inner, self.texts = inner, 0

    async def embed(self, texts: Any) -> Any:
        self.texts += len(texts)
        return await self.inner.embed(texts)


async def _embedded(container: Container, tenant_ids: list[str]) -> list[bool]:
    out = []
    for tenant_id in tenant_ids:
        async with container.tenants.lease(tenant_id) as db:
            done, total = await indexer.counts(db, Counting.model)
            out.append(done == total == 1)
    return out


async def test_a_pass_looks_at_open_tenants_and_a_few_closed_ones_in_turn(
    container: Container, settings: Settings
) -> None:
    ids = []
    for i in range(5):
        tenant = await make_tenant(container, f"sweep-{i}")
        async with container.tenants.lease(tenant.id) as db:
            await entries.create_entry(db, EntryIn(Scope.ENTITY, "acme", f"Note {i}", "pacing"))
        ids.append(tenant.id)
    ids.sort()
    # Another process on the same data: nothing open in it yet.
    other = await build(settings.model_copy(update={"embed_sweep_tenants": 2}))
    try:
        assert other.semantic is not None and other.embedders is not None
        local = await other.semantic.embedder_for(ids[0])
        counting = Counting(local)
        other.embedders.local = counting
        passes = other.indexer()
        assert passes is not None
        async with other.tenants.lease(ids[4]):
            pass  # a tenant a request used: open in this process
        assert other.tenants.open_ids() == [ids[4]]

        await passes.tick()  # the open one, and the first two closed ones
        assert await _embedded(container, ids) == [True, True, False, False, True]
        assert other.tenants.open_ids() == [ids[4]]  # the closed ones were opened apart

        await passes.tick()  # the next two closed ones
        assert await _embedded(container, ids) == [True] * 5
        embedded = counting.texts
        assert embedded == 5
        await passes.tick()  # round again: caught up, nothing embedded twice
        assert counting.texts == embedded
        assert other.tenants.open_ids() == [ids[4]]
    finally:
        await other.aclose()
