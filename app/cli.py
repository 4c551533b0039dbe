"""The operator's CLI: `jet-memory serve | migrate | dev | tenants | keys | export-schema`.

Every command builds the same Container as the API and calls the same services.
Secrets (API keys) are printed once, when created, and never again.
"""

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from app.config import Settings
from app.deps import Container, build
from app.errors import JetError
from app.services import tenants as tenant_service

DEV_TENANT = "dev"


def _run(settings: Settings, fn: Callable[[Container], Awaitable[int]]) -> int:
    async def main() -> int:
        container = await build(settings)
        try:
            return await fn(container)
        finally:
            await container.aclose()

    try:
        return asyncio.run(main())
    except JetError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 1


def cmd_serve(settings: Settings, args: argparse.Namespace) -> int:
    import uvicorn

    host = args.host or settings.host
    port = args.port or settings.port
    # Children (uvicorn) read settings from the environment: pass the CLI's choices on.
    os.environ["JET_HOST"], os.environ["JET_PORT"] = host, str(port)
    uvicorn.run(
        "app.main:create_app",
        factory=True,
        host=host,
        port=port,
        log_level=settings.log_level,
        proxy_headers=False,
    )
    return 0


def cmd_migrate(settings: Settings, _: argparse.Namespace) -> int:
    async def go(c: Container) -> int:
        rows = await c.control.tenants()
        migrated = 0
        for t in rows:
            migrated += await c.tenants.migrate(t.id)
        print(f"control database at head; {len(rows)} tenant databases, {migrated} migrated")
        return 0

    return _run(settings, go)


def cmd_dev(settings: Settings, _: argparse.Namespace) -> int:
    """Make sure a dev tenant exists and print a key for it (used by `make serve`)."""
    key_file = settings.data_dir / ".dev-api-key"

    async def go(c: Container) -> int:
        tenant = await c.control.find_tenant(DEV_TENANT)
        secret = key_file.read_text().strip() if key_file.exists() else None
        if tenant is None:
            tenant, issued = await tenant_service.create_tenant(c.control, c.tenants, DEV_TENANT)
            secret = issued.secret
        elif secret is None or await c.auth.tenant_for(secret) != tenant.id:
            secret = (await tenant_service.create_key(c.control, tenant.id)).secret
        else:
            await c.tenants.create(tenant.id)  # migrates it if the code moved on
        # Local convenience only: the dev key sits in the data dir, readable by you alone.
        key_file.touch(mode=0o600)
        key_file.write_text(secret + "\n")
        url = f"http://{settings.host}:{settings.port}/graphql"
        print(f"dev tenant {tenant.id}; API key (also in {key_file}):\n{secret}")
        print(f'GraphiQL: {url}  (Headers tab: {{"Authorization": "Bearer <key>"}})')
        return 0

    return _run(settings, go)


def cmd_tenants_create(settings: Settings, args: argparse.Namespace) -> int:
    async def go(c: Container) -> int:
        tenant, issued = await tenant_service.create_tenant(c.control, c.tenants, args.name)
        print(f"tenant {tenant.id} ({tenant.name}) created; API key {issued.key.id}, shown once:")
        print(issued.secret)
        return 0

    return _run(settings, go)


def cmd_tenants_list(settings: Settings, _: argparse.Namespace) -> int:
    async def go(c: Container) -> int:
        for t in await c.control.tenants():
            keys = await c.control.keys(t.id)
            active = sum(k.revoked_at is None for k in keys)
            print(f"{t.id}\t{t.name}\t{t.status}\t{t.created_at:%Y-%m-%dT%H:%M:%SZ}\t{active} keys")
        return 0

    return _run(settings, go)


def cmd_keys_create(settings: Settings, args: argparse.Namespace) -> int:
    async def go(c: Container) -> int:
        tenant = await tenant_service.resolve_tenant(c.control, args.tenant)
        issued = await tenant_service.create_key(c.control, tenant.id)
        print(f"API key {issued.key.id} for tenant {tenant.id}, shown once:")
        print(issued.secret)
        return 0

    return _run(settings, go)


def cmd_keys_list(settings: Settings, args: argparse.Namespace) -> int:
    async def go(c: Container) -> int:
        tenant = await tenant_service.resolve_tenant(c.control, args.tenant)
        for k in await c.control.keys(tenant.id):
            state = f"revoked {k.revoked_at:%Y-%m-%dT%H:%M:%SZ}" if k.revoked_at else "active"
            print(f"{k.id}\t{k.prefix}…\t{k.created_at:%Y-%m-%dT%H:%M:%SZ}\t{state}")
        return 0

    return _run(settings, go)


def cmd_keys_revoke(settings: Settings, args: argparse.Namespace) -> int:
    async def go(c: Container) -> int:
        key = await tenant_service.revoke_key(c.control, args.key_id)
        print(f"API key {key.id} of tenant {key.tenant_id} revoked")
        return 0

    return _run(settings, go)


def cmd_export_schema(_: Settings, args: argparse.Namespace) -> int:
    from app.graphql.schema import schema

    sdl = schema.as_str() + "\n"
    if args.output:
        Path(args.output).write_text(sdl)
    else:
        sys.stdout.write(sdl)
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="jet-memory", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("serve", help="run the API (uvicorn)")
    s.add_argument("--host", help="bind address (default: JET_HOST or 127.0.0.1)")
    s.add_argument("--port", type=int, help="port (default: JET_PORT or 8000)")
    s.set_defaults(fn=cmd_serve)

    sub.add_parser("migrate", help="migrate the control and every tenant database").set_defaults(
        fn=cmd_migrate
    )
    sub.add_parser("dev", help="ensure a dev tenant and print its API key").set_defaults(fn=cmd_dev)

    t = sub.add_parser("tenants", help="manage tenants").add_subparsers(dest="sub", required=True)
    tc = t.add_parser("create", help="create a tenant and print its first API key")
    tc.add_argument("name")
    tc.set_defaults(fn=cmd_tenants_create)
    t.add_parser("list", help="list tenants").set_defaults(fn=cmd_tenants_list)

    k = sub.add_parser("keys", help="manage API keys").add_subparsers(dest="sub", required=True)
    kc = k.add_parser("create", help="issue a new API key for a tenant (id or name)")
    kc.add_argument("tenant")
    kc.set_defaults(fn=cmd_keys_create)
    kl = k.add_parser("list", help="list a tenant's keys (never the secrets)")
    kl.add_argument("tenant")
    kl.set_defaults(fn=cmd_keys_list)
    kr = k.add_parser("revoke", help="revoke an API key by its id (key_…)")
    kr.add_argument("key_id")
    kr.set_defaults(fn=cmd_keys_revoke)

    e = sub.add_parser("export-schema", help="print the GraphQL SDL (schema.graphql)")
    e.add_argument("-o", "--output", help="write to this file instead of stdout")
    e.set_defaults(fn=cmd_export_schema)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    settings = Settings()
    logging.basicConfig(
        level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    logging.getLogger("alembic").setLevel(logging.WARNING)  # one line per tenant is noise
    fn: Callable[[Settings, Any], int] = args.fn
    return fn(settings, args)


if __name__ == "__main__":
    raise SystemExit(main())
