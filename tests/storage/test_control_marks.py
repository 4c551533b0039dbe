"""The control database's webhook marks (tenants.webhooks_since), on the backend under test:
set once, never moved, and listed for active tenants only."""

from app.deps import Container
from tests.conftest import make_tenant


async def test_a_mark_is_set_once_and_only_active_tenants_are_listed(container: Container) -> None:
    control = container.control
    a, b, c = [await make_tenant(container, name) for name in ("a", "b", "c")]
    assert await control.webhook_tenant_ids() == []
    await control.mark_webhooks(a.id)
    first = (await control.find_tenant(a.id)).webhooks_since  # type: ignore[union-attr]
    assert first is not None
    await control.mark_webhooks(a.id)
    assert (await control.find_tenant(a.id)).webhooks_since == first  # type: ignore[union-attr]
    await control.mark_webhooks(b.id)
    await control.disable_tenant(b.id)
    assert await control.webhook_tenant_ids() == [a.id]
    assert (await control.find_tenant(c.id)).webhooks_since is None  # type: ignore[union-attr]
