"""GraphQL `MemoryChange`: a change event as every surface sends it (app/services/changes.py),
never the memory text; the object named by objectId is read with memoryEntry/memoryEvent."""

from datetime import datetime
from typing import Any

import strawberry

from app.graphql.types import MemoryScope


@strawberry.type(description="One change to this tenant's memory, in the outbox's order.")
class MemoryChange:
    id: strawberry.ID = strawberry.field(
        description="grows with every change of this tenant: resume after it"
    )
    type: str = strawberry.field(
        description="event.appended, entry.created, entry.updated, entry.deleted or "
        "compaction.finished"
    )
    time: datetime
    scope: MemoryScope | None = strawberry.field(  # type: ignore[valid-type]
        description="absent for compaction.finished"
    )
    scope_ref: str | None
    object_id: str = strawberry.field(description="the event, entry or compaction run")
    version: int = strawberry.field(description="the entry's version (1 for others)")

    @classmethod
    def of(cls, payload: dict[str, Any]) -> "MemoryChange":
        """From the payload form (app.services.changes.Change.payload)."""
        return cls(
            id=strawberry.ID(payload["id"]), type=payload["type"],
            time=datetime.fromisoformat(payload["time"]), scope=payload["scope"],
            scope_ref=payload["scopeRef"], object_id=payload["objectId"],
            version=payload["version"],
        )  # fmt: skip
