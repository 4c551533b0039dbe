"""The one composition root: builds the long-lived objects from Settings, and closes them.

The API (lifespan), the worker and the CLI each build one `Container`; tests build theirs
on a temp dir. Nothing is created at import time.
"""

import functools
from dataclasses import dataclass, field

from app.adapters import embedders
from app.config import Settings
from app.services.changes.subscribers import ChangeFeeds
from app.services.ratelimit import RateLimiter
from app.services.search import fusion, page_cache, vector_matrix
from app.services.search.embedders import TenantEmbedders
from app.services.search.indexer import Indexer
from app.services.tenants import Authenticator
from app.storage import migrate
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
    # Live memoryChanged subscriptions of this process (app/services/changes/subscribers.py).
    feeds: ChangeFeeds | None = None
    # Search by meaning (app/services/search/fusion.py); None: keywords only (JET_EMBEDDER=none).
    semantic: fusion.Semantic | None = None
    # Each tenant's embedder, from its policy (local model, its gateway, none).
    embedders: TenantEmbedders | None = None

    def indexer(self, *, worker: bool = False) -> Indexer | None:
        """The background indexer over this container's tenants: the API's embeds the
        local-model tenants, the worker's (`worker`) the tenants embedding by their gateway."""
        if self.embedders is None:
            return None
        return Indexer(
            self.control,
            self.tenants,
            self.embedders.for_worker if worker else self.embedders.for_api,
            batch=self.settings.embed_batch,
            interval=self.settings.embed_interval_seconds,
            sweep=self.settings.embed_sweep_tenants,
        )

    async def aclose(self) -> None:
        if self.embedders is not None:
            await self.embedders.aclose()
        if self.feeds is not None:
            await self.feeds.aclose()
        await self.tenants.aclose()
        await self.control.aclose()


async def build(
    settings: Settings, *, new_databases: migrate.NewDatabases | None = None
) -> Container:
    """Open the control database (migrated to head) and the tenant registry;
    `new_databases`: how new databases are made before they are migrated (the tests copy
    templates at head, tests/support/db_templates.py)."""
    control = ControlDb(settings, new_databases=new_databases)
    try:
        await control.migrate()
    except BaseException:
        await control.aclose()  # a refused start (citus.CitusNotReady) leaves no pool open
        raise
    shared: dict[str, object] = {}
    if settings.search_cache_pages:
        shared[page_cache.KEY] = page_cache.SearchCache(
            settings.search_cache_pages, max_bytes=settings.search_cache_mib << 20
        )
    tenants = TenantDatabases(settings, shared=shared, new_databases=new_databases)
    embedders = None
    if settings.embedder != "none":
        embedders = TenantEmbedders(control, tenants, _local_embedder())
    semantic = None if embedders is None else _semantic(settings, embedders)
    if semantic is not None:
        shared[fusion.KEY] = semantic
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
        semantic=semantic,
        embedders=embedders,
    )


@functools.cache
def _local_embedder() -> embedders.LocalEmbedder | None:
    # Loaded once per process, at the first container that asks: the model is read-only.
    return embedders.load_local()


def _semantic(settings: Settings, embedders: TenantEmbedders) -> fusion.Semantic:
    return fusion.Semantic(
        embedder_for=embedders.for_tenant,
        weight=settings.fusion_dense_weight,
        depth=settings.fusion_depth,
        matrices=vector_matrix.Matrices(max_vectors=settings.fusion_max_vectors),
        min_similarity=settings.fusion_min_similarity,
    )
