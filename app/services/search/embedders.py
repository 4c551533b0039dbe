"""Which embedder each tenant uses, from its policy (tenant_policies.embedder): the local
model, its own gateway's embeddings model, or none; and embedding through the tenant's
gateway on the compactor's terms: every text passes the tenant's DLP before any byte leaves
(a blocked text is sent as nothing), and the call is charged to the tenant's token budget
(reserved first: over budget, nothing is sent). A policy is read again after `ttl`
seconds, so a change reaches every process within it."""

import time
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager

from app.adapters import dlp
from app.adapters.embedders import Embedder, Vectors
from app.adapters.gateway import Client, EmbeddingsConfig, GatewayEmbedder
from app.services import budget, policies
from app.services.policies import TenantPolicy
from app.storage.control import ControlDb
from app.storage.tenants import TenantDatabases, TenantDb
from app.storage.transactions import write_transaction
from app.storage.types import utcnow
from app.tokens import estimate_tokens


class PolicyEmbedder:
    """An Embedder for one tenant: DLP, budget, then its gateway's /embeddings."""

    remote = True  # a network call: never made while holding a database connection

    def __init__(
        self,
        policy: TenantPolicy,
        gateway: GatewayEmbedder,
        lease: Callable[[], AbstractAsyncContextManager[TenantDb]],
    ) -> None:
        self.policy = policy
        self.gateway = gateway
        self.model = gateway.model
        self._lease = lease  # the tenant's database, where its budget is kept

    def redacted(self, texts: Sequence[str]) -> list[str]:
        """What may leave: each text after the tenant's DLP (blocked: an empty text)."""
        out = []
        for text in texts:
            found = dlp.scan(
                text, mode=self.policy.dlp_mode, custom_patterns=self.policy.dlp_patterns
            )
            out.append("" if found.blocked else found.text)
        return out

    async def embed(self, texts: Sequence[str]) -> Vectors:
        sent = self.redacted(texts)
        estimate = sum(estimate_tokens(t) for t in sent)
        async with self._lease() as db:
            async with write_transaction(db.engine) as conn:
                calls = await budget.reserve(
                    conn,
                    self.policy,
                    estimates=[estimate],
                    model=self.model,
                    run_id=None,
                    at=utcnow(),
                )
            try:
                vectors = await self.gateway.embed(sent)
            except BaseException:  # a started call may be billed: charged at its estimate
                async with write_transaction(db.engine) as conn:
                    await budget.settle(
                        conn, calls, [budget.Usage("failed", self.model, estimate, 0)]
                    )
                raise
            used = self.gateway.usage if self.gateway.usage is not None else estimate
            async with write_transaction(db.engine) as conn:
                await budget.settle(conn, calls, [budget.Usage("done", self.model, used, 0)])
        return vectors


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
            policy.gateway_url,
            policy.gateway_key,
            policy.embeddings_model,
            policy.gateway_timeout_s,
        )
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
