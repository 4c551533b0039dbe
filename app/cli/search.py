"""The operator's search command: `jet-memory search TENANT`: whether the tenant's searches
are fused with meaning or keyword-only, how many entries are embedded, and embedding now."""

import argparse
from typing import Any

from app.cli.running import Run
from app.deps import Container
from app.services import tenants as tenant_service
from app.services.search import indexer


def add_commands(sub: Any, run: Run) -> None:
    s = sub.add_parser(
        "search",
        help="a tenant's search by meaning: status, keyword-only switch, embed now",
        description="Without options, prints the tenant's mode and how many entries are "
        "embedded by the current model (docs/search.md).",
    )
    s.add_argument("tenant", help="tenant id or name")
    mode = s.add_mutually_exclusive_group()
    mode.add_argument(
        "--keyword-only", action="store_true", help="every search by words only (no embedding)"
    )
    mode.add_argument("--fused", action="store_true", help="searches fused with meaning (default)")
    s.add_argument(
        "--embed", action="store_true", help="embed every entry that needs it now, then report"
    )
    s.set_defaults(fn=lambda settings, args: run(settings, lambda c: _search(c, args)))


async def _search(c: Container, args: argparse.Namespace) -> int:
    tenant = await tenant_service.resolve_tenant(c.control, args.tenant)
    embedder = None if c.embedders is None else await c.embedders.for_tenant(tenant.id)
    policy = None if c.embedders is None else await c.embedders.policy(tenant.id)
    async with c.tenants.lease(tenant.id) as db:
        if args.keyword_only or args.fused:
            await indexer.set_keyword_only(db, args.keyword_only)
        if args.embed and embedder is not None:
            await indexer.catch_up(db, embedder, batch=c.settings.embed_batch, owner="cli")
            await indexer.drop_other_models(db, embedder.model)
        keyword_only = await indexer.keyword_only(db)
        if embedder is None:
            why = "JET_EMBEDDER" if policy is None else f"the tenant's embedder: {policy.embedder}"
            print(f"{tenant.id} ({tenant.name}): keyword-only (no embedder: {why})")
            return 0
        done, total = await indexer.counts(db, embedder.model)
    mode = "keyword-only" if keyword_only else "fused with meaning"
    where = "the worker" if getattr(embedder, "remote", False) else "the API processes"
    print(
        f"{tenant.id} ({tenant.name}): {mode}; {done}/{total} entries embedded by {embedder.model}"
        f" (embedded by {where}; set with `jet-memory tenants configure --embedder`)"
    )
    return 0
