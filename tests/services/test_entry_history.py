"""Entry history through its service: versions kept on update and delete, read newest first
(also of a deleted entry), restored as a new version with expectedVersion."""

import pytest

from app.errors import Conflict, InvalidInput, NotFound
from app.services import entries
from app.services.data_rights import history
from app.services.records import EntryIn, EntryPatch, EntrySource, Scope
from app.storage.tenants import TenantDb


def note(**kw: object) -> EntryIn:
    base: dict[str, object] = {
        "scope": Scope.ENTITY,
        "scope_ref": "ent_acme",
        "title": "ROAS",
        "summary": "v1",
        "tags": ["roas"],
        "importance": 3,
    }
    base.update(kw)
    return EntryIn(**base)  # type: ignore[arg-type]


async def test_updates_and_delete_keep_each_replaced_version(db: TenantDb) -> None:
    e = await entries.create_entry(db, note())
    assert (await history.versions(db, e.id, first=10, after=None)).edges == []
    await entries.update_entry(db, e.id, EntryPatch(summary="v2"), by="key_a")
    await entries.update_entry(db, e.id, EntryPatch(title="ROAS 2", tags=[]), by="key_b")
    await entries.update_entry(db, e.id, EntryPatch(), by="key_b")  # no change, no version
    page = await history.versions(db, e.id, first=10, after=None)
    got = [
        (v.node.version, v.node.summary, v.node.title, v.node.change, v.node.changed_by)
        for v in page.edges
    ]
    assert got == [(2, "v2", "ROAS", "update", "key_b"), (1, "v1", "ROAS", "update", "key_a")]
    assert page.edges[1].node.tags == ["roas"]

    first = await history.versions(db, e.id, first=1, after=None)
    assert first.has_next_page and first.edges[0].node.version == 2
    rest = await history.versions(db, e.id, first=1, after=first.end_cursor)
    assert [v.node.version for v in rest.edges] == [1] and not rest.has_next_page

    await entries.delete_entry(db, e.id, by="key_c")
    gone = await history.versions(db, e.id, first=10, after=None)
    assert [(v.node.version, v.node.change, v.node.changed_by) for v in gone.edges][0] == (
        3,
        "delete",
        "key_c",
    )
    assert gone.edges[0].node.title == "ROAS 2"


async def test_restore_brings_back_an_earlier_version_as_a_new_one(db: TenantDb) -> None:
    e = await entries.create_entry(db, note())
    await entries.update_entry(db, e.id, EntryPatch(summary="v2", importance=5), by="key_a")
    with pytest.raises(Conflict) as stale:
        await history.restore_entry(db, e.id, 1, expected_version=1, by="key_a")
    assert stale.value.field == ["expectedVersion"]
    back = await history.restore_entry(db, e.id, 1, expected_version=2, by="key_b")
    assert (back.version, back.summary, back.importance, back.created_at) == (
        3,
        "v1",
        3,
        e.created_at,
    )
    top = (await history.versions(db, e.id, first=1, after=None)).edges[0].node
    assert (top.version, top.summary, top.change, top.changed_by) == (2, "v2", "restore", "key_b")

    with pytest.raises(Conflict) as missing:
        await history.restore_entry(db, e.id, 9, expected_version=None, by="k")
    assert missing.value.field == ["version"]
    with pytest.raises(NotFound) as nobody:
        await history.restore_entry(db, "mem_nope", 1, expected_version=None, by="k")
    assert nobody.value.field == ["id"]
    with pytest.raises(InvalidInput):
        await history.restore_entry(db, e.id, 0, expected_version=None, by="k")
    with pytest.raises(InvalidInput):
        await history.versions(db, e.id, first=10, after="junk")


async def test_a_deleted_entry_comes_back_under_its_id(db: TenantDb) -> None:
    e = await entries.create_entry(db, note())
    await entries.update_entry(db, e.id, EntryPatch(summary="v2"), by="key_a")
    await entries.delete_entry(db, e.id, by="key_a")
    with pytest.raises(Conflict):
        await history.restore_entry(db, e.id, 1, expected_version=1, by="key_a")
    back = await history.restore_entry(db, e.id, 1, expected_version=2, by="key_a")
    assert (back.id, back.version, back.summary) == (e.id, 3, "v1")
    assert await entries.get_entry(db, e.id) == back


async def test_a_deleted_compactor_summary_is_not_restored(db: TenantDb) -> None:
    from app.storage.transactions import write_transaction

    async with write_transaction(db.engine) as conn:
        e = await entries.insert_entry(conn, note(source=EntrySource.COMPACTOR))
    await entries.delete_entry(db, e.id, by="key_a")
    with pytest.raises(Conflict, match="compaction run"):
        await history.restore_entry(db, e.id, 1, expected_version=None, by="key_a")
