"""Import of an export file (portability.py's format, beside this module) into a tenant. A
first pass reads every line, its kind and fields, the counts and the checksum before anything is
written; a second stores the records in batches of one transaction each, idempotently,
reading the next batch while the one before is written."""

import asyncio
import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import orjson

from app.errors import Conflict, ExpectedError, InvalidInput
from app.services.data_rights.portability import (
    BY_NAME,
    FORMAT,
    MAX_LINE_BYTES,
    VERSION,
    RecordKind,
    check_ids,
    decode_fields,
    decode_verified,
    identity,
)
from app.storage.data_rights import bulk as tables
from app.storage.tenants import TenantDb
from app.storage.transactions import write_transaction

# A write transaction's batch: at most this many records, and closed once its lines reach
# BATCH_BYTES (a line is at most MAX_LINE_BYTES), so two batches (one written, the next
# read) bound the import's memory. Larger transactions write each index page touched by
# many of their rows once; the lock they hold is the cost (docs/export.md).
BATCH_RECORDS = 10_000
BATCH_BYTES = 4 * 1024 * 1024


@dataclass
class ImportResult:
    """Per kind: records stored now, and records the tenant already held (the same)."""

    stored: dict[str, int] = field(default_factory=dict)
    present: dict[str, int] = field(default_factory=dict)

    @property
    def records(self) -> int:
        return sum(self.stored.values()) + sum(self.present.values())


def _bad(n: int, message: str) -> InvalidInput:
    return InvalidInput(["line", str(n)], f"line {n}: {message}")


def _lines(f: BinaryIO) -> Iterator[tuple[int, bytes]]:
    """(number, bytes) of each line, bounded: a line longer than MAX_LINE_BYTES is refused
    once that many bytes are read, before any parsing."""
    n = 0
    while True:
        line = f.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        n += 1
        if len(line) > MAX_LINE_BYTES:
            raise _bad(n, f"longer than {MAX_LINE_BYTES} bytes, the most a line may hold")
        yield n, line


