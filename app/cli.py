"""The operator's CLI: `jet-memory serve | up | worker | migrate | dev | tenants | keys | …`.

Every command builds the same Container as the API and calls the same services.
Secrets (API keys) are printed once, when created, and never again.
"""

import argparse
import asyncio
import getpass
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from app import cli_erasure, cli_portability, cli_search, logs, webhooks_cli
from app.config import Settings
from app.deps import Container, build
from app.errors import ExpectedError, InvalidInput
from app.services import compaction, policies
from app.services import tenants as tenant_service
from app.services.compaction import CompactionRunRecord, RunStatus, RunTrigger
from app.storage.control import TenantRow

DEV_TENANT = "dev"
GATEWAY_KEY_ENV = "JET_GATEWAY_KEY"
log = logging.getLogger(__name__)


def _run(settings: Settings, fn: Callable[[Container], Awaitable[int]]) -> int:
    async def main() -> int:
        container = await build(settings)
        try:
            return await fn(container)
        finally:
            await container.aclose()

    try:
        return asyncio.run(main())
    except ExpectedError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 1


def cmd_serve(settings: Settings, args: argparse.Namespace) -> int:
    from app import serve

    workers = serve.worker_count(settings.workers if args.workers is None else args.workers)
    return serve.run(
        settings, host=args.host or settings.host, port=args.port or settings.port, workers=workers
    )


def cmd_worker(settings: Settings, _: argparse.Namespace) -> int:
    from arq import run_worker

    from app.worker import WorkerSettings, redis_settings_for

    # The same as `arq app.worker.WorkerSettings`, with Redis from these Settings.
    run_worker(WorkerSettings, redis_settings=redis_settings_for(settings.redis_url))
    return 0


