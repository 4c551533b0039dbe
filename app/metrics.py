"""Prometheus metrics of this process (prometheus-client's default registry), or of all
API processes of one `jet-memory serve --workers N` (prometheus-client's multiprocess mode).

The API serves them at /metrics, the worker on JET_WORKER_METRICS_PORT. Labels are
bounded sets only (route templates, operation types, statuses): never a tenant id, a
key, a scope ref or anything else a client can make up without limit.
"""

import os
import threading
from pathlib import Path

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)

# Set by app/processes/serve.py for its worker processes, each writing its metrics to files there.
MULTIPROCESS_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"

HTTP_REQUESTS = Counter(
    "jet_http_requests",
    "HTTP requests answered, by route template, method and status.",
    ["route", "method", "status"],
)
HTTP_LATENCY = Histogram(
    "jet_http_request_duration_seconds",
    "Time to answer an HTTP request, by route template.",
    ["route", "method"],
)
GRAPHQL_OPERATIONS = Counter(
    "jet_graphql_operations",
    "GraphQL operations, by operation name, type and HTTP status.",
    ["operation", "type", "status"],
)
GRAPHQL_LATENCY = Histogram(
    "jet_graphql_operation_duration_seconds",
    "Time to answer a GraphQL operation.",
    ["operation", "type"],
)
RATE_LIMITED = Counter(
    "jet_rate_limited_requests", "Requests refused with 429, by surface.", ["surface"]
)
EVENTS_APPENDED = Counter("jet_events_appended", "Events stored (idempotent replays excluded).")
ENTRY_SEARCH_CACHE = Counter(
    "jet_entry_search_cache_lookups",
    "memoryEntries searches (and the context loader's entries for a query) looked up in "
    "the search page cache, by result: hit, miss (not "
    "cached), stale (cached before the tenant's entries last changed) or joined (the same "
    "search was running: its page was awaited rather than searched again).",
    ["result"],
)
ENTRY_SEARCH_CACHE_EVICTIONS = Counter(
    "jet_entry_search_cache_evictions", "Search pages dropped to keep the cache within its size."
)
ENTRIES_EMBEDDED = Counter(
    "jet_entries_embedded",
    "Entry vectors the background indexer stored (app/services/search/indexer.py).",
)

COMPACTION_RUNS = Counter(
    "jet_compaction_runs", "Compaction runs finished, by status.", ["status", "trigger"]
)
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
WEBHOOK_ATTEMPTS = Counter(
    "jet_webhook_attempts",
    "Webhook delivery attempts, by outcome (delivered or failed).",
    ["outcome"],
)
WEBHOOK_LAG = Histogram(
    "jet_webhook_delivery_lag_seconds",
    "From a change to its first delivered attempt.",
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60, 600, 3600, 86400),
)
WEBHOOK_ENDPOINTS_DISABLED = Counter(
    "jet_webhook_endpoints_disabled", "Webhook endpoints disabled after a day of failures."
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


def exposition() -> bytes:
    """The text exposition for /metrics: this process's metrics, or, with several API
    processes, every process's summed (those of a dead worker included, so counters never
    go back)."""
    if not os.environ.get(MULTIPROCESS_DIR_ENV):
        return generate_latest()
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    return generate_latest(registry)


def forget_dead_processes() -> None:
    """Drop the live-gauge files of API processes that are gone (a worker killed and
    replaced), as prometheus-client's mark_process_dead does for one pid; their counters
    and histograms stay in the sums."""
    directory = os.environ.get(MULTIPROCESS_DIR_ENV)
    if not directory:
        return
    pids = {path.stem.rsplit("_", 1)[-1] for path in Path(directory).glob("*.db")}
    for pid in pids:
        if pid.isdigit() and not _alive(int(pid)):
            multiprocess.mark_process_dead(int(pid), directory)  # type: ignore[no-untyped-call]


def process_stopping() -> None:
    """This API process is stopping: its live gauges leave the sums."""
    directory = os.environ.get(MULTIPROCESS_DIR_ENV)
    if directory:
        multiprocess.mark_process_dead(os.getpid(), directory)  # type: ignore[no-untyped-call]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process reusing the pid: alive
        return True
    return True
