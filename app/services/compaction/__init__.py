"""The compactor: folds old raw events into summary entries, a bucket in one transaction.
Modules: jobs (what the worker, CLI and API call), run (one tenant's pass), planning,
folding (one bucket), runs (the run records). A Summariser speaks HTTP, never this."""

from app.adapters.summarisers.base import Summariser, SummaryFailed, SummaryResult
from app.services.compaction.jobs import Stores, active_tenant_ids, compact_tenant
from app.services.compaction.run import run_compaction
from app.services.compaction.runs import CANCELLED, INTERRUPTED, get_run, list_runs
from app.services.records import CompactionRunRecord, RunStatus, RunTrigger

__all__ = [
    "Stores",
    "CANCELLED",
    "INTERRUPTED",
    "CompactionRunRecord",
    "RunStatus",
    "RunTrigger",
    "Summariser",
    "SummaryFailed",
    "SummaryResult",
    "active_tenant_ids",
    "compact_tenant",
    "get_run",
    "list_runs",
    "run_compaction",
]
