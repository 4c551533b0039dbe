"""Several API processes on one data directory (or one PostgreSQL database with
`--backend postgresql`): real `jet-memory serve` processes on 127.0.0.1.

Two separate `serve` processes (ports A and B) make "a write through another process"
exact; `serve --workers 2` (one port) shows uvicorn's supervisor: metrics summed over the
workers, a killed worker replaced, SIGTERM draining both with no acknowledged append lost.
"""

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from app.config import Settings
from app.deps import Container, build
from app.ids import TENANT, new_id
from app.services import tenants as tenant_service
from app.storage.models import events_table
from app.storage.transactions import read_transaction
from tests.support.servers import alive, free_port, serving
from tests.test_serve_process import JET, cli

pytestmark = pytest.mark.slow
# Two Python processes importing the app at once on a shared 2-core machine.
STARTUP_SECONDS = 120.0
AUTH_CACHE_SECONDS = 2.0


@pytest.fixture
def env(tmp_path: Path, database_url: str | None) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("JET_")}
    extra = {"JET_DATABASE_URL": database_url} if database_url else {}
    return (
        environ
        | extra
        | {
            "JET_DATA_DIR": str(tmp_path / "data"),
            "JET_AUTH_CACHE_SECONDS": str(AUTH_CACHE_SECONDS),
            "JET_LOG_LEVEL": "info",
            "PYTHONUNBUFFERED": "1",
        }
    )


def settings_of(env: dict[str, str]) -> Settings:
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=Path(env["JET_DATA_DIR"]),
        database_url=env.get("JET_DATABASE_URL"),
    )


@contextlib.contextmanager
def apis(
    env: dict[str, str], tmp_path: Path, *names: str, workers: int = 1
) -> Iterator[dict[str, tuple[str, subprocess.Popen[bytes]]]]:
    """`serve` processes started together (each `workers` processes), by name: URL and
    process; each stopped by its PID afterwards."""
    with contextlib.ExitStack() as stack:
        ports = {name: free_port() for name in names}
        started: dict[str, tuple[str, subprocess.Popen[bytes]]] = {}
        for name in names:
            url = f"http://127.0.0.1:{ports[name]}"
            argv = [
                str(JET),
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                str(ports[name]),
                "--workers",
                str(workers),
            ]
            proc = stack.enter_context(
                serving(
                    argv,
                    url=url,
                    env=env,
                    cwd=tmp_path,
                    log=tmp_path / f"{name}.log",
                    startup_seconds=STARTUP_SECONDS,
                )
            )
            started[name] = (url, proc)
        yield started


async def stored_events(env: dict[str, str], tenant_id: str) -> list[tuple[str, str | None]]:
    """(sourceRef, idempotency key) of every event the tenant's database holds."""
    container = await build(settings_of(env))
    try:
        async with container.tenants.lease(tenant_id) as db, read_transaction(db.engine) as conn:
            cols = (events_table.c.source_ref, events_table.c.idempotency_key)
            return [(r[0], r[1]) for r in await conn.execute(select(*cols))]
    finally:
        await container.aclose()


def new_tenant(env: dict[str, str], tmp_path: Path) -> tuple[str, str]:
    out = cli(env, tmp_path, "tenants", "create", f"acme-{time.time_ns()}")
    match = re.search(r"\b(ten_[0-9a-z]{26})\b", out[0])
    assert match, out
    return match.group(1), out[-1]


def event(ref: str, body: str = "") -> dict[str, Any]:
    return {
        "scope": "entity",
        "scopeRef": "ent_1",
        "kind": "note",
        "body": body or f"event {ref}",
        "sourceRef": ref,
    }


# --------------------------------------------------------------- appends, two processes


