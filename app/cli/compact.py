"""`jet-memory compact [--tenant T] [--dry-run]`: a compaction run now, as the daily cron
runs it, one line per tenant and its problems."""

import argparse
import logging
from typing import Any

from app.cli.running import run
from app.config import Settings
from app.deps import Container
from app.services import compaction
from app.services import tenants as tenant_service
from app.services.compaction import CompactionRunRecord, RunStatus, RunTrigger
from app.storage.control import TenantRow

log = logging.getLogger(__name__)


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

    return run(settings, go)


def add_parsers(sub: Any) -> None:
    cp = sub.add_parser("compact", help="run compaction now (every active tenant by default)")
    cp.add_argument("--tenant", help="only this tenant (id or name)")
    cp.add_argument(
        "--dry-run", action="store_true", help="report what would be folded; send and write nothing"
    )
    cp.set_defaults(fn=cmd_compact)