def cmd_worker_check(settings: Settings, _: argparse.Namespace) -> int:
    """Exit 0 if a worker on the Redis it would use has reported in the last minute."""
    from app.worker import check_worker, redis_in_use

    url, found = redis_in_use(settings)
    ok, line = asyncio.run(check_worker(url))
    print(f"{line}\nRedis from {found}", file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1


def cmd_up(settings: Settings, args: argparse.Namespace) -> int:
    from app import up

    workers = settings.workers if args.workers is None else args.workers
    return up.run(
        settings, host=args.host or settings.host, port=args.port or settings.port, workers=workers
    )


WORKERS_HELP = "API processes on the port (default: JET_WORKERS or 1; 0: one per CPU core)"
MAX_WORKERS = 256  # as Settings.workers


def _workers(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--workers must be a whole number, not {value!r}"
        ) from None
    if not 0 <= n <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(f"--workers must be between 0 and {MAX_WORKERS}")
    return n


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


def _print_policy(tenant: TenantRow, policy: policies.TenantPolicy) -> None:
    print(f"tenant {tenant.id} ({tenant.name}) policy:")
    for line in policy.describe():  # the gateway key only ever as set/unset
        print(f"  {line}")


def _budget(value: str | None) -> int | None:
    if value is None or value == "unlimited":
        return None
    try:
        return int(value)
    except ValueError:
        raise InvalidInput(
            ["budget"], f"a budget is a number of tokens or 'unlimited', not {value!r}"
        ) from None


def cmd_tenants_configure(settings: Settings, args: argparse.Namespace) -> int:
    async def go(c: Container) -> int:
        tenant = await tenant_service.resolve_tenant(c.control, args.tenant)
        current = await policies.get_policy(c.control, tenant.id)
        changes: dict[str, Any] = {}
        if args.clear_gateway:
            changes.update(gateway_url=None, gateway_key=None, models=[])
        if args.gateway_url is not None:
            changes["gateway_url"] = args.gateway_url
        if args.gateway_key_prompt:
            changes["gateway_key"] = getpass.getpass("gateway key (not echoed): ")
        elif os.environ.get(GATEWAY_KEY_ENV):
            changes["gateway_key"] = os.environ[GATEWAY_KEY_ENV]
        if args.model is not None or args.fallback_model is not None:
            first = args.model or (current.models[0] if current.models else None)
            if first is None:
                raise InvalidInput(["model"], "--fallback-model needs a --model to fall back from")
            fallbacks = current.models[1:] if args.fallback_model is None else args.fallback_model
            changes["models"] = [first, *fallbacks]
        if args.gateway_timeout is not None:
            changes["gateway_timeout_s"] = args.gateway_timeout
        if args.dlp is not None:
            changes["dlp_mode"] = args.dlp
        if args.clear_dlp_patterns:
            changes["dlp_patterns"] = []
        if args.dlp_pattern is not None:
            changes["dlp_patterns"] = args.dlp_pattern
        for name in ("budget_daily_tokens", "budget_monthly_tokens"):
            if getattr(args, name) is not None:
                changes[name] = _budget(getattr(args, name))
        policy = await policies.configure_tenant(c.control, tenant.id, **changes)
        _print_policy(tenant, policy)
        return 0

    return _run(settings, go)


def cmd_tenants_show(settings: Settings, args: argparse.Namespace) -> int:
    async def go(c: Container) -> int:
        tenant = await tenant_service.resolve_tenant(c.control, args.tenant)
        _print_policy(tenant, await policies.get_policy(c.control, tenant.id))
        return 0

    return _run(settings, go)


def _run_line(tenant: TenantRow, run: CompactionRunRecord) -> str:
    dry = " (dry run)" if run.dry_run else ""
    return (
        f"{tenant.id} ({tenant.name}): {run.status.value}{dry}; buckets "
        f"{run.buckets_compacted}/{run.buckets_considered} compacted, {run.buckets_skipped} "
        f"skipped; {run.periods} entries; {run.events_compressed} events; tokens "
        f"{run.prompt_tokens}+{run.completion_tokens}; summariser {run.summariser}; "
        f"{len(run.problems)} problems"
    )


def cmd_compact(settings: Settings, args: argparse.Namespace) -> int:
    async def go(c: Container) -> int:
        if args.tenant:
            tenants = [await tenant_service.resolve_tenant(c.control, args.tenant)]
        else:
            active = set(await compaction.active_tenant_ids(c.control))
            tenants = [t for t in await c.control.tenants() if t.id in active]
        failed = False
        for tenant in tenants:
            try:
                run = await compaction.compact_tenant(
                    c, tenant.id, trigger=RunTrigger.CLI, dry_run=args.dry_run
                )
            except Exception as exc:  # recorded on the run; the other tenants go on
                log.exception("compaction of tenant %s failed", tenant.id)
                print(f"{tenant.id} ({tenant.name}): failed; {type(exc).__name__}")
                failed = True
                continue
            print(_run_line(tenant, run))
            for problem in run.problems:
                print(f"  - {problem}")
            failed |= run.status is RunStatus.FAILED
        return 1 if failed else 0

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


def cmd_mcp(_: Settings, __: argparse.Namespace) -> int:
    """The MCP tools over stdio, forwarded to JET_URL's /mcp with JET_API_KEY."""
    from app.edge.mcp import proxy

    return proxy.main(os.environ)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="jet-memory", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("serve", help="run the API (uvicorn)")
    s.add_argument("--host", help="bind address (default: JET_HOST or 127.0.0.1)")
    s.add_argument("--port", type=int, help="port (default: JET_PORT or 8000)")
    s.add_argument("--workers", type=_workers, help=WORKERS_HELP)
    s.set_defaults(fn=cmd_serve)

    sub.add_parser("worker", help="run the arq worker (compaction cron and jobs)").set_defaults(
        fn=cmd_worker
    )
    sub.add_parser(
        "worker-check",
        help="exit 0 if a worker has reported to its Redis in the last minute (health check)",
    ).set_defaults(fn=cmd_worker_check)
    u = sub.add_parser(
        "up", help="run Redis (embedded unless JET_REDIS_URL is set), a worker and the API"
    )
    u.add_argument("--host", help="API bind address (default: JET_HOST or 127.0.0.1)")
    u.add_argument("--port", type=int, help="API port (default: JET_PORT or 8000)")
    u.add_argument("--workers", type=_workers, help=WORKERS_HELP)
    u.set_defaults(fn=cmd_up)

    sub.add_parser("migrate", help="migrate the control and every tenant database").set_defaults(
        fn=cmd_migrate
    )
    sub.add_parser("dev", help="ensure a dev tenant and print its API key").set_defaults(fn=cmd_dev)

    t = sub.add_parser("tenants", help="manage tenants").add_subparsers(dest="sub", required=True)
    tc = t.add_parser("create", help="create a tenant and print its first API key")
    tc.add_argument("name")
    tc.set_defaults(fn=cmd_tenants_create)
    t.add_parser("list", help="list tenants").set_defaults(fn=cmd_tenants_list)
    tf = t.add_parser(
        "configure",
        help="set a tenant's gateway, model routing, DLP and token budgets",
        description=f"Only the settings given change. The gateway key is read from "
        f"${GATEWAY_KEY_ENV} or, with --gateway-key-prompt, typed in; it is stored in the "
        "control database (a file only its owner may read, mode 0600) and never printed.",
    )
    tf.add_argument("tenant", help="tenant id or name")
    tf.add_argument("--gateway-url", help="OpenAI-compatible base URL, e.g. https://gw/v1")
    tf.add_argument(
        "--gateway-key-prompt", action="store_true", help="type the gateway key (not echoed)"
    )
    tf.add_argument("--clear-gateway", action="store_true", help="back to the built-in summariser")
    tf.add_argument("--model", help="the model asked first")
    tf.add_argument(
        "--fallback-model",
        action="append",
        metavar="MODEL",
        help="a model to fall back to, in order (repeat; replaces the fallbacks)",
    )
    tf.add_argument(
        "--gateway-timeout",
        type=float,
        metavar="SECONDS",
        help="the most one gateway attempt may take, first byte to last",
    )
    tf.add_argument("--dlp", choices=["redact", "block", "off"], help="what DLP does on a finding")
    tf.add_argument(
        "--dlp-pattern",
        action="append",
        metavar="REGEX",
        help="a custom DLP pattern (repeat; replaces the custom patterns)",
    )
    tf.add_argument("--clear-dlp-patterns", action="store_true", help="no custom DLP patterns")
    for period in ("daily", "monthly"):
        tf.add_argument(
            f"--budget-{period}-tokens", metavar="N", help="a number of tokens, or 'unlimited'"
        )
    tf.set_defaults(fn=cmd_tenants_configure)
    ts = t.add_parser("show", help="show a tenant's policy (the gateway key as set/unset)")
    ts.add_argument("tenant", help="tenant id or name")
    ts.set_defaults(fn=cmd_tenants_show)
    cli_erasure.add_tenant_commands(t, _run)

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

    cp = sub.add_parser("compact", help="run compaction now (every active tenant by default)")
    cp.add_argument("--tenant", help="only this tenant (id or name)")
    cp.add_argument(
        "--dry-run", action="store_true", help="report what would be folded; send and write nothing"
    )
    cp.set_defaults(fn=cmd_compact)
    cli_portability.add_parsers(sub, _run)

    cli_erasure.add_commands(sub, _run)

    sub.add_parser(
        "mcp", help="serve the MCP tools over stdio, forwarding to JET_URL with JET_API_KEY"
    ).set_defaults(fn=cmd_mcp)
    webhooks_cli.add_commands(sub, _run)
    cli_search.add_commands(sub, _run)
    e = sub.add_parser("export-schema", help="print the GraphQL SDL (schema.graphql)")
    e.add_argument("-o", "--output", help="write to this file instead of stdout")
    e.set_defaults(fn=cmd_export_schema)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    settings = Settings()
    logs.configure(settings.log_level, settings.log_format)
    fn: Callable[[Settings, Any], int] = args.fn
    return fn(settings, args)


if __name__ == "__main__":
    raise SystemExit(main())