async def test_appends_to_one_tenant_through_two_processes_at_once(
    env: dict[str, str], tmp_path: Path
) -> None:
    cli(env, tmp_path, "migrate")
    tenant_id, key = new_tenant(env, tmp_path)
    headers = {"Authorization": f"Bearer {key}"}
    acked: dict[str, str] = {}  # sourceRef -> event id
    statuses: list[tuple[int, str]] = []
    with apis(env, tmp_path, "a", "b") as servers:
        urls = [servers["a"][0], servers["b"][0]]
        async with httpx.AsyncClient(timeout=30) as client:

            async def batch(w: int, n: int) -> None:
                items = [event(f"w{w}-{n}-{i}") for i in range(5)]
                r = await client.post(f"{urls[n % 2]}/memory/events", json=items, headers=headers)
                statuses.append((r.status_code, r.text[:200]))
                if r.status_code == 201:
                    for e in r.json()["items"]:
                        acked[e["sourceRef"]] = e["id"]

            async def keyed(n: int) -> None:
                # The same key through both processes at the same moment.
                same = [
                    client.post(
                        f"{url}/memory/events",
                        json=event(f"same-{n}"),
                        headers=headers | {"Idempotency-Key": f"same-{n}"},
                    )
                    for url in urls
                ]
                other = [
                    client.post(
                        f"{url}/memory/events",
                        json=event(f"diff-{n}", f"body {i}"),
                        headers=headers | {"Idempotency-Key": f"diff-{n}"},
                    )
                    for i, url in enumerate(urls)
                ]
                r1, r2, d1, d2 = await asyncio.gather(*same, *other)
                assert sorted((r1.status_code, r2.status_code)) == [200, 201], (r1.text, r2.text)
                assert r1.json()["id"] == r2.json()["id"]
                acked[f"same-{n}"] = r1.json()["id"]
                codes = sorted((d1.status_code, d2.status_code))
                assert codes == [201, 409], (d1.text, d2.text)
                winner = d1 if d1.status_code == 201 else d2
                acked[f"diff-{n}"] = winner.json()["id"]

            async def writer(w: int) -> None:
                for n in range(12):
                    await batch(w, n)
                    if w < 4:
                        await keyed(w * 100 + n)

            await asyncio.gather(*(writer(w) for w in range(16)))

    bad = [s for s in statuses if s[0] != 201]
    assert not bad, bad[:3]  # no 503 "busy": writers of both processes waited their turn
    rows = await stored_events(env, tenant_id)
    refs = [ref for ref, _ in rows]
    assert len(refs) == len(set(refs)), "an event stored twice"
    assert set(refs) == set(acked), "lost or unacknowledged events"
    keys = [k for _, k in rows if k is not None]
    assert len(keys) == len(set(keys)) == 2 * 4 * 12


# --------------------------------------------------------------------- caches


SEARCH = "/memory?search=quokka&scope=entity&scopeRef=ent_1"
CONTEXT = """query { memoryContext(scope: ENTITY, scopeRef: "ent_1", query: "quokka") {
  entries { id title } } }"""


def cache_lookups(client: httpx.Client, url: str) -> dict[str, float]:
    found: dict[str, float] = {}
    for line in client.get(f"{url}/metrics").text.splitlines():
        m = re.match(r'jet_entry_search_cache_lookups_total\{result="(\w+)"\} (\S+)', line)
        if m:
            found[m.group(1)] = float(m.group(2))
    return found


