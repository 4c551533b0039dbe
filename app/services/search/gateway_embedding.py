"""Embedding through the tenant's own gateway, on the compactor's terms: every text passes
the tenant's DLP before any byte leaves (a blocked text is sent as nothing), and the call
is charged to the tenant's token budget (reserved first: over budget, nothing is sent)."""

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager

from app.adapters import dlp
from app.adapters.embedders import Vectors
from app.adapters.gateway import GatewayEmbedder
from app.services import budget
from app.services.policies import TenantPolicy
from app.storage.tenants import TenantDb
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
                    conn, self.policy, estimates=[estimate], model=self.model, run_id=None,
                    at=utcnow(),
                )  # fmt: skip
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
