"""`jet-memory export` and `jet-memory import`: a tenant (or one scope) to and from a file
of JSON lines (docs/export.md), through app/services/portability*.py."""

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from app.cli.running import Run
from app.config import Settings
from app.deps import Container
from app.errors import InvalidInput
from app.services import tenants as tenant_service
from app.services.data_rights import importer, portability
from app.services.records import Scope


class Progress:
    """A one-line counter on stderr while it is a terminal, nothing in a pipe or a log.
    Hand-written: a dozen lines, where a progress library would be a new dependency."""

    def __init__(self, label: str, stream: Any = None) -> None:
        self._stream = stream or sys.stderr
        self._label = label
        self._on = self._stream.isatty()
        self._shown = 0.0

    def __call__(self, done: int, total: int | None = None) -> None:
        now = time.monotonic()
        if not self._on or (now - self._shown < 0.2 and done != total):
            return
        self._shown = now
        of = f"/{total:,} ({100 * done // max(total, 1)}%)" if total is not None else ""
        self._stream.write(f"\r{self._label} {done:,}{of} records")
        self._stream.flush()

    def close(self) -> None:
        if self._on and self._shown:
            self._stream.write("\n")


def _scope(args: argparse.Namespace) -> tuple[Scope | None, str | None]:
    if args.scope is None:
        if args.scope_ref is not None:
            raise InvalidInput(["scopeRef"], "--scope-ref needs --scope")
        return None, None
    try:
        return Scope(args.scope.lower()), args.scope_ref
    except ValueError:
        allowed = ", ".join(s.value for s in Scope)
        raise InvalidInput(["scope"], f"--scope must be one of {allowed}") from None


def _counts(trailer: bytes) -> str:
    counts: dict[str, int] = orjson.loads(trailer)["counts"]
    return ", ".join(f"{n} {kind}" for kind, n in counts.items())


def cmd_export(settings: Settings, args: argparse.Namespace, run: Run) -> int:
    async def go(c: Container) -> int:
        tenant = await tenant_service.resolve_tenant(c.control, args.tenant)
        scope, scope_ref = _scope(args)
        portability.check_export_scope(scope, scope_ref)
        target = Path(args.output) if args.output else None
        # A file is written beside its name and renamed once complete: never half a file.
        partial = target.with_name(target.name + ".partial") if target else None
        out: BinaryIO = partial.open("wb") if partial else sys.stdout.buffer
        progress = Progress("exported")
        last = b""
        try:
            async with c.tenants.lease(tenant.id) as db:
                lines = portability.export_lines(
                    db, scope=scope, scope_ref=scope_ref, progress=progress
                )
                async for chunk in lines:
                    out.write(chunk)
                    last = chunk
            out.flush()
            if partial and target:
                os.fsync(out.fileno())
                out.close()
                partial.replace(target)
        except BaseException:
            if partial:
                out.close()
                partial.unlink(missing_ok=True)
            raise
        finally:
            progress.close()
        where = f"to {target}" if target else "to stdout"
        report = sys.stdout if target else sys.stderr
        print(f"{tenant.id} ({tenant.name}): exported {_counts(last)} {where}", file=report)
        return 0

    return run(settings, go)


def cmd_import(settings: Settings, args: argparse.Namespace, run: Run) -> int:
    path = Path(args.file)
    if not path.is_file():
        print(f"error: no such file: {path}", file=sys.stderr)
        return 1

    async def go(c: Container, f: BinaryIO) -> int:
        tenant = await tenant_service.resolve_tenant(c.control, args.tenant)
        progress = Progress("imported")
        try:
            async with c.tenants.lease(tenant.id) as db:
                result = await importer.import_file(db, f, progress=progress)
        finally:
            progress.close()
        stored = ", ".join(f"{n} {k}" for k, n in result.stored.items())
        present = sum(result.present.values())
        print(
            f"{tenant.id} ({tenant.name}): imported {result.records} records from {path}: "
            f"stored {stored or 'nothing'}; {present} already present"
        )
        return 0

    # The import reads the file on the CLI's own event loop: it serves nothing else.
    with path.open("rb") as f:
        return run(settings, lambda c: go(c, f))


def add_parsers(sub: Any, run: Run) -> None:
    """The export and import subcommands, on the CLI's subparsers."""
    ex = sub.add_parser(
        "export",
        help="write a tenant (or one scope) as JSON lines (docs/export.md)",
        description="Streams the tenant's events, entries, provenance, compaction runs and "
        "LLM calls from one consistent snapshot; memory use does not grow with the tenant.",
    )
    ex.add_argument("tenant", help="tenant id or name")
    ex.add_argument("--scope", help="only this scope (institutional, entity, project, team)")
    ex.add_argument("--scope-ref", help="the scopeRef of --scope (not for institutional)")
    ex.add_argument("-o", "--output", help="write to this file instead of stdout")
    ex.set_defaults(fn=lambda settings, args: cmd_export(settings, args, run))
    im = sub.add_parser(
        "import",
        help="read an export file into a tenant, idempotently (docs/export.md)",
        description="Checks every line, the counts and the checksum first, then stores the "
        "records in batches; a record already stored the same is skipped, so running it "
        "again after an interruption completes it.",
    )
    im.add_argument("tenant", help="tenant id or name")
    im.add_argument("file", help="an export file (read twice: a file, not a pipe)")
    im.set_defaults(fn=lambda settings, args: cmd_import(settings, args, run))
