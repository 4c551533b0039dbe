"""`jet-memory webhooks add | list | update | remove | deliveries | replay`: a tenant's webhook
endpoints from the operator's shell, through the same services as GraphQL and REST.
The signing secret is printed once, by `add`."""

import argparse
from collections.abc import Awaitable, Callable

from app.cli.running import Run
from app.config import Settings
from app.deps import Container
from app.services import tenants
from app.services.changes import webhooks
from app.services.changes.webhooks import Endpoint, EndpointIn, EndpointPatch
from app.services.records import Scope
from app.storage.tenants import TenantDb


def _line(e: Endpoint) -> str:
    state = "enabled" if e.enabled else f"disabled ({e.disabled_reason})"
    where = f"{e.scope.value}/{e.scope_ref or ''}" if e.scope is not None else "all scopes"
    types = ",".join(t.value for t in e.types) or "all types"
    return f"{e.id}\t{e.url}\t{types}\t{where}\t{state}"


def _with_db(
    run: Run, settings: Settings, tenant: str, fn: Callable[[Container, TenantDb], Awaitable[int]]
) -> int:
    async def go(c: Container) -> int:
        row = await tenants.resolve_tenant(c.control, tenant)
        async with c.tenants.lease(row.id) as db:
            return await fn(c, db)

    return run(settings, go)


def add_commands(sub: "argparse._SubParsersAction[argparse.ArgumentParser]", run: Run) -> None:
    w = sub.add_parser("webhooks", help="manage a tenant's webhook endpoints")
    ws = w.add_subparsers(dest="sub", required=True)

    def tenant_arg(p: argparse.ArgumentParser) -> None:
        p.add_argument("--tenant", required=True, help="tenant id or name")

    def add(settings: Settings, args: argparse.Namespace) -> int:
        new = EndpointIn(
            args.url,
            args.type or [],
            Scope(args.scope) if args.scope else None,
            args.scope_ref,
            args.description,
        )

        async def go(c: Container, db: TenantDb) -> int:
            created = await webhooks.create_endpoint(db, new, c.settings, control=c.control)
            print(f"webhook endpoint {created.endpoint.id}; signing secret, shown once:")
            print(created.secret)
            return 0

        return _with_db(run, settings, args.tenant, go)

    a = ws.add_parser("add", help="register an endpoint; prints its signing secret once")
    tenant_arg(a)
    a.add_argument("url")
    a.add_argument("--type", action="append", help="a change type (repeatable; default: all)")
    a.add_argument("--scope", choices=[s.value for s in Scope])
    a.add_argument("--scope-ref")
    a.add_argument("--description")
    a.set_defaults(fn=add)

    def list_(settings: Settings, args: argparse.Namespace) -> int:
        async def go(_: Container, db: TenantDb) -> int:
            for e in await webhooks.list_endpoints(db):
                print(_line(e))
            return 0

        return _with_db(run, settings, args.tenant, go)

    ls = ws.add_parser("list", help="list endpoints (never their secrets)")
    tenant_arg(ls)
    ls.set_defaults(fn=list_)

    def update(settings: Settings, args: argparse.Namespace) -> int:
        patch = EndpointPatch(url=args.url, types=args.type, enabled=args.enabled)

        async def go(c: Container, db: TenantDb) -> int:
            print(_line(await webhooks.update_endpoint(db, args.endpoint, patch, c.settings)))
            return 0

        return _with_db(run, settings, args.tenant, go)

    u = ws.add_parser("update", help="change an endpoint; --enable resumes a disabled one")
    tenant_arg(u)
    u.add_argument("endpoint", help="whk_…")
    u.add_argument("--url")
    u.add_argument("--type", action="append")
    u.add_argument("--enable", dest="enabled", action="store_const", const=True)
    u.add_argument("--disable", dest="enabled", action="store_const", const=False)
    u.set_defaults(fn=update)

    def remove(settings: Settings, args: argparse.Namespace) -> int:
        async def go(_: Container, db: TenantDb) -> int:
            print(f"webhook endpoint {await webhooks.delete_endpoint(db, args.endpoint)} removed")
            return 0

        return _with_db(run, settings, args.tenant, go)

    r = ws.add_parser("remove", help="delete an endpoint and its delivery log")
    tenant_arg(r)
    r.add_argument("endpoint", help="whk_…")
    r.set_defaults(fn=remove)

    def deliveries(settings: Settings, args: argparse.Namespace) -> int:
        async def go(_: Container, db: TenantDb) -> int:
            page = await webhooks.list_deliveries(db, args.endpoint, first=args.limit, after=None)
            for edge in page.edges:
                d = edge.node
                state = "delivered" if d.delivered else f"pending, next {d.next_attempt_at}"
                print(
                    f"{d.id}\t{d.change['type']}\t{d.change['id']}\t{state}\t"
                    f"attempts {d.attempts}\tstatus {d.last_status}\t{d.latency_ms} ms"
                )
            return 0

        return _with_db(run, settings, args.tenant, go)

    d = ws.add_parser("deliveries", help="an endpoint's delivery log, newest first")
    tenant_arg(d)
    d.add_argument("endpoint", help="whk_…")
    d.add_argument("--limit", type=int, default=20)
    d.set_defaults(fn=deliveries)

    def replay(settings: Settings, args: argparse.Namespace) -> int:
        async def go(_: Container, db: TenantDb) -> int:
            delivery = await webhooks.replay_delivery(db, args.endpoint, args.delivery)
            print(f"delivery {delivery.id} queued again")
            return 0

        return _with_db(run, settings, args.tenant, go)

    rp = ws.add_parser("replay", help="send a delivery again (same webhook-id)")
    tenant_arg(rp)
    rp.add_argument("endpoint", help="whk_…")
    rp.add_argument("delivery", help="msg_…")
    rp.set_defaults(fn=replay)
