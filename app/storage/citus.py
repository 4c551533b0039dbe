"""Citus: the PostgreSQL backend on a cluster, one distributed schema per tenant.

Detected at start (`check`): the settings schema-based sharding needs are verified, and
the control schema is kept on the coordinator (docs/cluster.md says why).
"""

import logging
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

log = logging.getLogger(__name__)

# The settings a tenant schema needs on the coordinator, with the value they must have and
# why it is safe (the same words as docs/cluster.md).
REQUIRED: dict[str, tuple[str, str]] = {
    "citus.enable_schema_based_sharding": (
        "on",
        "each tenant schema becomes a distributed schema that lives whole on one worker",
    ),
    "citus.enable_unsafe_triggers": (
        "on",
        "the tenant triggers touch only tables of their own schema, which schema-based "
        "sharding keeps together on one node",
    ),
}


# Set on every connection (postgres.engine): Citus hides shards by filtering pg_class through
# a function call per row, which makes asyncpg's type introspection crawl on a coordinator that
# holds no shard to hide (docs/cluster.md, Limits); plain PostgreSQL keeps an inert placeholder.
CONNECTION_SETTINGS = {"citus.override_table_visibility": "off"}


class CitusNotReady(RuntimeError):
    """The database has Citus but cannot hold tenants as it is set up; the message names
    what is missing and how to set it."""


@dataclass(frozen=True, slots=True)
class Cluster:
    version: str
    workers: int


async def check(conn: AsyncConnection) -> Cluster | None:
    """None on plain PostgreSQL; on Citus, the cluster after checking that this is the
    coordinator, that it has active workers and that every REQUIRED setting is on.
    Raises CitusNotReady naming each problem."""
    row = (
        await conn.execute(
            text("SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'citus'")
        )
    ).first()
    if row is None:
        return None
    version = str(row[0])
    problems: list[str] = []
    for name, (value, why) in REQUIRED.items():
        current = (
            await conn.execute(text("SELECT current_setting(:n, true)"), {"n": name})
        ).scalar()
        if (current or "").lower() != value:
            problems.append(
                f"{name} is {current or 'unset'}, must be {value} ({why}); "
                f"ALTER DATABASE <db> SET {name} = {value}, or set it in postgresql.conf"
            )
    coordinator = (await conn.execute(text("SELECT citus_is_coordinator()"))).scalar()
    if not coordinator:
        problems.append(
            "this node is not the Citus coordinator: point JET_DATABASE_URL at the coordinator"
        )
    workers = int(
        (
            await conn.execute(
                text(
                    "SELECT count(*) FROM pg_catalog.pg_dist_node WHERE isactive "
                    "AND noderole = 'primary' AND groupid <> 0 AND shouldhaveshards"
                )
            )
        ).scalar()
        or 0
    )
    if workers == 0:
        problems.append(
            "the cluster has no active worker that takes shards: add one with "
            "SELECT citus_add_node('<host>', <port>)"
        )
    if problems:
        raise CitusNotReady(
            f"PostgreSQL has Citus {version}, which cannot hold tenants as set up: "
            + "; ".join(problems)
            + " (docs/cluster.md)"
        )
    log.info(
        "PostgreSQL backend on Citus: schema-based sharding, control schema on the coordinator",
        extra={"citus_version": version, "workers": workers},
    )
    return Cluster(version=version, workers=workers)


async def keep_on_coordinator(conn: AsyncConnection) -> None:
    """Make the schemas this transaction creates plain coordinator schemas (not
    distributed): the control tables answer every tenant's auth, so they must not live on
    one worker whose loss would stop them all."""
    await conn.execute(text("SET LOCAL citus.enable_schema_based_sharding TO off"))
