"""Settings, read once from JET_* environment variables and an optional .env file.

Nothing here opens a file or a connection: the composition root (app/deps.py) does that,
so tests build their own Settings pointing at a temp dir.
"""

import ipaddress
import re
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy.engine import make_url

_ORIGIN = re.compile(r"https?://[^/\s,]+")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="JET_",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        # Errors name the setting and the rule, never the value (a URL's password, a token).
        hide_input_in_errors=True,
    )

    data_dir: Path = Field(
        default=Path("./data"),
        description="Where the control database and one SQLite file per tenant live.",
    )
    database_url: SecretStr | None = Field(
        default=None,
        description="Unset: SQLite files under JET_DATA_DIR (the embedded default). "
        "`postgresql+asyncpg://user:password@host:5432/db`: PostgreSQL, one schema per "
        "tenant and the control tables in schema `jet_control` (docs/scaling.md). A secret: "
        "never logged.",
    )
    postgres_pool_size: int = Field(
        default=20,
        ge=1,
        le=500,
        description="PostgreSQL connections one process keeps, shared by every tenant (plus 4 "
        "for the control tables).",
    )
    host: str = Field(default="127.0.0.1", description="Address `jet-memory serve` binds.")
    port: int = Field(default=8000, ge=1, le=65535, description="Port `jet-memory serve` binds.")
    log_level: Literal["debug", "info", "warning", "error"] = Field(
        default="info", description="Log level of the API, worker and CLI."
    )
    redis_url: str | None = Field(
        default=None,
        description="Redis for the arq worker queue; unset: `make serve` starts an embedded one.",
    )
    tenant_cache_size: int = Field(
        default=256,
        ge=1,
        description="Tenant databases kept open at once (LRU); bounds open files per process.",
    )
    tenant_pool_size: int = Field(
        default=4, ge=1, le=64, description="SQLite connections per open tenant database."
    )
    sqlite_synchronous: Literal["FULL", "NORMAL"] = Field(
        default="FULL",
        description="PRAGMA synchronous for tenant databases. FULL: an acknowledged append "
        "survives power loss; NORMAL: survives a process crash only.",
    )
    sqlite_busy_timeout_ms: int = Field(
        default=5000, ge=0, description="How long a SQLite write waits for a lock."
    )
    sqlite_fast_path: bool = Field(
        default=True,
        description="Use storage's SQLite short cuts around SQLAlchemy's and aiosqlite's "
        "private APIs (docs/fast-paths.md). Off: stock SQLAlchemy + aiosqlite, the same "
        "results and errors, slower.",
    )
    auth_cache_seconds: float = Field(
        default=5.0,
        ge=0,
        description="How long a verified API key is trusted before the control database is "
        "asked again; a revoked key stops working within this time.",
    )
    search_cache_pages: int = Field(
        default=2000,
        ge=0,
        description="memoryEntries search pages (and the context loader's entries found for a "
        "query) kept per API process (LRU over all tenants), each served until the tenant's "
        "entries change, by any process; 0 disables the cache. Memory per page and the hit "
        "rate: docs/benchmarks.md, metric jet_entry_search_cache_lookups_total.",
    )
    search_cache_mib: int = Field(
        default=32,
        ge=1,
        description="Most memory (MiB, as the cache weighs what it holds) the search pages of "
        "JET_SEARCH_CACHE_PAGES may take per API process, whichever bound is reached first: a "
        "context loader's page grows with the tenant's entries (up to ~90 KiB), so pages alone "
        'do not bound the memory (docs/benchmarks.md, "Memory under a soak").',
    )
    malloc_arenas: int = Field(
        default=2,
        ge=0,
        le=64,
        description="glibc malloc arenas an API process allocates from (its threads share "
        "them), with blocks of 128 KiB or more mapped apart and given back when freed; set "
        "at the process's start. 0: glibc's defaults (up to 8 arenas per core, each keeping "
        "what its threads freed), under which RSS grew for hours under load "
        '(docs/benchmarks.md, "Memory under a soak"). No effect without glibc.',
    )
    group_commit_max_rows: int = Field(
        default=2000, ge=1, description="Most event rows one group commit writes."
    )
    rate_limit_per_second: float = Field(
        default=0,
        ge=0,
        description="Requests per second one API key may make, per API process (a token "
        "bucket in memory: N processes allow N times this); 0 disables the limit.",
    )
    rate_limit_burst: int = Field(
        default=20,
        ge=1,
        description="Requests one API key may make at once above the per-second rate.",
    )
    metrics_token: str | None = Field(
        default=None,
        description="When set, GET /metrics needs `Authorization: Bearer <it>`; unset, "
        "/metrics is open (serve it on an internal network only).",
    )
    worker_metrics_port: int | None = Field(
        default=None,
        ge=1,
        le=65535,
        description="Port the worker serves its Prometheus /metrics on; unset: none.",
    )
    worker_metrics_host: str = Field(
        default="127.0.0.1", description="Address the worker's metrics server binds."
    )
    log_format: Literal["text", "json"] = Field(
        default="text",
        description="`text` for people, `json` (one object per line, with request_id and "
        "tenant_id) for production log pipelines.",
    )
    introspection: bool = Field(
        default=True, description="Allow GraphQL introspection (GraphiQL needs it)."
    )
    graphiql: bool = Field(default=True, description="Serve GraphiQL at GET /graphql.")
    console: bool = Field(
        default=True, description="Serve the console for people at GET /console (docs/console.md)."
    )
    graphql_fast_path: bool = Field(
        default=True,
        description="Take the GraphQL short cuts around Strawberry and graphql-core "
        "(app/graphql/fastpath/, docs/fast-paths.md); off: stock Strawberry, same answers.",
    )
    graphql_batch_max: int = Field(
        default=10,
        ge=1,
        le=100,
        description="Operations one batched GraphQL request (a JSON array) may hold; each "
        "is counted by the limits and the rate limit as one request.",
    )
    assets_dir: Path = Field(
        default=Path(__file__).resolve().parent.parent / "assets" / "node_modules",
        description="Where GraphiQL's JS/CSS were installed from the npm registry (`make` "
        "does it); served at /graphiql-assets.",
    )
    cors_origins: str | None = Field(
        default=None,
        description="Origins whose browser pages may call the API, comma-separated "
        "(`https://app.example.com,http://localhost:5173`, or `*` for any); unset: no CORS "
        "headers, browsers on another origin are refused (docs/security.md).",
    )

    compaction_age_days: int = Field(
        default=90,
        ge=0,
        description="Events that occurred more than this many days ago may be compacted.",
    )
    compaction_min_events: int = Field(
        default=3,
        ge=1,
        description="A scope/scopeRef bucket is compacted once it holds this many old "
        "uncompressed events.",
    )
    compaction_concurrency: int = Field(
        default=8,
        ge=1,
        le=256,
        description="Buckets one compaction run summarises at once (gateway calls in "
        "flight); as many more are read and written meanwhile.",
    )
    compaction_max_input_tokens: int = Field(
        default=6000,
        ge=600,
        description="Most estimated prompt tokens of one summarisation request; a bigger "
        "bucket is split into consecutive periods, one entry each.",
    )
    compaction_max_output_tokens: int = Field(
        default=1200,
        ge=100,
        description="max_tokens of one summarisation request (and the built-in "
        "summariser's length bound, at ~4 characters per token).",
    )
    compaction_summary_max_tokens: int = Field(
        default=600,
        ge=300,
        le=100_000,
        description="Most estimated tokens of one summary entry as memoryContext shows it "
        "(its heading, meta line and body): a bucket folds into as many entries as it "
        "takes, so at least three fit a 2,000-token context at the default.",
    )
    gateway_max_answer_bytes: int = Field(
        default=1 << 20,
        ge=1024,
        description="Most bytes (decoded) of one gateway answer; a bigger one is refused "
        "as it streams in and recorded on the compaction run as an unusable answer. The "
        "tenant's gateway timeout bounds each attempt as a whole, first byte to last.",
    )
    compaction_stale_run_seconds: float = Field(
        default=120,
        gt=0,
        description="A RUNNING run whose heartbeat (refreshed four times in this window "
        "while it runs) is older than this is marked FAILED (interrupted) when the "
        "tenant's next run starts; one whose worker process is gone from the same host "
        "is marked at once.",
    )
    export_max_records: int = Field(
        default=1_000_000,
        ge=1,
        description="Most records GET /memory/export streams for one scope and scopeRef; a "
        "subject with more is refused (400, TOO_LARGE) before anything is streamed (the operator's "
        "`jet-memory export` has no such cap).",
    )
    workers: int = Field(
        default=1,
        ge=0,
        le=256,
        description="API processes `jet-memory serve` (and `up`) runs on one port, each with "
        "its own event loop (uvicorn's workers: one that dies is replaced); 0: one per CPU "
        "core (the container image's setting). Over 1, /metrics sums over them; the rate "
        "limit and the caches stay per process (docs/scaling.md).",
    )

    changes_keep_days: float = Field(
        default=7,
        gt=0,
        description="Change events (the outbox behind webhooks and memoryChanged) are kept "
        "this long; a subscriber or endpoint further behind resumes from the oldest kept.",
    )
    webhook_allowed_networks: str = Field(
        default="",
        description="Comma-separated networks (CIDR) webhook URLs may resolve to although not "
        "globally reachable (loopback, private, shared, link-local...), e.g. `127.0.0.1/32`; "
        "empty: globally reachable addresses only (docs/security.md).",
    )
    webhook_endpoints_per_tenant: int = Field(
        default=20, ge=1, le=1000, description="Most webhook endpoints one tenant registers."
    )
    webhook_timeout_seconds: float = Field(
        default=10, gt=0, le=60, description="One delivery attempt, connect to answer."
    )
    webhook_concurrency: int = Field(
        default=16, ge=1, le=512, description="Deliveries one worker has in flight at once."
    )
    webhook_poll_seconds: float = Field(
        default=0.2,
        gt=0,
        le=60,
        description="How often a worker looks for new changes and due retries.",
    )
    webhook_retry_base_seconds: float = Field(
        default=5, gt=0, description="Wait before the first retry; it doubles each attempt."
    )
    webhook_retry_max_seconds: float = Field(
        default=3600, gt=0, description="Longest wait between two attempts."
    )
    webhook_retry_window_seconds: float = Field(
        default=86400,
        gt=0,
        description="A delivery still failing this long after its first attempt disables "
        "its endpoint (logged, and counted in jet_webhook_endpoints_disabled_total).",
    )
    webhook_lease_seconds: float = Field(
        default=30,
        gt=0,
        description="A worker holds a tenant's endpoints this long per pass; another "
        "worker takes them over once a killed worker's lease has run out.",
    )

    subscription_poll_seconds: float = Field(
        default=0.1,
        gt=0,
        le=10,
        description="How often an API process looks at the outbox of each tenant with live "
        "memoryChanged subscribers (one query per tenant, whatever their number).",
    )
    subscriptions_per_key: int = Field(
        default=10,
        ge=1,
        le=1000,
        description="Live memoryChanged subscriptions one API key holds at once, per API process.",
    )
    websockets_per_key: int = Field(
        default=20,
        ge=1,
        le=10_000,
        description="Open websockets at /graphql one API key holds at once, per API process; "
        "one more is closed at connection_init with 1013 (docs/limits.md).",
    )
    websockets_per_process: int = Field(
        default=1000,
        ge=1,
        le=1_000_000,
        description="Open websockets at /graphql per API process, whatever their key; one "
        "more is closed as it opens with 1013. Keep it under the process's file descriptor "
        "limit (`ulimit -n`).",
    )
    keep_alive_seconds: int = Field(
        default=30,
        gt=0,
        le=3_600,
        description="How long the API keeps an idle HTTP connection open for the client's "
        "next request. Longer than the clients' own pools keep one (httpx and most others: "
        "5 s), so a client never sends on a connection the server is closing as it arrives.",
    )
    websocket_idle_seconds: float = Field(
        default=60,
        gt=0,
        le=86_400,
        description="A websocket at /graphql that holds no subscription and runs no "
        "operation for this long is closed (1000); pings do not count as activity.",
    )
    embedder: Literal["local", "none"] = Field(
        default="local",
        description="What embeds entries for search by meaning (docs/search.md): `local`, the "
        "WordLlama model installed by `make` (CPU, in the API and worker processes), or `none` "
        "(keyword search only, whatever the tenants' policies). Each tenant's policy chooses "
        "between the local model, its own gateway and none (`jet-memory tenants configure "
        "--embedder`).",
    )
    embed_batch: int = Field(
        default=64, ge=1, le=1000, description="Entries the background indexer embeds per batch."
    )
    embed_interval_seconds: float = Field(
        default=1.0,
        gt=0,
        description="How often the background indexer looks for entries to embed, per process.",
    )
    embed_sweep_tenants: int = Field(
        default=8,
        ge=1,
        le=10_000,
        description="Tenants not "
        "open in a process that its background indexer looks at per pass, in turn (the open "
        "ones: every pass).",
    )
    fusion_dense_weight: float = Field(
        default=0.1,
        ge=0,
        le=1,
        description="The meaning side's share of a fused score (the words' is the rest): 0 "
        "ranks by words, meaning only adding hits after them. Tuned on the evaluation set "
        "(docs/search.md).",
    )
    fusion_depth: int = Field(
        default=100,
        ge=10,
        le=2000,
        description="How many hits of each ranking (keywords, meaning) a fused search ranks; "
        "a fused search pages through at most this many.",
    )
    fusion_min_similarity: float = Field(
        default=0.15,
        ge=-1,
        le=1,
        description="The least cosine similarity of a hit found by meaning alone; below it an "
        "entry is found by its words only (unrelated text scores under it, docs/search.md).",
    )
    fusion_max_vectors: int = Field(
        default=200_000,
        ge=1,
        description="Most entry vectors one fused search scores (the newest first); beyond "
        "them, entries are found by their words only.",
    )

    @field_validator("webhook_allowed_networks")
    @classmethod
    def _networks(cls, value: str) -> str:
        for part in value.split(","):
            if part.strip():
                try:
                    ipaddress.ip_network(part.strip(), strict=False)
                except ValueError:
                    raise ValueError(
                        f"JET_WEBHOOK_ALLOWED_NETWORKS: {part.strip()!r} is not a network"
                    ) from None
        return value

    @field_validator("database_url")
    @classmethod
    def _postgres_url(cls, url: SecretStr | None) -> SecretStr | None:
        # The URL carries a password: the error names the setting, never the value.
        if url is None or not url.get_secret_value():
            return None
        scheme = url.get_secret_value().split("://", 1)[0]
        if scheme in ("postgresql", "postgres"):
            rest = url.get_secret_value().split("://", 1)[1]
            return SecretStr(f"postgresql+asyncpg://{rest}")
        if scheme != "postgresql+asyncpg":
            raise ValueError(
                "JET_DATABASE_URL must be a postgresql+asyncpg:// URL (leave it unset for SQLite)"
            )
        return url

    @field_validator("cors_origins")
    @classmethod
    def _origins(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        for origin in (o.strip() for o in value.split(",")):
            if origin != "*" and not _ORIGIN.fullmatch(origin):
                raise ValueError(
                    "JET_CORS_ORIGINS must list origins (scheme://host[:port], no path) "
                    "separated by commas, or be *"
                )
        return value

    @property
    def cors_origin_list(self) -> list[str]:
        """JET_CORS_ORIGINS as a list (empty: CORS off)."""
        return [o.strip() for o in (self.cors_origins or "").split(",") if o.strip()]

    @property
    def postgres(self) -> bool:
        """True when the storage backend is PostgreSQL (JET_DATABASE_URL)."""
        return self.database_url is not None

    @property
    def storage_label(self) -> str:
        """Where memory lives, for logs: never the URL's user or password."""
        if self.database_url is None:
            return f"SQLite in {self.data_dir}"
        url = make_url(self.database_url.get_secret_value())
        return f"PostgreSQL {url.host}:{url.port or 5432}/{url.database}"

    @property
    def control_db_path(self) -> Path:
        return self.data_dir / "control.db"

    @property
    def tenants_dir(self) -> Path:
        return self.data_dir / "tenants"
