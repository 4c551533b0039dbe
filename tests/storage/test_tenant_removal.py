"""`jet-memory tenants remove`: the tenant's database (file or schema), keys and policy go,
a receipt stays in the control database, and the name can be used again."""

import asyncio
from pathlib import Path

import pytest
from sqlalchemy import text

from app import cli
from app.config import Settings
from app.deps import build
from app.services import events
from app.services.records import EventIn, Scope
from app.storage import postgres


@pytest.fixture
def env(
    tmp_path: Path,
    database_url: str | None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> Settings:
    monkeypatch.setenv("JET_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("JET_LOG_LEVEL", "warning")
    monkeypatch.setenv("JET_AUTH_CACHE_SECONDS", "0")
    if database_url is not None:
        monkeypatch.setenv("JET_DATABASE_URL", database_url)
    else:
        monkeypatch.delenv("JET_DATABASE_URL", raising=False)
    assert jet(capsys, "migrate")[0] == 0  # the one command besides `dev` that creates it
    return Settings()


def jet(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


async def _leftovers(settings: Settings, tenant_id: str) -> list[str]:
    """Files or schemas of the tenant still there."""
    if settings.database_url is None:
        return sorted(p.name for p in settings.tenants_dir.glob(f"{tenant_id}.db*"))
    engine = postgres.engine(settings.database_url.get_secret_value(), pool_size=1)
    try:
        async with engine.connect() as conn:
            rows = await conn.execute(
                text("SELECT schema_name FROM information_schema.schemata WHERE schema_name = :s"),
                {"s": postgres.tenant_schema(tenant_id)},
            )
            return [r[0] for r in rows]
    finally:
        await engine.dispose()


async def _fill(settings: Settings, tenant_id: str) -> None:
    c = await build(settings)
    try:
        async with c.tenants.lease(tenant_id) as db:
            await events.append_events(db, [EventIn(Scope.ENTITY, "ent_a", "note", "secret")])
    finally:
        await c.aclose()


async def _receipts(settings: Settings) -> list[dict[str, object]]:
    c = await build(settings)
    try:
        return await c.control.removals()
    finally:
        await c.aclose()


def test_remove_leaves_nothing_behind_and_frees_the_name(
    env: Settings, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = jet(capsys, "tenants", "create", "acme")
    assert code == 0
    tenant_id = out.split()[1]
    secret = out.splitlines()[-1]
    assert jet(capsys, "keys", "create", "acme")[0] == 0
    asyncio.run(_fill(env, tenant_id))
    assert asyncio.run(_leftovers(env, tenant_id))  # it exists before

    # Not at a terminal, without --yes: refused, nothing removed.
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    code, _, err = jet(capsys, "tenants", "remove", "acme")
    assert code == 2 and "--yes" in err
    assert asyncio.run(_leftovers(env, tenant_id))

    code, out, err = jet(capsys, "tenants", "remove", "acme", "--yes")
    assert code == 0, err
    assert f"tenant {tenant_id} (acme) removed" in out and "2 keys deleted" in out
    assert asyncio.run(_leftovers(env, tenant_id)) == []
    code, out, _ = jet(capsys, "tenants", "list")
    assert tenant_id not in out
    receipts = asyncio.run(_receipts(env))
    assert [(r["tenant_id"], r["name"], r["keys"]) for r in receipts] == [(tenant_id, "acme", 2)]
    assert secret not in str(receipts)

    async def key_works() -> bool:
        c = await build(env)
        try:
            return await c.auth.tenant_for(secret) is not None
        finally:
            await c.aclose()

    assert not asyncio.run(key_works())
    code, out, _ = jet(capsys, "tenants", "create", "acme")  # the name is free again
    assert code == 0 and out.split()[1] != tenant_id
    code, _, err = jet(capsys, "tenants", "remove", "nobody", "--yes")
    assert code == 1 and "nobody" in err


def test_operator_erasure_from_the_cli(env: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = jet(capsys, "tenants", "create", "acme")
    tenant_id = out.split()[1]
    asyncio.run(_fill(env, tenant_id))
    code, out, err = jet(
        capsys, "erase", "--tenant", "acme", "--scope", "entity", "--scope-ref", "ent_a", "--vacuum"
    )
    assert code == 0, err
    assert "1 events, 0 entries, 0 versions erased" in out
    code, out, _ = jet(capsys, "erasures", "--tenant", "acme")
    fields = out.strip().split("\t")
    assert fields[2:7] == ["subject", "entity", "ent_a", "", "1"] and fields[-1] == "operator"
    code, _, err = jet(capsys, "erase", "--tenant", "acme", "--scope", "galaxy")
    assert code == 1 and "--scope must be one of" in err
    code, _, err = jet(capsys, "erase", "--tenant", "acme", "--scope", "entity")
    assert code == 1 and "scopeRef" in err