def _json(n: int, line: bytes) -> dict[str, Any]:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise _bad(n, f"not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise _bad(n, "not a JSON object")
    return value


def _check_header(n: int, line: bytes) -> None:
    head = _json(n, line)
    if head.get("format") != FORMAT:
        raise _bad(n, f"not a {FORMAT} file: its first line must be the format header")
    if head.get("version") != VERSION:
        raise _bad(
            n,
            f"format version {head.get('version')!r} is not supported; this build reads "
            f"version {VERSION}",
        )


def _record(n: int, value: dict[str, Any], *, check: bool) -> tuple[RecordKind, dict[str, Any]]:
    name = value.get("record")
    kind = BY_NAME.get(name) if isinstance(name, str) else None
    if kind is None:
        raise _bad(n, f"unknown record kind {value.get('record')!r}")
    if not check:
        return kind, decode_verified(kind, value)
    try:
        record = decode_fields(kind, value)
        check_ids(kind, record)
        kind.check(record)
    except ExpectedError as exc:
        raise type(exc)(
            ["line", str(n), *exc.field], f"line {n} ({kind.name}): {exc.message}"
        ) from None
    return kind, record


@dataclass
class Verified:
    """What the verifying pass learnt: the number of records, and the entries whose deletion
    the file records (entry id -> the highest version of its `delete` versions)."""

    records: int
    deleted: dict[str, int]


def verify(f: BinaryIO) -> Verified:
    """Read the whole file once: the header, every record (kind, fields, ids, the domain's
    rules), then the trailer's counts and checksum."""
    digest = hashlib.sha256()
    counts: dict[str, int] = {}
    deleted: dict[str, int] = {}
    end: dict[str, Any] | None = None
    for n, line in _lines(f):
        if n == 1:
            _check_header(n, line)
            continue
        if end is not None:
            raise _bad(n, "a line after the trailer")
        value = _json(n, line)
        if "end" in value and "record" not in value:
            end = value
            continue
        kind, record = _record(n, value, check=True)
        counts[kind.name] = counts.get(kind.name, 0) + 1
        if kind.name == "entry_version" and record["change"] == "delete":
            entry_id = record["entry_id"]
            deleted[entry_id] = max(deleted.get(entry_id, 0), record["version"])
        digest.update(line)
    if end is None:
        raise InvalidInput(["file"], "the file has no trailer line: it is empty or cut short")
    if not isinstance(end.get("counts"), dict):
        raise InvalidInput(["counts"], "the trailer has no counts")
    declared = {k: v for k, v in end["counts"].items() if v}
    if declared != counts:
        raise InvalidInput(
            ["counts"], f"the trailer counts {declared} records, the file holds {counts}"
        )
    if end.get("sha256") != digest.hexdigest():
        raise InvalidInput(
            ["sha256"],
            "checksum mismatch: the record lines are not the ones exported "
            f"(trailer {end.get('sha256')!r}, file {digest.hexdigest()!r})",
        )
    return Verified(sum(counts.values()), deleted)


async def import_file(
    db: TenantDb, f: BinaryIO, *, progress: Callable[[int, int], None] | None = None
) -> ImportResult:
    """Verify the file (`verify`), then store its records into the tenant: a record the
    tenant already holds, the same in every field, is skipped; one held with other values
    is a Conflict naming its line. An import stopped half way resumes when run again."""
    verified = verify(f)
    total = verified.records
    f.seek(0)
    result = ImportResult()
    done = 0
    writing: asyncio.Task[int] | None = None
    batches = _batches(f)
    try:
        # Each batch is read on a worker thread, so the event loop drives the writing of
        # the batch before meanwhile; SQLite releases the GIL while it writes.
        while True:
            item = await asyncio.to_thread(next, batches, None)
            if writing is not None:
                done += await writing
                writing = None
                if progress is not None:
                    progress(done, total)
            if item is None:
                break
            # Batches are stored in file order (a record may name one of the batch before).
            writing = asyncio.create_task(_store(db, *item, result, verified.deleted))
    finally:
        if writing is not None and not writing.done():
            # The reading failed while a batch was written: that batch's transaction
            # commits or rolls back whole before the reading's error goes on.
            await asyncio.wait([writing])
            if not writing.cancelled():
                writing.exception()  # retrieved, so asyncio does not log it as lost
    return result


def _batches(f: BinaryIO) -> Iterator[tuple[RecordKind, list[tuple[int, dict[str, Any]]]]]:
    """The file's records as (kind, [(line number, record)]): one kind per batch, at most
    BATCH_RECORDS records, closed once its lines reach BATCH_BYTES."""
    batch: list[tuple[int, dict[str, Any]]] = []
    batch_kind: RecordKind | None = None
    size = 0
    for n, line in _lines(f):
        value = _json(n, line) if n > 1 else {}
        if "record" not in value:
            continue  # the header, the trailer
        kind, record = _record(n, value, check=False)
        if batch_kind is not None and (
            kind is not batch_kind or len(batch) >= BATCH_RECORDS or size >= BATCH_BYTES
        ):
            yield batch_kind, batch
            batch, size = [], 0
        batch_kind = kind
        batch.append((n, record))
        size += len(line)
    if batch_kind is not None:
        yield batch_kind, batch


async def _store(
    db: TenantDb,
    kind: RecordKind,
    batch: list[tuple[int, dict[str, Any]]],
    result: ImportResult,
    deleted: dict[str, int],
) -> int:
    """Store one batch in one transaction; the number of its records. `deleted`: the
    entries whose deletion the file records (Verified.deleted)."""
    async with write_transaction(db.engine, bulk=True) as conn:
        held = await tables.stored(conn, kind.table, [identity(kind, r) for _, r in batch])
        new: list[tuple[int, dict[str, Any]]] = []
        for n, record in batch:
            key = identity(kind, record)
            before = held.get(key)
            if before is not None:
                differ = [f for f in kind.fields if before[f] != record[f]]
                if differ:
                    raise Conflict(
                        ["line", str(n)],
                        f"line {n}: {kind.name} {'/'.join(key)} is already "
                        f"stored with a different {', '.join(differ)}",
                    )
                result.present[kind.name] = result.present.get(kind.name, 0) + 1
                continue
            held[key] = record
            new.append((n, record))
        if kind.name == "event":
            await _check_idempotency_keys(conn, new)
        for name, table in kind.references.items():
            await _check_references(conn, kind, name, table, new)
        if kind.name == "entry_version":
            await _check_history(conn, new, deleted)
        await tables.insert_rows(conn, kind.table, [r for _, r in new])
    result.stored[kind.name] = result.stored.get(kind.name, 0) + len(new)
    return len(batch)


async def _check_idempotency_keys(conn: Any, new: list[tuple[int, dict[str, Any]]]) -> None:
    lines = {r["idempotency_key"]: (n, r["id"]) for n, r in new if r["idempotency_key"]}
    if not lines:
        return
    seen: dict[str, str] = {}
    for n, r in new:
        key = r["idempotency_key"]
        if key is not None and seen.setdefault(key, r["id"]) != r["id"]:
            raise Conflict(["line", str(n)], f"line {n}: idempotency_key {key!r} is on two events")
    for key, event_id in (await tables.event_ids_by_idempotency_key(conn, list(lines))).items():
        n, id_ = lines[key]
        if event_id != id_:
            raise Conflict(
                ["line", str(n)],
                f"line {n}: idempotency_key {key!r} is already stored on event {event_id}",
            )


async def _check_references(
    conn: Any, kind: RecordKind, name: str, table: str, new: list[tuple[int, dict[str, Any]]]
) -> None:
    wanted = {r[name] for _, r in new if r[name] is not None}
    if not wanted:
        return
    found = {k[0] for k in await tables.stored(conn, table, [(w,) for w in wanted])}
    for n, r in new:
        if r[name] is not None and r[name] not in found:
            raise InvalidInput(
                ["line", str(n), name],
                f"line {n} ({kind.name}): {name} {r[name]!r} names "
                "a record that is neither in the tenant nor earlier in the file",
            )


async def _check_history(
    conn: Any, new: list[tuple[int, dict[str, Any]]], deleted: dict[str, int]
) -> None:
    """A version names its entry, in the tenant (a file brings entries before versions) or,
    for a deleted entry's history, a `delete` version of that entry at its version or above,
    in the file or the tenant: else a restore would make an entry that never existed."""
    wanted = {r["entry_id"] for _, r in new}
    if not wanted:
        return
    held = await tables.stored(conn, "memory_entries", [(w,) for w in wanted])
    missing = wanted - {k[0] for k in held}
    if not missing:
        return
    held_deleted = await tables.deleted_versions(conn, sorted(missing))
    for n, r in new:
        entry_id, version = r["entry_id"], r["version"]
        if entry_id in missing and version > max(
            deleted.get(entry_id, 0), held_deleted.get(entry_id, 0)
        ):
            raise InvalidInput(
                ["line", str(n), "entry_id"],
                f"line {n} (entry_version): entry_id {entry_id!r} names an entry that is "
                "neither in the tenant nor earlier in the file, and no delete version of it "
                f"at version {version} or later, in the file or the tenant, records that it "
                "was deleted",
            )
