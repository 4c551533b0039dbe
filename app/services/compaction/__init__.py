"""The compactor: folds old raw events into summary entries; a bucket folds in one transaction.

runs (the run records), planning (buckets and periods), folding (one bucket's summaries
and write), run (one tenant's pass), jobs (what the worker, CLI and API call).
It never speaks HTTP: a Summariser does.
"""

from app.adapters.summary import Summariser, SummaryFailed, SummaryResult
from app.services.compaction.jobs import active_tenant_ids, compact_tenant
from app.services.compaction.run import run_compaction
from app.services.compaction.runs import (
    CANCELLED,
    INTERRUPTED,
    CompactionRunRecord,
    RunStatus,
    RunTrigger,
    get_run,
    list_runs,
)

__all__ = [
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
