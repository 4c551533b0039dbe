"""An entry as a row of memory_entries: the columns every entry read selects, in order,
and the Entry they make."""

from typing import Any

from app.services.records import Entry, EntrySource, Scope, new_entry
from app.storage.models import entries_table as en

COLUMNS = [
    en.c.id, en.c.scope, en.c.scope_ref, en.c.title, en.c.summary, en.c.tags,
    en.c.importance, en.c.source, en.c.created_at, en.c.updated_at, en.c.version,
]  # fmt: skip


def to_entry(row: Any) -> Entry:
    """The Entry of a row whose first columns are COLUMNS, in order (more may follow);
    by position, as events.to_event."""
    (
        id_, scope, scope_ref, title, summary, tags, importance, source, created_at,
        updated_at, version,
    ) = row[:_N_COLUMNS]  # fmt: skip
    return new_entry(
        id=id_, scope=Scope(scope), scope_ref=scope_ref, title=title, summary=summary,
        tags=list(tags), importance=importance, source=EntrySource(source),
        created_at=created_at, updated_at=updated_at, version=version,
    )  # fmt: skip


_N_COLUMNS = len(COLUMNS)
