"""Export and import through the services, on the backend under test: a round trip into
another tenant answers every query the same; imports are idempotent; bad files fail whole,
before anything is written, naming the line."""

import hashlib
import io

import orjson
import pytest
from sqlalchemy import func, select

from app import ids
from app.deps import Container
from app.errors import Conflict, ExpectedError, InvalidInput, NotFound, TooLarge
from app.services import entries
from app.services.data_rights import history, importer, portability
from app.services.records import EntryIn, EntryPatch, EntrySource, Scope
from app.storage.models import events_table
from app.storage.tenants import TenantDb
from tests.conftest import TenantFixture, make_tenant
from tests.services.portability_data import (
    ABSENT,
    NOT_AN_ID,
    answers,
    fill,
    rebuild,
    version_line,
)
from tests.support.pooled import pooled_pragmas


async def export(db: TenantDb, **kw: object) -> bytes:
    return b"".join([chunk async for chunk in portability.export_lines(db, **kw)])  # type: ignore[arg-type]


def records(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)[1:-1]


async def import_bytes(db: TenantDb, data: bytes) -> importer.ImportResult:
    return await importer.import_file(db, io.BytesIO(data))


@pytest.fixture
async def filled(container: Container, tenant: TenantFixture, db: TenantDb) -> bytes:
    await fill(container, tenant.id, db)
    return await export(db)


@pytest.fixture
async def other(container: Container):
    t = await make_tenant(container, "other")
    async with container.tenants.lease(t.id) as leased:
        yield leased


async def test_a_round_trip_answers_every_query_the_same(
    db: TenantDb, other: TenantDb, filled: bytes
) -> None:
    head = orjson.loads(filled.splitlines()[0])
    assert (head["format"], head["version"]) == ("jet-memory-export", 1)
    assert "tenant" not in filled.splitlines()[0].decode()
    end = orjson.loads(filled.splitlines()[-1])
    assert end["counts"] == {
        "entry": 3,
        "event": 10,
        "provenance": 5,
        "entry_version": 1,
        "compaction_run": 1,
        "llm_call": 1,
    }
    assert end["sha256"] == hashlib.sha256(b"".join(records(filled))).hexdigest()
    event = next(orjson.loads(r) for r in records(filled) if b'"compressed_into":"mem' in r)
    for field in ("recorded_at", "compressed_at", "idempotency_key", "source_ref"):
        assert event[field], field

    result = await import_bytes(other, filled)
    assert result.stored == end["counts"] and not result.present
    again = await export(other)
    assert records(again) == records(filled)
    assert orjson.loads(again.splitlines()[-1])["sha256"] == end["sha256"]
    assert await answers(other) == await answers(db)


async def test_the_same_file_twice_and_the_same_line_twice_store_once(
    other: TenantDb, filled: bytes
) -> None:
    first = await import_bytes(other, filled)
    second = await import_bytes(other, filled)
    assert second.stored == dict.fromkeys(first.stored, 0)
    assert second.present == first.stored
    lines = records(filled)
    doubled = rebuild([lines[0], lines[0], *lines[1:], lines[4]])
    third = await import_bytes(other, doubled)
    assert sum(third.stored.values()) == 0 and third.records == len(lines) + 2
    assert records(await export(other)) == lines


async def test_a_conflicting_id_names_its_line(
    db: TenantDb, other: TenantDb, filled: bytes
) -> None:
    lines = records(filled)
    await import_bytes(other, filled)
    at = next(i for i, line in enumerate(lines) if b'"record":"event"' in line)
    changed = orjson.loads(lines[at])
    changed["body"] = "Something else entirely."
    lines[at] = orjson.dumps(changed) + b"\n"
    with pytest.raises(Conflict) as err:
        await import_bytes(other, rebuild(lines))
    # The header is line 1: record i is line i + 2.
    assert err.value.message.startswith(f"line {at + 2}: event {changed['id']} is already")
    assert "body" in err.value.message


async def test_a_reused_idempotency_key_is_a_conflict(other: TenantDb, filled: bytes) -> None:
    lines = records(filled)
    await import_bytes(other, filled)
    at = next(i for i, line in enumerate(lines) if b'"idempotency_key":"ent_acme-old-0"' in line)
    changed = orjson.loads(lines[at])
    changed["id"] = "evt_01aaaaaaaaaaaaaaaaaaaaaaaa"
    with pytest.raises(
        Conflict, match=f"line {len(lines) + 2}: idempotency_key .ent_acme-old-0. is"
    ):
        await import_bytes(other, rebuild([*lines, orjson.dumps(changed) + b"\n"]))