def test_caches_never_serve_a_page_older_than_another_process_s_write(
    env: dict[str, str], tmp_path: Path
) -> None:
    cli(env, tmp_path, "migrate")
    _, key = new_tenant(env, tmp_path)
    headers = {"Authorization": f"Bearer {key}"}
    with apis(env, tmp_path, "a", "b") as servers, httpx.Client(timeout=30) as client:
        a, b = servers["a"][0], servers["b"][0]

        def titles_a() -> set[str]:
            r = client.get(a + SEARCH, headers=headers)
            assert r.status_code == 200, r.text
            return {e["title"] for e in r.json()["items"]}

        def context_a() -> set[str]:
            r = client.post(f"{a}/graphql", json={"query": CONTEXT}, headers=headers)
            assert r.status_code == 200 and "errors" not in r.json(), r.text
            return {e["title"] for e in r.json()["data"]["memoryContext"]["entries"]}

        def create(url: str, title: str) -> str:
            body = {
                "scope": "entity",
                "scopeRef": "ent_1",
                "title": title,
                "summary": f"{title}: the quokka account",
            }
            r = client.post(f"{url}/memory", json=body, headers=headers)
            assert r.status_code == 201, r.text
            return str(r.json()["id"])

        create(a, "first")
        assert titles_a() == {"first"} and context_a() == {"first"}
        # Cached: the same two calls again are hits. The indexer's vectors for "first" move
        # the entries revision on when they land, which may fall between two calls: then the
        # pair is asked again (bounded polling, not a timing test).
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            before = cache_lookups(client, a)
            assert titles_a() == {"first"} and context_a() == {"first"}
            after = cache_lookups(client, a)
            if after.get("hit", 0) >= before.get("hit", 0) + 2:
                break
            assert time.monotonic() < deadline, (before, after)

        # Each change through B is seen by A's next search and context, not its cached pages.
        second = create(b, "second")
        assert titles_a() == {"first", "second"}
        assert context_a() == {"first", "second"}
        r = client.put(f"{b}/memory/{second}", json={"title": "renamed"}, headers=headers)
        assert r.status_code == 200, r.text
        assert titles_a() == {"first", "renamed"}
        assert context_a() == {"first", "renamed"}
        assert client.delete(f"{b}/memory/{second}", headers=headers).status_code == 204
        assert titles_a() == {"first"}
        assert context_a() == {"first"}
        assert cache_lookups(client, a).get("stale", 0) > after.get("stale", 0)


# ------------------------------------------------ new tenants, first open, revocation


async def _tenant_without_database(env: dict[str, str]) -> tuple[str, str]:
    """A tenant in the control database whose own database does not exist yet: its first
    request through any process creates and migrates it."""
    container: Container = await build(settings_of(env))
    try:
        tenant = await container.control.insert_tenant(tenant_id=new_id(TENANT), name="late")
        issued = await tenant_service.create_key(container.control, tenant.id)
        return tenant.id, issued.secret
    finally:
        await container.aclose()


async def test_tenants_created_opened_and_revoked_across_processes(
    env: dict[str, str], tmp_path: Path
) -> None:
    # The control database exists before the servers and the CLI race on it.
    cli(env, tmp_path, "migrate")
    tenant_id, late_key = await _tenant_without_database(env)
    with apis(env, tmp_path, "a", "b") as servers:
        urls = [servers["a"][0], servers["b"][0]]
        async with httpx.AsyncClient(timeout=30) as client:
            # Both processes open (and so migrate) the new tenant's database at once.
            headers = {"Authorization": f"Bearer {late_key}"}
            answers = await asyncio.gather(
                *(
                    client.post(
                        f"{urls[i % 2]}/memory/events", json=event(f"first-{i}"), headers=headers
                    )
                    for i in range(16)
                )
            )
            assert [r.status_code for r in answers] == [201] * 16, [r.text for r in answers]
            assert len(await stored_events(env, tenant_id)) == 16

            # Tenants created by CLI processes at once, while both servers run.
            created = await asyncio.gather(
                *(asyncio.to_thread(new_tenant, env, tmp_path) for _ in range(3))
            )
            assert len({t for t, _ in created}) == 3
            for _, key in created:
                for url in urls:
                    r = await client.get(
                        f"{url}/memory/events", headers={"Authorization": f"Bearer {key}"}
                    )
                    assert r.status_code == 200, r.text

            # A key revoked through the CLI stops working in both within the auth cache.
            key = created[0][1]
            auth = {"Authorization": f"Bearer {key}"}
            listed = cli(env, tmp_path, "keys", "list", created[0][0])
            key_id = re.search(r"\b(key_[0-9a-z]{26})\b", "\n".join(listed))
            assert key_id, listed
            for url in urls:  # cached in both now
                assert (await client.get(f"{url}/memory/events", headers=auth)).status_code == 200
            cli(env, tmp_path, "keys", "revoke", key_id.group(1))
            revoked_at = time.monotonic()
            refused: dict[str, float] = {}
            while len(refused) < 2 and time.monotonic() - revoked_at < AUTH_CACHE_SECONDS + 5:
                for url in urls:
                    if url not in refused:
                        r = await client.get(f"{url}/memory/events", headers=auth)
                        if r.status_code == 401:
                            refused[url] = time.monotonic() - revoked_at
                await asyncio.sleep(0.05)
            assert len(refused) == 2, refused
            # The CLI's revoke returns after the cache window's start: within it, plus a poll.
            assert max(refused.values()) <= AUTH_CACHE_SECONDS + 0.5, refused


