"""The export format (docs/export.md): a header line, one JSON line per record, a trailer
with the counts and a sha256 of the record lines. Record kinds are a registry (`KINDS`):
a new kind is one entry here and one TableSpec in app/storage/data_rights/bulk.py."""

import hashlib
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson

from app import ids
from app.errors import InvalidInput, TooLarge
from app.services import validation
from app.services.records import EntryIn, EntrySource, EventIn, RunStatus, RunTrigger, Scope
from app.storage.data_rights import bulk as tables
from app.storage.lists import storable
from app.storage.tenants import TenantDb
from app.storage.transactions import read_transaction
from app.storage.types import utcnow

FORMAT = "jet-memory-export"
VERSION = 1
# The longest line an import reads before parsing it: an event's body at its limit, every
# byte escaped by JSON, fits several times over; a longer line is refused unread.
MAX_LINE_BYTES = 4 * 1024 * 1024
MEDIA_TYPE = "application/x-ndjson"
PAGE_SIZE = 1000  # rows per keyset page read while exporting
_OPTIONS = orjson.OPT_UTC_Z

# Field types: how a value looks in a line. A "?" suffix allows null.
TEXT, TIME, INT, BOOL, TEXTS = "text", "time", "int", "bool", "texts"


@dataclass(frozen=True)
class RecordKind:
    """One kind of record: its name in a line, the table it comes from and goes to, its
    fields (name -> type), whether a scope's export holds it, the fields naming rows of
    other kinds (field -> that kind's table, which the file must bring first or the tenant
    already hold), the fields holding ids (field -> the ids' prefix, app/ids.py; a list
    field, each of its items), and the domain's rules on one record."""

    name: str
    table: str
    fields: Mapping[str, str]
    scoped: bool
    references: Mapping[str, str]
    id_fields: Mapping[str, str]
    check: Callable[[dict[str, Any]], None]


def _one_of(field: str, allowed: list[str]) -> Callable[[dict[str, Any]], None]:
    def check(r: dict[str, Any]) -> None:
        if r[field] not in allowed:
            raise InvalidInput([field], f"{field} must be one of {', '.join(allowed)}")

    return check


def _check_event(r: dict[str, Any]) -> None:
    _one_of("scope", [s.value for s in Scope])(r)
    validation.check_event(
        EventIn(
            scope=Scope(r["scope"]),
            scope_ref=r["scope_ref"],
            kind=r["kind"],
            body=r["body"],
            source=r["source"],
            source_ref=r["source_ref"],
            occurred_at=r["occurred_at"],
            idempotency_key=r["idempotency_key"],
        ),
        now=r["recorded_at"],
    )
    if (r["compressed_at"] is None) != (r["compressed_into"] is None):
        raise InvalidInput(["compressed_at"], "compressed_at and compressed_into go together")


def _check_version(r: dict[str, Any]) -> None:
    _one_of("change", ["update", "restore", "delete"])(r)
    _check_entry({**r, "id": r["entry_id"]})


def _check_entry(r: dict[str, Any]) -> None:
    _one_of("scope", [s.value for s in Scope])(r)
    _one_of("source", [s.value for s in EntrySource])(r)
    validation.check_entry(
        EntryIn(
            scope=Scope(r["scope"]),
            scope_ref=r["scope_ref"],
            title=r["title"],
            summary=r["summary"],
            tags=r["tags"],
            importance=r["importance"],
            source=EntrySource(r["source"]),
        ),
        by_compactor=True,
    )
    if r["version"] < 1:
        raise InvalidInput(["version"], "version starts at 1")


def _check_provenance(r: dict[str, Any]) -> None:
    if r["position"] < 0:
        raise InvalidInput(["position"], "position must not be negative")


def _check_run(r: dict[str, Any]) -> None:
    _one_of("status", [s.value for s in RunStatus])(r)
    _one_of("trigger", [t.value for t in RunTrigger])(r)