def _replace(data: bytes, old: bytes, new: bytes) -> bytes:
    assert old in data
    return data.replace(old, new, 1)


@pytest.mark.parametrize(
    ("damage", "error"),
    [
        (lambda d: b"", "no trailer"),
        (lambda d: d.splitlines(keepends=True)[0], "no trailer"),
        (lambda d: b"hello\n" + d, "line 1: not JSON"),
        (lambda d: b'{"a": 1}\n' + d, "line 1: not a jet-memory-export file"),
        (lambda d: _replace(d, b'"version":1', b'"version":2'), "format version 2 is not"),
        (lambda d: _replace(d, b"Call 1 with", b"Call 9 with"), "checksum mismatch"),
        (lambda d: b"".join(d.splitlines(keepends=True)[:-2]) + d.splitlines()[-1], "counts"),
        (lambda d: d + b"{}\n", "a line after the trailer"),
        (lambda d: _replace(d, b'"record":"llm_call"', b'"record":"llama"'), "unknown record"),
        (lambda d: _replace(d, b'"record":"llm_call"', b'"record":["x"]'), "unknown record"),
        (lambda d: _replace(d, b'"counts":{', b'"counts":[],"c":{'), "the trailer has no counts"),
    ],
)
async def test_a_bad_file_fails_before_anything_is_written(
    other: TenantDb, filled: bytes, damage: object, error: str
) -> None:
    with pytest.raises(InvalidInput, match=error):
        await import_bytes(other, damage(filled))  # type: ignore[operator]
    assert records(await export(other)) == []


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("body", "", "body must not be empty"),
        ("body", "x" * 70_000, "body is 70000 bytes; the limit is 65536 bytes"),
        ("scope", "galaxy", "scope must be one of"),
        ("occurred_at", "yesterday", "occurred_at must be an ISO 8601 time"),
        ("kind", 7, "kind must be a string"),
        ("colour", "red", "colour is not a field of a event record"),
        ("id", "evt_" + "x" * 40, "id is longer than 40 characters"),
        ("source_ref", "a\x00b", "source_ref must not contain NUL"),
        ("compressed_at", None, "compressed_at and compressed_into go together"),
    ],
)
async def test_a_bad_record_is_refused_naming_its_line_and_field(
    other: TenantDb, filled: bytes, field: str, value: object, message: str
) -> None:
    lines = records(filled)
    at = next(i for i, line in enumerate(lines) if b'"record":"event"' in line)
    changed = orjson.loads(lines[at])
    changed[field] = value
    lines[at] = orjson.dumps(changed) + b"\n"
    with pytest.raises(ExpectedError) as err:
        await import_bytes(other, rebuild(lines))
    assert err.value.message.startswith(f"line {at + 2} (event): ")
    assert message in err.value.message
    assert records(await export(other)) == []


