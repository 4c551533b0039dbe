"""Which embedder each tenant uses, from its policy (tenant_policies.embedder): the local
model, its own gateway's embeddings model behind its DLP and budget, or none. A policy is
read again after `ttl` seconds, so a change reaches every process within that time."""

import time
from collections.abc import Sequence

from app.adapters.embedders import Embedder
from app.adapters.gateway import Client, EmbeddingsConfig, GatewayEmbedder
from app.services import policies
from app.services.search.gateway_embedding import PolicyEmbedder
from app.storage.control import ControlDb
from app.storage.tenants import TenantDatabases

POLICY_TTL_SECONDS = 5.0


class TenantEmbedders:
    """Resolves a tenant's embedder; `kinds` limits which ones this process runs for it (the
    API indexes local-model tenants, the worker gateway tenants; both search with either)."""

    def __init__(
        self,
        control: ControlDb,
        tenants: TenantDatabases,
        local: Embedder | None,
        *,
        ttl: float = POLICY_TTL_SECONDS,
    ) -> None:
        self._control = control
        self._tenants = tenants
        self.local = local
        self._ttl = ttl
        self._policies: dict[str, tuple[float, policies.TenantPolicy]] = {}
        self._http: Client | None = None  # made at the first gateway tenant

    async def policy(self, tenant_id: str) -> policies.TenantPolicy:
        held = self._policies.get(tenant_id)
        now = time.monotonic()
        if held is not None and now - held[0] < self._ttl:
            return held[1]
        policy = await policies.get_policy(self._control, tenant_id)
        self._policies[tenant_id] = (now, policy)
        return policy

    async def for_tenant(
        self, tenant_id: str, kinds: Sequence[str] = ("local", "gateway")
    ) -> Embedder | None:
        """The tenant's embedder, or None (none configured, or not one of `kinds`)."""
        policy = await self.policy(tenant_id)
        if policy.embedder not in kinds:
            return None
        if policy.embedder == "local":
            return self.local
        if policy.embedder != "gateway" or not policy.gateway_url or not policy.embeddings_model:
            return None
        if self._http is None:
            self._http = Client()
        config = EmbeddingsConfig(
            policy.gateway_url, policy.gateway_key, policy.embeddings_model,
            policy.gateway_timeout_s,
        )  # fmt: skip
        # One per call: the gateway client keeps the usage of its last call for the budget.
        gateway = GatewayEmbedder(config, client=self._http)
        return PolicyEmbedder(policy, gateway, lambda: self._tenants.lease(tenant_id))

    async def for_api(self, tenant_id: str) -> Embedder | None:
        """What an API process's indexer embeds a tenant with: local-model tenants only."""
        return await self.for_tenant(tenant_id, ("local",))

    async def for_worker(self, tenant_id: str) -> Embedder | None:
        """What the worker's indexer embeds a tenant with: gateway tenants only."""
        return await self.for_tenant(tenant_id, ("gateway",))

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
