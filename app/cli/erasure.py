"""The operator's data-rights commands: `jet-memory tenants remove`, `erase`, `erasures`.

They call the same services as the API; an operator's erasure has no event cap and its
receipt names "operator" as who asked.
"""

import argparse
import asyncio
import sys
from typing import Any

from app.cli.running import Run
from app.config import Settings
from app.deps import Container
from app.errors import InvalidInput
from app.services import tenants as tenant_service
from app.services.data_rights import erasure
from app.services.records import Scope


def add_tenant_commands(tenants: Any, run: Run) -> None:
    """`tenants remove`, under the `tenants` subparsers."""
    tr = tenants.add_parser(
        "remove",
        help="delete a tenant, its keys and its database (file or schema); frees the name",
    )
    tr.add_argument("tenant", help="tenant id or name")
    tr.add_argument("--yes", action="store_true", help="do not ask to confirm (scripts)")
    tr.set_defaults(fn=lambda settings, args: run(settings, lambda c: _remove(c, settings, args)))


def add_commands(sub: Any, run: Run) -> None:
    """`erase` and `erasures`, under the top-level subparsers."""
    er = sub.add_parser(
        "erase",
        help="erase a subject (--scope, --scope-ref) or one event (--event) of a tenant",
        description="Everything of the subject goes in one transaction: events, entries, "
        "summaries folded from its events (their other events are released), entry versions. "
        "A receipt is kept (`jet-memory erasures`). See docs/erasure.md.",
    )
    er.add_argument("--tenant", required=True, help="tenant id or name")
    what = er.add_mutually_exclusive_group(required=True)
    what.add_argument("--scope", help="institutional, entity, project or team")
    what.add_argument("--event", help="one event id (evt_…)")
    er.add_argument("--scope-ref", help="the subject's scopeRef (absent for institutional)")
    er.add_argument(
        "--vacuum", action="store_true", help="then reclaim the space (PostgreSQL: VACUUM)"
    )
    er.set_defaults(fn=lambda settings, args: run(settings, lambda c: _erase(c, args)))
    el = sub.add_parser("erasures", help="list a tenant's erasure receipts, newest first")
    el.add_argument("--tenant", required=True, help="tenant id or name")
    el.set_defaults(fn=lambda settings, args: run(settings, lambda c: _erasures(c, args)))


async def _remove(c: Container, settings: Settings, args: argparse.Namespace) -> int:
    tenant = await tenant_service.resolve_tenant(c.control, args.tenant)
    if not args.yes:
        if not sys.stdin.isatty():
            print(
                "error: removing a tenant needs --yes when not run at a terminal", file=sys.stderr
            )
            return 2
        prompt = (
            f"This deletes tenant {tenant.id} ({tenant.name}), its keys and all of its "
            "memory. Type its name to confirm: "
        )
        typed = await asyncio.to_thread(input, prompt)
        if typed.strip() != tenant.name:
            print("not confirmed; nothing removed", file=sys.stderr)
            return 1
    settle = settings.auth_cache_seconds
    if settle > 0 and sys.stdout.isatty():
        print(f"keys disabled; waiting {settle:g}s for every process's key cache to expire")
    removal = await tenant_service.remove_tenant(c.control, c.tenants, tenant, settle_s=settle)
    print(
        f"tenant {removal.tenant_id} ({removal.name}) removed: {removal.storage} dropped, "
        f"{removal.keys} keys deleted; receipt {removal.id}"
    )
    return 0


async def _erase(c: Container, args: argparse.Namespace) -> int:
    tenant = await tenant_service.resolve_tenant(c.control, args.tenant)
    async with c.tenants.lease(tenant.id) as db:
        if args.event:
            receipt = await erasure.erase_event(db, args.event, by="operator")
        else:
            receipt = await erasure.erase_subject(
                db, _scope(args.scope), args.scope_ref, by="operator", max_events=None
            )
        if args.vacuum:
            await erasure.reclaim_space(db)
    print(
        f"erasure {receipt.id}: {receipt.events} events, {receipt.entries} entries, "
        f"{receipt.versions} versions erased; {receipt.released} events released"
    )
    return 0


def _scope(value: str) -> Scope:
    try:
        return Scope(value.lower())
    except ValueError:
        names = ", ".join(s.value for s in Scope)
        raise InvalidInput(["scope"], f"--scope must be one of {names}") from None


async def _erasures(c: Container, args: argparse.Namespace) -> int:
    tenant = await tenant_service.resolve_tenant(c.control, args.tenant)
    async with c.tenants.lease(tenant.id) as db:
        after = None
        while True:
            page = await erasure.list_erasures(db, first=100, after=after)
            for e in page.edges:
                r = e.node
                print(
                    "\t".join(
                        (
                            r.id,
                            f"{r.erased_at:%Y-%m-%dT%H:%M:%SZ}",
                            r.target,
                            r.scope.value,
                            r.scope_ref or "",
                            r.event_id or "",
                            str(r.events),
                            str(r.entries),
                            str(r.versions),
                            str(r.released),
                            r.requested_by,
                        )
                    )
                )
            if not page.has_next_page:
                return 0
            after = page.end_cursor