async def test_a_line_over_the_bound_is_refused_unparsed(
    other: TenantDb, filled: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    longest = max(len(line) for line in filled.splitlines(keepends=True))
    monkeypatch.setattr(importer, "MAX_LINE_BYTES", longest - 1)
    with pytest.raises(InvalidInput, match=f"longer than {longest - 1} bytes"):
        await import_bytes(other, filled)


async def test_a_record_naming_a_missing_one_is_refused(other: TenantDb, filled: bytes) -> None:
    # Events folded into a summary, without the summary's entry line.
    lines = [r for r in records(filled) if b'"source":"compactor"' not in r]
    with pytest.raises(InvalidInput, match="compressed_into 'mem_.*' names a record"):
        await import_bytes(other, rebuild(lines))


async def test_a_scope_export_holds_that_subject_only(
    container: Container, tenant: TenantFixture, db: TenantDb, other: TenantDb
) -> None:
    await fill(container, tenant.id, db)
    await fill(container, tenant.id, db, ref="ent_globex")
    data = await export(db, scope=Scope.ENTITY, scope_ref="ent_globex")
    head = orjson.loads(data.splitlines()[0])
    assert head["records"] == ["entry", "event", "provenance", "entry_version"]
    kinds = [orjson.loads(r)["record"] for r in records(data)]
    assert kinds.count("entry") == 2 and kinds.count("event") == 9
    assert kinds.count("provenance") == 5
    assert b"ent_acme" not in data and b"Mondays" not in data
    await import_bytes(other, data)
    assert records(await export(other)) == records(data)


async def test_a_subject_export_is_bounded(
    container: Container, tenant: TenantFixture, db: TenantDb
) -> None:
    await fill(container, tenant.id, db)
    with pytest.raises(TooLarge, match="scope holds 16 records, over the 15"):
        await portability.subject_export(
            db, scope=Scope.ENTITY, scope_ref="ent_acme", max_records=15
        )
    lines = await portability.subject_export(
        db, scope=Scope.ENTITY, scope_ref="ent_acme", max_records=16
    )
    assert len([chunk async for chunk in lines]) == 5  # header, a page of each kind, trailer
    with pytest.raises(InvalidInput, match="scopeRef is required"):
        await portability.subject_export(db, scope=Scope.ENTITY, scope_ref=None, max_records=9)


async def test_pages_are_read_by_keyset(
    container: Container, tenant: TenantFixture, db: TenantDb, filled: bytes
) -> None:
    for snapshot in (True, False):
        paged = await export(db, page_size=2, snapshot=snapshot)
        assert records(paged) == records(filled)


async def test_a_number_over_what_a_backend_holds_is_refused(
    other: TenantDb, filled: bytes
) -> None:
    lines = records(filled)
    at = next(i for i, line in enumerate(lines) if b'"record":"entry"' in line)
    changed = orjson.loads(lines[at])
    changed["version"] = 2**40
    lines[at] = orjson.dumps(changed) + b"\n"
    with pytest.raises(InvalidInput, match=f"line {at + 2} \\(entry\\): version must be 0 to"):
        await import_bytes(other, rebuild(lines))


def test_batches_close_on_their_records_their_bytes_and_a_new_kind(
    filled: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    def sizes() -> list[tuple[str, int]]:
        return [(k.name, len(b)) for k, b in importer._batches(io.BytesIO(filled))]

    kinds = [orjson.loads(r)["record"] for r in records(filled)]
    whole = sizes()
    assert whole == [(k, kinds.count(k)) for k in dict.fromkeys(kinds)]
    monkeypatch.setattr(importer, "BATCH_RECORDS", 3)
    assert max(n for _, n in sizes()) == 3
    assert sum(n for _, n in sizes()) == len(kinds)
    monkeypatch.setattr(importer, "BATCH_BYTES", 1)  # one line reaches it
    assert [n for _, n in sizes()] == [1] * len(kinds)


async def test_an_import_in_many_batches_stores_them_in_order(
    db: TenantDb, other: TenantDb, filled: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Batches of two: each entry and provenance batch names events and entries that only
    # the batches before it stored, so a batch written out of order would be refused.
    monkeypatch.setattr(importer, "BATCH_RECORDS", 2)
    progress: list[tuple[int, int]] = []
    result = await importer.import_file(
        other, io.BytesIO(filled), progress=lambda done, total: progress.append((done, total))
    )
    assert result.records == len(records(filled))
    assert records(await export(other)) == records(filled)
    assert await answers(other) == await answers(db)
    done = [d for d, _ in progress]
    assert done == sorted(done) and progress[-1] == (len(records(filled)),) * 2


async def _events_held(db: TenantDb) -> int:
    async with db.engine.connect() as conn:
        return (await conn.execute(select(func.count()).select_from(events_table))).scalar_one()


async def test_a_conflict_stops_the_import_at_its_batch(
    other: TenantDb, filled: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = records(filled)
    first = next(i for i, line in enumerate(lines) if b'"record":"event"' in line)
    assert all(b'"record":"event"' in line for line in lines[first : first + 6])
    changed = orjson.loads(lines[first + 5])
    changed.update(body="Something else entirely.", compressed_at=None, compressed_into=None)
    await import_bytes(other, rebuild([orjson.dumps(changed) + b"\n"]))
    monkeypatch.setattr(importer, "BATCH_RECORDS", 2)
    with pytest.raises(Conflict, match=f"line {first + 7}: event .* is already stored"):
        await import_bytes(other, filled)
    # The events' batches [0, 1] and [2, 3] committed; [4, 5] rolled back whole; nothing
    # after it reached the tenant, though the next batch was read while it was written.
    assert await _events_held(other) == 4 + 1


class _ChangesAfterVerify(io.BytesIO):
    """A file whose lines change between the import's two passes (replaced on disk)."""

    def __init__(self, first: bytes, second: bytes) -> None:
        super().__init__(first)
        self._second = second

    def seek(self, offset: int, whence: int = 0) -> int:
        if self._second:
            self.__init__(self._second, b"")  # type: ignore[misc]
        return super().seek(offset, whence)


async def test_a_line_that_fails_while_a_batch_is_written_leaves_that_batch_whole(
    other: TenantDb, filled: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = records(filled)
    first = next(i for i, line in enumerate(lines) if b'"record":"event"' in line)
    llama = lines[first + 3].replace(b'"record":"event"', b'"record":"llama"')
    monkeypatch.setattr(importer, "BATCH_RECORDS", 2)
    with pytest.raises(InvalidInput, match=f"line {first + 5}: unknown record kind 'llama'"):
        await importer.import_file(
            other, _ChangesAfterVerify(filled, rebuild([*lines[: first + 3], llama]))
        )
    # The events' batch [0, 1] was being written as [2, llama] was read: it is whole.
    assert await _events_held(other) == 2


async def test_an_import_hands_its_connections_back_as_it_found_them(
    other: TenantDb, filled: bytes
) -> None:
    if other.engine.dialect.name != "sqlite":
        pytest.skip("PRAGMAs of SQLite connections")
    before = await pooled_pragmas(other.engine, "cache_size")
    await import_bytes(other, filled)
    assert await pooled_pragmas(other.engine, "cache_size") == before


# --------------------------------------------------------------------------- ids and history


async def assert_no_history(db: TenantDb, entry_id: str) -> None:
    assert (await history.versions(db, entry_id, first=10, after=None)).edges == []
    with pytest.raises(NotFound):
        await history.restore_entry(db, entry_id, 1, expected_version=None, by="operator")


@pytest.mark.parametrize(
    ("entry_id", "message"),
    [
        (NOT_AN_ID, "entry_id must be an id of the form mem_ and the 26 characters"),
        (ABSENT, f"entry_id '{ABSENT}' names an entry that is neither in the tenant nor"),
    ],
)
async def test_the_history_of_an_entry_that_never_existed_is_refused(
    other: TenantDb, entry_id: str, message: str
) -> None:
    with pytest.raises(InvalidInput) as err:
        await import_bytes(other, rebuild([version_line(entry_id)]))
    assert err.value.message.startswith(f"line 2 (entry_version): {message}")
    assert err.value.field == ["line", "2", "entry_id"]
    assert records(await export(other)) == []
    await assert_no_history(other, entry_id)


async def test_a_version_above_its_entrys_recorded_deletion_is_refused(other: TenantDb) -> None:
    lines = [version_line(ABSENT, 1, "delete"), version_line(ABSENT, 2)]
    with pytest.raises(InvalidInput, match="line 3 \\(entry_version\\): entry_id .* at version 2"):
        await import_bytes(other, rebuild(lines))
    await assert_no_history(other, ABSENT)


async def test_an_event_with_a_path_for_an_id_is_refused(other: TenantDb, filled: bytes) -> None:
    lines = records(filled)
    at = next(i for i, line in enumerate(lines) if b'"record":"event"' in line)
    changed = orjson.loads(lines[at])
    changed["id"] = "../../etc/passwd"
    lines[at] = orjson.dumps(changed) + b"\n"
    with pytest.raises(InvalidInput) as err:
        await import_bytes(other, rebuild(lines))
    assert err.value.message == (
        f"line {at + 2} (event): id must be an id of the form evt_ and the 26 characters of "
        "a lowercase ULID, got '../../etc/passwd'"
    )
    assert err.value.field == ["line", str(at + 2), "id"]
    assert records(await export(other)) == []


ID_FIELDS = [
    ("entry", "id", "mem"),
    ("event", "id", "evt"),
    ("event", "compressed_into", "mem"),
    ("provenance", "entry_id", "mem"),
    ("provenance", "event_id", "evt"),
    ("entry_version", "entry_id", "mem"),
    ("compaction_run", "id", "run"),
    ("compaction_run", "entries_created", "mem"),
    ("llm_call", "id", "llm"),
    ("llm_call", "run_id", "run"),
]


def test_every_field_holding_an_id_is_declared_and_tested() -> None:
    declared = {(k.name, f, p) for k in portability.KINDS for f, p in k.id_fields.items()}
    assert declared == set(ID_FIELDS)
    for kind in portability.KINDS:
        named = {f for f in kind.fields if f == "id" or f.endswith("_id")}
        assert named | set(kind.references) <= set(kind.id_fields), kind.name


@pytest.mark.parametrize(
    "bad",
    [
        "../../etc/passwd",
        "{prefix}_" + "0" * 25,  # a character short
        "{prefix}_" + "0" * 25 + "i",  # not Crockford base32
        "{prefix}_" + "0" * 25 + "A",  # not lowercase
        "{prefix}_8" + "0" * 25,  # over the 128 bits of a ULID
        "{other}_" + "0" * 26,  # another kind's id
        " {prefix}_" + "0" * 26,
    ],
)
@pytest.mark.parametrize(("kind", "field", "prefix"), ID_FIELDS)
async def test_a_malformed_id_in_any_id_field_is_refused_naming_its_line(
    other: TenantDb, filled: bytes, kind: str, field: str, prefix: str, bad: str
) -> None:
    value = bad.format(prefix=prefix, other="evt" if prefix != "evt" else "mem")
    assert not ids.is_id(value, prefix)
    lines = records(filled)
    at = next(
        i
        for i, line in enumerate(lines)
        if orjson.loads(line)["record"] == kind and orjson.loads(line)[field]
    )
    changed = orjson.loads(lines[at])
    changed[field] = [*changed[field], value] if isinstance(changed[field], list) else value
    lines[at] = orjson.dumps(changed) + b"\n"
    with pytest.raises(InvalidInput) as err:
        await import_bytes(other, rebuild(lines))
    assert err.value.message == (
        f"line {at + 2} ({kind}): {field} must be an id of the form {prefix}_ and the 26 "
        f"characters of a lowercase ULID, got {value!r}"
    )
    assert records(await export(other)) == []


def note(title: str) -> EntryIn:
    return EntryIn(
        scope=Scope.ENTITY,
        scope_ref="ent_acme",
        title=title,
        summary="v1",
        tags=["roas"],
        importance=3,
        source=EntrySource.MANUAL,
    )


async def deleted_entries(db: TenantDb) -> list[str]:
    """Entries whose history outlives them, in every shape a history takes; their ids."""
    updated = await entries.create_entry(db, note("Updated, then deleted"))
    await entries.update_entry(db, updated.id, EntryPatch(summary="v2"), by="key_portability")
    await entries.update_entry(db, updated.id, EntryPatch(summary="v3"), by="key_portability")
    await entries.delete_entry(db, updated.id, by="operator")
    plain = await entries.create_entry(db, note("Deleted unchanged"))
    await entries.delete_entry(db, plain.id, by="operator")
    twice = await entries.create_entry(db, note("Deleted, restored, deleted"))
    await entries.delete_entry(db, twice.id, by="operator")
    await history.restore_entry(db, twice.id, 1, expected_version=1, by="operator")
    await entries.update_entry(db, twice.id, EntryPatch(summary="v3"), by="key_portability")
    await entries.delete_entry(db, twice.id, by="operator")
    back = await entries.create_entry(db, note("Deleted, then restored"))
    await entries.delete_entry(db, back.id, by="operator")
    await history.restore_entry(db, back.id, 1, expected_version=1, by="operator")
    return [updated.id, plain.id, twice.id, back.id]


async def history_of(db: TenantDb, entry_ids: list[str]) -> list[object]:
    return [
        (await entries.get_entry(db, i), await history.versions(db, i, first=20, after=None))
        for i in entry_ids
    ]


async def test_a_tenant_with_deleted_entries_history_round_trips(
    container: Container,
    tenant: TenantFixture,
    db: TenantDb,
    other: TenantDb,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    await fill(container, tenant.id, db)
    gone = await deleted_entries(db)
    data = await export(db)
    versions = [orjson.loads(r) for r in records(data) if b'"record":"entry_version"' in r]
    assert {v["entry_id"] for v in versions} >= set(gone)
    # One record a batch: a deleted entry's versions reach the tenant before its delete.
    monkeypatch.setattr(importer, "BATCH_RECORDS", 1)
    await import_bytes(other, data)
    assert records(await export(other)) == records(data)
    assert await history_of(other, gone) == await history_of(db, gone)
    assert await entries.get_entry(other, gone[0]) is None
    back = await history.restore_entry(other, gone[0], 2, expected_version=3, by="operator")
    assert (back.id, back.version, back.summary) == (gone[0], 4, "v2")

    third = await make_tenant(container, "third")
    subject = await export(db, scope=Scope.ENTITY, scope_ref="ent_acme")
    async with container.tenants.lease(third.id) as leased:
        await import_bytes(leased, subject)
        assert records(await export(leased, scope=Scope.ENTITY, scope_ref="ent_acme")) == (
            records(subject)
        )
        assert await history_of(leased, gone) == await history_of(db, gone)


async def test_a_deletion_the_tenant_holds_admits_the_earlier_versions(other: TenantDb) -> None:
    await import_bytes(other, rebuild([version_line(ABSENT, 2, "delete")]))
    await import_bytes(other, rebuild([version_line(ABSENT, 1)]))
    got = await history.versions(other, ABSENT, first=10, after=None)
    assert [(v.node.version, v.node.change) for v in got.edges] == [(2, "delete"), (1, "update")]
    with pytest.raises(InvalidInput, match="line 2 \\(entry_version\\): entry_id .* at version 3"):
        await import_bytes(other, rebuild([version_line(ABSENT, 3)]))