# In the order a file lists them: every kind after the kinds it references.
KINDS: tuple[RecordKind, ...] = (
    RecordKind(
        "entry",
        "memory_entries",
        {
            "id": TEXT,
            "scope": TEXT,
            "scope_ref": TEXT + "?",
            "title": TEXT,
            "summary": TEXT,
            "tags": TEXTS,
            "importance": INT,
            "source": TEXT,
            "created_at": TIME,
            "updated_at": TIME,
            "version": INT,
        },
        True,
        {},
        {"id": ids.ENTRY},
        _check_entry,
    ),
    RecordKind(
        "event",
        "memory_events",
        {
            "id": TEXT,
            "scope": TEXT,
            "scope_ref": TEXT + "?",
            "kind": TEXT,
            "body": TEXT,
            "source": TEXT + "?",
            "source_ref": TEXT + "?",
            "occurred_at": TIME,
            "recorded_at": TIME,
            "compressed_at": TIME + "?",
            "compressed_into": TEXT + "?",
            "idempotency_key": TEXT + "?",
        },
        True,
        {"compressed_into": "memory_entries"},
        {"id": ids.EVENT, "compressed_into": ids.ENTRY},
        _check_event,
    ),
    RecordKind(
        "provenance",
        "memory_entry_sources",
        {"entry_id": TEXT, "event_id": TEXT, "position": INT},
        True,
        {"entry_id": "memory_entries", "event_id": "memory_events"},
        {"entry_id": ids.ENTRY, "event_id": ids.EVENT},
        _check_provenance,
    ),
    # An entry's earlier versions; also of a deleted entry (its history outlives it), which
    # the import checks apart: see app/services/data_rights/importer.py.
    RecordKind(
        "entry_version",
        "memory_entry_versions",
        {
            "entry_id": TEXT,
            "version": INT,
            "scope": TEXT,
            "scope_ref": TEXT + "?",
            "title": TEXT,
            "summary": TEXT,
            "tags": TEXTS,
            "importance": INT,
            "source": TEXT,
            "created_at": TIME,
            "updated_at": TIME,
            "change": TEXT,
            "changed_at": TIME,
            "changed_by": TEXT,
        },
        True,
        {},
        {"entry_id": ids.ENTRY},
        _check_version,
    ),
    RecordKind(
        "compaction_run",
        "compaction_runs",
        {
            "id": TEXT,
            "status": TEXT,
            "trigger": TEXT,
            "dry_run": BOOL,
            "started_at": TIME,
            "finished_at": TIME + "?",
            "cutoff": TIME,
            "buckets_considered": INT,
            "buckets_compacted": INT,
            "buckets_skipped": INT,
            "periods": INT,
            "events_compressed": INT,
            "prompt_tokens": INT,
            "completion_tokens": INT,
            "budget_exceeded": BOOL,
            "problems": TEXTS,
            "entries_created": TEXTS,
            "summariser": TEXT,
            "owner_host": TEXT + "?",
            "owner_pid": INT + "?",
            "heartbeat_at": TIME + "?",
        },
        False,
        {},
        {"id": ids.RUN, "entries_created": ids.ENTRY},
        _check_run,
    ),
    RecordKind(
        "llm_call",
        "llm_calls",
        {
            "id": TEXT,
            "run_id": TEXT + "?",
            "created_at": TIME,
            "model": TEXT,
            "status": TEXT,
            "estimated_tokens": INT,
            "prompt_tokens": INT,
            "completion_tokens": INT,
        },
        False,
        {"run_id": "compaction_runs"},
        {"id": ids.LLM_CALL, "run_id": ids.RUN},
        _one_of("status", ["reserved", "done", "failed"]),
    ),
)
BY_NAME: Mapping[str, RecordKind] = {k.name: k for k in KINDS}


_IDENTITY = {k.name: tables.TABLES[k.table].identity for k in KINDS}
_MAX_LENGTHS = {k.name: tables.TABLES[k.table].max_lengths for k in KINDS}
# What every backend's INTEGER holds (PostgreSQL's is 32-bit); counts are never negative.
_INT_MAX = 2**31 - 1
_TIMES = {k.name: [f for f, t in k.fields.items() if t.rstrip("?") == TIME] for k in KINDS}
# Per kind: (field, type, base type, nullable, max length), worked out once.
_FIELDS = {
    k.name: [
        (f, t, t.rstrip("?"), t.endswith("?"), _MAX_LENGTHS[k.name].get(f))
        for f, t in k.fields.items()
    ]
    for k in KINDS
}


