"""Serialising writers on a key inside a write transaction, per backend: a transaction-scoped
advisory lock on PostgreSQL; nothing on SQLite, where BEGIN IMMEDIATE already serialises
every writer of the database."""

from sqlalchemy.ext.asyncio import AsyncConnection

from app.storage import postgres


async def serialize(conn: AsyncConnection, *keys: str) -> None:
    """Until the transaction ends, no other writer holding any of `keys` runs (keys are
    scoped to the tenant; taken in a fixed order, so two writers never deadlock)."""
    await postgres.advisory_lock(conn, *keys)
