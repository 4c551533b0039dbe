"""Disk full on a tenant write: that request fails cleanly, nothing half-written, others go on.

Two ways to fill the disk: a real 2 MB tmpfs under the tenant's file (needs root and
mount(2); skipped where not permitted) and SQLite's `PRAGMA max_page_count` on every
connection of the tenant's engine (works anywhere). Either way SQLite answers SQLITE_FULL,
the group transaction rolls back whole (the group committer then fails every request of that
group, none stored), the edge answers 507 TENANT_DATABASE_FULL (GraphQL: `errors` with that
code), reads of the same tenant and writes of other tenants go on, and once there is room
again appends succeed. Every acknowledged append is in the file; no refused one is.
"""

import asyncio
import os
import sqlite3
import subprocess
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import event

from app.deps import Container
from tests.conftest import TenantFixture, make_tenant

Filler = Callable[[], Coroutine[Any, Any, None]]
BODY_BYTES = 60_000  # under the 64 KiB event body limit


def _event(key: str) -> dict[str, str]:
    return {
        "scope": "entity",
        "scopeRef": "ent_full",
        "kind": "note",
        "body": os.urandom(BODY_BYTES // 2).hex(),
        "idempotencyKey": key,
    }


def _stored_keys(path: Path) -> set[str]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT idempotency_key FROM memory_events").fetchall()
    return {r[0] for r in rows}


def _mount_tmpfs(mnt: Path) -> str | None:
    """Mount a 2 MB tmpfs at `mnt`; the reason when that is not permitted here."""
    mnt.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", str(mnt)],
        capture_output=True,
        check=False,
    )
    return None if done.returncode == 0 else done.stderr.decode().strip() or "mount failed"


def _move_onto(path: Path, mnt: Path) -> None:
    """The closed tenant file onto the tmpfs, a symlink in its place (SQLite follows it, so
    the -wal and -shm live on the tmpfs too)."""
    for suffix in ("-wal", "-shm"):
        assert not Path(f"{path}{suffix}").exists()  # closed cleanly: checkpointed
    (mnt / path.name).write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(mnt / path.name)


def _fill(mnt: Path) -> None:
    st = os.statvfs(mnt)
    (mnt / "filler").write_bytes(b"\0" * max(st.f_bavail * st.f_frsize - 16_384, 0))


def _move_back(path: Path, mnt: Path) -> None:
    # Closed with room again, so the last connection checkpointed the WAL into the file.
    # (Closed while full, the checkpoint fails: the WAL then holds committed transactions
    # and the file alone is not the database. Copies and backups take the -wal with it.)
    assert not (mnt / f"{path.name}-wal").exists()
    path.unlink()
    path.write_bytes((mnt / path.name).read_bytes())


async def _tmpfs(container: Container, tenant: TenantFixture, tmp: Path) -> AsyncIterator[Filler]:
    """The tenant's file on a 2 MB tmpfs; `fill()` leaves it ~no room."""
    mnt = tmp / "small-disk"
    why = await asyncio.to_thread(_mount_tmpfs, mnt)
    if why is not None:
        pytest.skip(f"cannot mount a tmpfs here: {why}")
    path = container.tenants.path(tenant.id)
    try:
        await container.tenants.aclose()
        _move_onto(path, mnt)

        async def fill() -> None:
            _fill(mnt)

        yield fill
        (mnt / "filler").unlink()
        await container.tenants.aclose()
        _move_back(path, mnt)  # back on the real disk, with room, for what follows
    finally:
        await container.tenants.aclose()
        await asyncio.to_thread(subprocess.run, ["umount", "-l", str(mnt)], check=False)


async def _page_limit(container: Container, tenant: TenantFixture) -> AsyncIterator[Filler]:
    async with container.tenants.lease(tenant.id) as db:
        engine = db.engine

    limit: list[int] = []

    def cap(dbapi_conn: Any, _record: Any) -> None:
        if limit:
            cur = dbapi_conn.cursor()
            cur.execute(f"PRAGMA max_page_count = {limit[0]}")
            cur.close()

    event.listen(engine.sync_engine, "connect", cap)

    async def fill() -> None:
        with sqlite3.connect(container.tenants.path(tenant.id)) as conn:
            limit.append(int(conn.execute("PRAGMA page_count").fetchone()[0]) + 4)
        await engine.dispose()  # every connection from now on has the cap

    yield fill
    event.remove(engine.sync_engine, "connect", cap)
    await engine.dispose()


@pytest.mark.parametrize("how", ["tmpfs", "max_page_count"])
async def test_disk_full_fails_the_write_cleanly(
    how: str, client: httpx.AsyncClient, container: Container, tmp_path: Path
) -> None:
    full = await make_tenant(container, "full")
    other = await make_tenant(container, "other")
    path = container.tenants.path(full.id)
    gen = _tmpfs(container, full, tmp_path) if how == "tmpfs" else _page_limit(container, full)
    fill = await gen.__anext__()
    try:
        acked: set[str] = set()
        refused: set[str] = set()

        r = await client.post("/memory/events", json=_event("before"), headers=full.headers)
        assert r.status_code == 201, r.text
        acked.add("before")
        await fill()

        # Concurrent appends (they share group transactions) and a batch: all refused cleanly.
        keys = [f"during-{i}" for i in range(6)]
        answers = await asyncio.gather(
            *(
                client.post(
                    "/memory/events",
                    json=_event(k),
                    headers={**full.headers, "X-Request-Id": f"full-{k}"},
                )
                for k in keys
            ),
            client.post(
                "/memory/events",
                json=[_event(f"batch-{i}") for i in range(8)],
                headers=full.headers,
            ),
        )
        for key, r in zip([*keys, "batch"], answers, strict=True):
            if r.status_code == 201:  # a small write may still fit: then it must be stored
                acked.add(key)
                continue
            assert r.status_code == 507, r.text
            assert r.headers["content-type"] == "application/problem+json"
            body = r.json()
            assert body["errors"][0]["code"] == "TENANT_DATABASE_FULL" and "full" in body["detail"]
            if key != "batch":
                assert body["requestId"] == f"full-{key}"
                refused.add(key)
            else:
                refused.update(f"batch-{i}" for i in range(8))
        assert refused, "nothing hit the full disk"
        gql = await client.post(
            "/graphql",
            json={
                "query": 'mutation { appendMemoryEvent(input: {scope: ENTITY, scopeRef: "e", '
                f'kind: "k", body: "{"x" * 60_000}", idempotencyKey: "gql"}}) '
                "{ event { id } } }"
            },
            headers={**full.headers, "X-Request-Id": "full-gql"},
        )
        [error] = gql.json()["errors"]
        assert error["extensions"] == {
            "code": "TENANT_DATABASE_FULL",
            "reason": "full",
            "requestId": "full-gql",
        }
        refused.add("gql")

        # Reads of the full tenant and writes of another tenant go on meanwhile.
        read = await client.get("/memory/events?limit=5", headers=full.headers)
        assert read.status_code == 200 and len(read.json()["items"]) == min(len(acked), 5)
        ok = await client.post("/memory/events", json=_event("other"), headers=other.headers)
        assert ok.status_code == 201

        with pytest.raises(StopAsyncIteration):  # room again (and, for tmpfs, back on disk)
            await gen.__anext__()
        r = await client.post("/memory/events", json=_event("after"), headers=full.headers)
        assert r.status_code == 201, r.text
        acked.add("after")
        await container.tenants.aclose()
        stored = _stored_keys(path)
        assert acked <= stored and not (refused & stored)  # nothing lost, nothing half-written
    finally:
        await gen.aclose()  # a failed test still unmounts and removes the cap
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
