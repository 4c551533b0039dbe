"""Prometheus metrics of this process (prometheus-client's default registry).

The API serves them at /metrics, the worker on JET_WORKER_METRICS_PORT. Labels are
bounded sets only (route templates, operation types, statuses): never a tenant id, a
key, a scope ref or anything else a client can make up without limit.
"""

import threading
from typing import TYPE_CHECKING

from prometheus_client import Counter, Histogram

if TYPE_CHECKING:
    from app.services.compaction import CompactionRunRecord

HTTP_REQUESTS = Counter(
    "jet_http_requests", "HTTP requests answered, by route template, method and status.",
    ["route", "method", "status"],
)  # fmt: skip
HTTP_LATENCY = Histogram(
    "jet_http_request_duration_seconds", "Time to answer an HTTP request, by route template.",
    ["route", "method"],
)  # fmt: skip
GRAPHQL_OPERATIONS = Counter(
    "jet_graphql_operations", "GraphQL operations, by operation name, type and HTTP status.",
    ["operation", "type", "status"],
)  # fmt: skip
GRAPHQL_LATENCY = Histogram(
    "jet_graphql_operation_duration_seconds", "Time to answer a GraphQL operation.",
    ["operation", "type"],
)  # fmt: skip
RATE_LIMITED = Counter("jet_rate_limited_requests", "Requests refused with 429, by surface.",
                       ["surface"])  # fmt: skip
EVENTS_APPENDED = Counter("jet_events_appended", "Events stored (idempotent replays excluded).")
ENTRY_SEARCH_CACHE = Counter(
    "jet_entry_search_cache_lookups",
    "memoryEntries searches (and the context loader's entries for a query) looked up in "
    "the search page cache, by result: hit, miss (not "
    "cached), stale (cached before the tenant's entries last changed) or joined (the same "
    "search was running: its page was awaited rather than searched again).",
    ["result"],
)  # fmt: skip
ENTRY_SEARCH_CACHE_EVICTIONS = Counter(
    "jet_entry_search_cache_evictions", "Search pages dropped to keep the cache within its size."
)

COMPACTION_RUNS = Counter("jet_compaction_runs", "Compaction runs finished, by status.",
                          ["status", "trigger"])  # fmt: skip
COMPACTION_BUCKETS = Counter(
    "jet_compaction_buckets", "Compaction buckets, by outcome (compacted or skipped).", ["outcome"]
)
COMPACTION_TOKENS = Counter(
    "jet_compaction_tokens", "Tokens spent summarising, by kind (prompt or completion).", ["kind"]
)
COMPACTION_BUDGET_STOPS = Counter(
    "jet_compaction_budget_stops", "Compaction runs that left buckets for the token budget."
)
COMPACTION_DLP_STOPS = Counter(
    "jet_compaction_dlp_stops", "Compaction buckets left untouched because DLP blocked them."
)

# GraphQL operation names are chosen by clients: the first MAX_OPERATION_NAMES distinct
# names get their own label value, any later one is counted as "other".
MAX_OPERATION_NAMES = 200
_names: set[str] = set()
_names_lock = threading.Lock()


def operation_label(name: str | None) -> str:
    """A bounded label value for a client-chosen GraphQL operation name."""
    if not name:
        return "anonymous"
    name = name[:64]
    if name in _names:  # a name seen before, without the lock: the set only grows
        return name
    with _names_lock:
        if name in _names:
            return name
        if len(_names) < MAX_OPERATION_NAMES:
            _names.add(name)
            return name
    return "other"


def record_run(run: "CompactionRunRecord") -> None:
    """Count one finished compaction run (a dry run spends nothing and is counted by status)."""
    COMPACTION_RUNS.labels(status=run.status.value, trigger=str(run.trigger)).inc()
    if run.dry_run:
        return
    COMPACTION_BUCKETS.labels(outcome="compacted").inc(run.buckets_compacted)
    COMPACTION_BUCKETS.labels(outcome="skipped").inc(run.buckets_skipped)
    COMPACTION_TOKENS.labels(kind="prompt").inc(run.prompt_tokens)
    COMPACTION_TOKENS.labels(kind="completion").inc(run.completion_tokens)
    if run.budget_exceeded:
        COMPACTION_BUDGET_STOPS.inc()
    # Problem lines are "scope ref: why"; DLP's is "…: blocked by DLP: counts". Beyond
    # the first MAX_PROBLEMS lines only a count is kept, so this can undercount then.
    COMPACTION_DLP_STOPS.inc(sum("blocked by DLP" in p for p in run.problems))
