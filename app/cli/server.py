"""Commands that run or prepare the service: `serve`, `worker`, `worker-check`, `up`,
`migrate`, `dev`, `mcp`, `export-schema`."""

import argparse
import asyncio
import errno
import os
import socket
import sys
from pathlib import Path
from typing import Any

from app.cli.running import run
from app.config import Settings
from app.deps import Container
from app.services import tenants as tenant_service
from app.storage.control import ControlDb

DEV_TENANT = "dev"


def cmd_serve(settings: Settings, args: argparse.Namespace) -> int:
    from app.processes import serve

    host, port = args.host or settings.host, args.port or settings.port
    if (problem := cannot_listen(host, port)) is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 1
    if settings.database_url is not None:
        # PostgreSQL: check the database (a Citus cluster's settings) before any API process
        # starts, so a missing setting stops `serve` with its message (app/cli/__init__.py).
        asyncio.run(_check_database(settings))
    workers = serve.worker_count(settings.workers if args.workers is None else args.workers)
    return serve.run(settings, host=host, port=port, workers=workers)


def cannot_listen(host: str, port: int) -> str | None:
    """Why the API could not listen on host:port, naming the setting that changes it; None
    when it can. Checked before starting: uvicorn reports a busy port as a bare errno."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # As uvicorn binds (SO_REUSEADDR): a port left in TIME_WAIT is free, a listening one not.
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return (
                    f"port {port} on {host} is in use: stop what holds it, or set JET_PORT "
                    "(or --port) to another port"
                )
            return (
                f"cannot listen on {host}:{port} ({exc.strerror}): set JET_HOST and JET_PORT "
                "(or --host and --port)"
            )
    return None


async def _check_database(settings: Settings) -> None:
    control = ControlDb(settings)
    try:
        await control.migrate()
    finally:
        await control.aclose()


def cmd_worker(settings: Settings, _: argparse.Namespace) -> int:
    from arq import run_worker

    from app.worker import WorkerSettings, redis_settings_for

    if settings.database_url is not None:
        # As for `serve`: a cluster missing a setting stops the worker with its message,
        # before arq starts and its startup hook fails with a traceback.
        asyncio.run(_check_database(settings))
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
    from app.processes import up

    host, port = args.host or settings.host, args.port or settings.port
    # Before Redis and the worker start, so a busy port stops nothing half-started.
    if (problem := cannot_listen(host, port)) is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 1
    workers = settings.workers if args.workers is None else args.workers
    return up.run(settings, host=host, port=port, workers=workers)


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

    return run(settings, go, create=True)


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

    return run(settings, go, create=True)


def cmd_mcp(_: Settings, __: argparse.Namespace) -> int:
    """The MCP tools over stdio, forwarded to JET_URL's /mcp with JET_API_KEY."""
    from app.edge.mcp import proxy

    return proxy.main(os.environ)


def cmd_export_schema(_: Settings, args: argparse.Namespace) -> int:
    from app.graphql.schema import schema

    sdl = schema.as_str() + "\n"
    if args.output:
        Path(args.output).write_text(sdl)
    else:
        sys.stdout.write(sdl)
    return 0


def add_parsers(sub: Any) -> None:
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

    sub.add_parser(
        "migrate", help="create or migrate the control database, then every tenant database"
    ).set_defaults(fn=cmd_migrate)
    sub.add_parser("dev", help="ensure a dev tenant and print its API key").set_defaults(fn=cmd_dev)


def add_late_parsers(sub: Any) -> None:
    """The commands listed after the data commands in --help."""
    sub.add_parser(
        "mcp", help="serve the MCP tools over stdio, forwarding to JET_URL with JET_API_KEY"
    ).set_defaults(fn=cmd_mcp)
    e = sub.add_parser("export-schema", help="print the GraphQL SDL (schema.graphql)")
    e.add_argument("-o", "--output", help="write to this file instead of stdout")
    e.set_defaults(fn=cmd_export_schema)