def identity(kind: RecordKind, record: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple([record[c] for c in _IDENTITY[kind.name]])


# ------------------------------------------------------------------------------ export


def header(scope: Scope | None, scope_ref: str | None) -> bytes:
    """The first line: what the file is. No tenant in it: a file imports into any tenant.
    The counts cannot be known before the records are streamed: the trailer has them."""
    kinds = [k.name for k in KINDS if scope is None or k.scoped]
    line = {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": utcnow(),
        "scope": None if scope is None else scope.value,
        "scope_ref": scope_ref,
        "records": kinds,
    }
    return orjson.dumps(line, option=_OPTIONS) + b"\n"


def trailer(counts: Mapping[str, int], digest: str) -> bytes:
    """The last line: the count of each kind and the sha256 (hex) of every record line."""
    line = {"end": FORMAT, "counts": dict(counts), "sha256": digest}
    return orjson.dumps(line) + b"\n"


def check_export_scope(scope: Scope | None, scope_ref: str | None) -> None:
    if scope is None:
        if scope_ref is not None:
            raise InvalidInput(["scopeRef"], "scopeRef needs a scope")
        return
    validation.check_scope(scope, scope_ref)
    if scope_ref is not None:
        validation.check_text(scope_ref, "scopeRef")


async def export_lines(
    db: TenantDb,
    *,
    scope: Scope | None = None,
    scope_ref: str | None = None,
    snapshot: bool = True,
    page_size: int = PAGE_SIZE,
    progress: Callable[[int], None] | None = None,
) -> AsyncIterator[bytes]:
    """The export of a tenant (or of one scope and scopeRef) as lines, a page of records
    per chunk: never more than a page in memory. `snapshot`: every page from one read
    transaction (a consistent copy; the CLI); else each page a read of its own, so a slow
    reader holds no connection between pages (the REST route)."""
    check_export_scope(scope, scope_ref)
    yield header(scope, scope_ref)
    digest = hashlib.sha256()
    counts: dict[str, int] = {}
    done = 0
    if snapshot:
        async with read_transaction(db.engine) as conn:
            async for chunk in _records(db, scope, scope_ref, page_size, counts, conn):
                digest.update(chunk)
                done += chunk.count(b"\n")
                if progress is not None:
                    progress(done)
                yield chunk
    else:
        async for chunk in _records(db, scope, scope_ref, page_size, counts, None):
            digest.update(chunk)
            yield chunk
    yield trailer(counts, digest.hexdigest())


async def subject_export(
    db: TenantDb, *, scope: Scope, scope_ref: str | None, max_records: int
) -> AsyncIterator[bytes]:
    """A subject's data (one scope and scopeRef) as export lines for a request: checked and
    counted before the first line, so one over `max_records` is refused up front; each
    page then a read of its own."""
    check_export_scope(scope, scope_ref)
    names = [k.table for k in KINDS if k.scoped]
    held = await tables.count_rows(db.engine, names, scope.value, scope_ref)
    if held > max_records:
        raise TooLarge(
            ["scope"],
            f"scope holds {held:,} records, over the {max_records:,} one export "
            "request may stream; an operator exports it whole with the CLI",
        )
    return export_lines(db, scope=scope, scope_ref=scope_ref, snapshot=False)


async def _records(
    db: TenantDb,
    scope: Scope | None,
    scope_ref: str | None,
    page_size: int,
    counts: dict[str, int],
    conn: Any,
) -> AsyncIterator[bytes]:
    for kind in KINDS:
        if scope is not None and not kind.scoped:
            continue
        counts[kind.name] = 0
        pages = tables.table_pages(
            db.engine,
            kind.table,
            scope=None if scope is None else scope.value,
            scope_ref=scope_ref,
            page_size=page_size,
            snapshot=conn,
        )
        async for rows in pages:
            counts[kind.name] += len(rows)
            yield b"".join(_line(kind.name, row) for row in rows)


def _line(name: str, row: dict[str, Any]) -> bytes:
    return orjson.dumps({"record": name, **row}, option=_OPTIONS) + b"\n"


# ------------------------------------------------------------------------------ decoding


def decode_fields(kind: RecordKind, line: dict[str, Any]) -> dict[str, Any]:
    """A record's fields as stored (timestamps as datetimes), each checked against its type;
    an unknown or missing field is an error naming it."""
    if len(line) != len(kind.fields) + ("record" in line):
        _check_unknown(kind, line)
    out: dict[str, Any] = {}
    for name, type_, base, nullable, limit in _FIELDS[kind.name]:
        try:
            value = line[name]
        except KeyError:
            _check_unknown(kind, line)  # an unknown field is named before a missing one
            raise InvalidInput([name], f"{name} is missing") from None
        if value is None and nullable:
            out[name] = None
            continue
        # The common case inline (a plain ASCII string without NUL), the rest by _decode.
        if base == TEXT and value.__class__ is str and value.isascii() and "\x00" not in value:
            out[name] = value
        else:
            value = out[name] = _decode(name, type_, value)
        if limit is not None and isinstance(value, str) and len(value) > limit:
            raise TooLarge([name], f"{name} is longer than {limit} characters")
    return out


def check_ids(kind: RecordKind, record: Mapping[str, Any]) -> None:
    """Each id field holds an id as this service makes them (app/ids.py) with its kind's
    prefix: an id is a key the API reads and erases by, never a path or free text."""
    for name, prefix in kind.id_fields.items():
        value = record[name]
        for one in value if isinstance(value, list) else [value]:
            if one is not None and not ids.is_id(one, prefix):
                shown = repr(one) if len(one) <= 64 else f"{len(one)} characters"
                expected = f"{prefix}_ and the 26 characters of a lowercase ULID"
                raise InvalidInput(
                    [name], f"{name} must be an id of the form {expected}, got {shown}"
                )


def _check_unknown(kind: RecordKind, line: dict[str, Any]) -> None:
    unknown = sorted(set(line) - set(kind.fields) - {"record"})
    if unknown:
        raise InvalidInput([unknown[0]], f"{unknown[0]} is not a field of a {kind.name} record")


def decode_verified(kind: RecordKind, line: dict[str, Any]) -> dict[str, Any]:
    """`decode_fields` of a line that it has already passed: only the timestamps parsed."""
    line.pop("record", None)
    for name in _TIMES[kind.name]:
        if line[name] is not None:
            line[name] = datetime.fromisoformat(line[name])
    return line


def _check_storable(value: str, name: str) -> None:
    validation.check_text(value, name)
    if not storable(value):
        raise InvalidInput([name], f"{name} must not contain NUL (U+0000) characters")


def _decode(name: str, type_: str, value: Any) -> Any:
    if value is None:
        if type_.endswith("?"):
            return None
        raise InvalidInput([name], f"{name} must not be null")
    base = type_.rstrip("?")
    if base == TEXT and isinstance(value, str):
        _check_storable(value, name)
        return value
    if base == INT and isinstance(value, int) and not isinstance(value, bool):
        if not 0 <= value <= _INT_MAX:
            raise InvalidInput([name], f"{name} must be 0 to {_INT_MAX}, got {value}")
        return value
    if base == BOOL and isinstance(value, bool):
        return value
    if base == TEXTS and isinstance(value, list) and all(isinstance(v, str) for v in value):
        for v in value:
            _check_storable(v, name)
        return value
    if base == TIME and isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            raise InvalidInput([name], f"{name} must be an ISO 8601 time, got {value!r}") from None
        validation.check_time(parsed, name)
        return parsed
    expected = {
        TEXT: "a string",
        INT: "an integer",
        BOOL: "true or false",
        TEXTS: "a list of strings",
        TIME: "an ISO 8601 time",
    }[base]
    raise InvalidInput([name], f"{name} must be {expected}")