# -------------------------------------------------------- serve --workers 2, one port


def worker_pids(parent: int) -> set[int]:
    """uvicorn's worker processes of `parent` (its multiprocessing children, not the
    resource tracker)."""
    pids = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat[1]) == parent and b"spawn_main" in cmdline:
            pids.add(int(entry.name))
    return pids


def healthz_count(client: httpx.Client, url: str) -> float:
    text = client.get(f"{url}/metrics").text
    m = re.search(
        r'jet_http_requests_total\{method="GET",route="/healthz",status="200"\} (\S+)', text
    )
    return float(m.group(1)) if m else 0.0


def test_workers_share_a_port_sum_their_metrics_and_a_killed_one_is_replaced(
    env: dict[str, str], tmp_path: Path
) -> None:
    with apis(env, tmp_path, "api", workers=2) as servers:
        url, proc = servers["api"]
        log = tmp_path / "api.log"
        with httpx.Client(timeout=30) as client:
            deadline = time.monotonic() + STARTUP_SECONDS
            while len(worker_pids(proc.pid)) < 2 or "complete" not in log.read_text():
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
            first = worker_pids(proc.pid)
            directory = re.search(r"summed in (\S+)", log.read_text())
            assert directory, log.read_text()
            # Both workers answer: one connection each, many at once (the kernel hands
            # each new connection to whichever worker accepts first).
            baseline = healthz_count(client, url)
            n = 0
            while {p.name.rsplit("_", 1)[1] for p in Path(directory.group(1)).glob("counter_*")} < {
                f"{p}.db" for p in first
            }:
                asyncio.run(_many_healthz(url, 64))
                n += 64
                assert n < 64 * 50, "one worker took every connection"
            # The scrape before ours, and ours, are answered by either worker.
            assert healthz_count(client, url) == baseline + n

            victim = min(first)
            os.kill(victim, signal.SIGKILL)
            deadline = time.monotonic() + STARTUP_SECONDS
            while True:
                now = worker_pids(proc.pid)
                if victim not in now and len(now) == 2 and alive(max(now)):
                    break
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
            assert "died" in log.read_text()
            replacement = (now - first).pop()
            while f"Started server process [{replacement}]" not in log.read_text():
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
            asyncio.run(_many_healthz(url, 64))
            # The killed worker's counts stay in the sum: counters never go back.
            assert healthz_count(client, url) == baseline + n + 64
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, log.read_text()
        assert not Path(directory.group(1)).exists()  # cleaned at the end of the run


async def _many_healthz(url: str, n: int) -> None:
    limits = httpx.Limits(max_keepalive_connections=0)  # a new connection per request
    async with httpx.AsyncClient(timeout=30, limits=limits) as client:
        answers = await asyncio.gather(*(client.get(f"{url}/healthz") for _ in range(n)))
    assert all(r.status_code == 200 for r in answers)
