"""The console in a real headless browser: Debian's chromium driven by playwright-core
(console.mjs), against a real `jet-memory serve` on 127.0.0.1 with seeded memory (one scope
of 100,000 events), every request elsewhere aborted. A person's path through every screen,
axe-core's check, and the screenshots in docs/console/ (written when missing or with
JET_UPDATE_SCREENSHOT=1). Skipped without the browser, like the GraphiQL test."""

import gzip
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from app import ids
from app.edge.console.routes import CONSOLE_DIR, VENDOR
from app.storage import scopes
from app.storage.changes import outbox
from app.storage.search import fulltext
from app.storage.types import sqlite_text
from tests.support.servers import free_port, serving

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
JET = Path(sys.executable).parent / "jet-memory"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
SCRIPT = HERE / "console.mjs"
AXE = HERE / "node_modules" / "axe-core" / "axe.min.js"
ASSETS = ROOT / "assets" / "node_modules"
SHOTS = ROOT / "docs" / "console"
BIG, ACME, GONE = "ent_big", "ent_acme", "ent_gone"
BIG_EVENTS = 100_000
BROWSER_TIMEOUT_MS = 30_000

pytestmark = pytest.mark.slow


def _missing() -> str | None:
    if not (ASSETS / "preact").is_dir():
        return "the console's npm files are not installed (make assets)"
    if shutil.which("node") is None:
        return "node is not installed"
    if not Path(CHROMIUM).is_file():
        return f"{CHROMIUM} is not installed (make browser)"
    if not (HERE / "node_modules" / "playwright-core").is_dir() or not AXE.is_file():
        return "playwright-core or axe-core is not installed (make browser)"
    return None


def seed_big_scope(db: Path) -> None:
    """BIG_EVENTS events in one scope, written with the event writer's own statements
    (insert, full-text index, outbox, scope summary) before the server starts."""
    conn = sqlite3.connect(db, isolation_level=None)
    start = datetime(2026, 11, 1, tzinfo=UTC)
    insert = (
        "INSERT INTO memory_events (id, scope, scope_ref, kind, body, source, occurred_at,"
        " recorded_at) VALUES (?,?,?,?,?,?,?,?)"
    )
    for chunk in range(0, BIG_EVENTS, 20_000):
        conn.execute("BEGIN IMMEDIATE")
        (after,) = conn.execute(fulltext.LAST_EVENT_SEQ_SQL).fetchone()
        rows = []
        for i in range(chunk, chunk + 20_000):
            at = sqlite_text(start + timedelta(seconds=i))
            body = f"Call {i} with Big Co about the spring campaign budget."
            event_id = ids.new_id(ids.EVENT)
            rows.append((event_id, "entity", BIG, "call_summary", body, "seed", at, at))
        conn.executemany(insert, rows)
        writer = (fulltext.INDEX_EVENTS_SQL, outbox.ANNOUNCE_EVENTS_SQL, scopes.COUNT_EVENTS_SQL)
        for sql in writer:
            conn.execute(sql, {"after": after})
        conn.execute("COMMIT")
    conn.close()


def gql(url: str, key: str, query: str, **variables: object) -> dict:
    r = httpx.post(
        f"{url}/graphql",
        json={"query": query, "variables": variables},
        headers={"Authorization": f"Bearer {key}"},
        timeout=60,
    )
    body = r.json()
    assert r.status_code == 200 and "errors" not in body, body
    return body["data"]


def seed_over_the_api(url: str, key: str) -> None:
    old = (datetime.now(UTC) - timedelta(days=200)).isoformat()
    events = [
        {
            "scope": "ENTITY",
            "scopeRef": ACME,
            "kind": "call_summary",
            "occurredAt": old,
            "body": f"Quarterly call {i}: Acme reviewed the display budget and search results.",
        }
        for i in range(4)
    ] + [
        {
            "scope": "ENTITY",
            "scopeRef": ACME,
            "kind": "decision",
            "body": "Acme agreed to raise the ROAS target to 4.0 from Q3.",
        },
        {
            "scope": "ENTITY",
            "scopeRef": ACME,
            "kind": "call_summary",
            "body": "Call with Acme: the renewal is likely; they want a spring push.",
        },
        {"scope": "ENTITY", "scopeRef": GONE, "kind": "note", "body": "A subject to erase."},
    ]
    append = """mutation($input: [AppendMemoryEventInput!]!) {
      appendMemoryEvents(input: $input) { errors { message } } }"""
    assert gql(url, key, append, input=events)["appendMemoryEvents"]["errors"] == []
    create = """mutation($input: CreateMemoryEntryInput!) {
      createMemoryEntry(input: $input) { errors { message } } }"""
    for title, summary, tags in [
        ("ROAS target", "Acme targets a ROAS of 4.0 from Q3.", ["roas", "targets"]),
        ("Main contact", "Dana Reyes, head of growth, prefers email.", ["contacts"]),
    ]:
        entry = {
            "scope": "ENTITY",
            "scopeRef": ACME,
            "title": title,
            "summary": summary,
            "tags": tags,
            "importance": 4,
        }
        assert gql(url, key, create, input=entry)["createMemoryEntry"]["errors"] == []
    run = "mutation { runCompaction(input: { dryRun: false }) { run { entriesCreated { id } } } }"
    assert gql(url, key, run)["runCompaction"]["run"]["entriesCreated"]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, str]]:
    missing = _missing()
    if missing is not None:
        if os.environ.get("JET_REQUIRE_BROWSER") == "1":
            pytest.fail(f"the browser test must run here: {missing}")
        pytest.skip(missing)
    env = {k: v for k, v in os.environ.items() if not k.startswith("JET_")}
    env |= {"JET_DATA_DIR": str(tmp_path / "data"), "PYTHONUNBUFFERED": "1"}
    migrate = [str(JET), "migrate"]
    subprocess.run(migrate, env=env, cwd=tmp_path, capture_output=True, timeout=60, check=True)
    created = subprocess.run(
        [str(JET), "tenants", "create", "Console Test"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip().splitlines()[-1]
    (db,) = (tmp_path / "data" / "tenants").glob("*.db")
    seed_big_scope(db)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [str(JET), "serve", "--host", "127.0.0.1", "--port", str(port)]
    with serving(argv, url=url, env=env, cwd=tmp_path, log=tmp_path / "serve.log"):
        seed_over_the_api(url, key)
        yield url, key


def first_load_gzip_bytes() -> int:
    """The compressed size of everything the first load fetches: the page, its styles,
    every module of the console and the two npm files."""
    files = [
        CONSOLE_DIR / "index.html",
        CONSOLE_DIR / "console.css",
        *CONSOLE_DIR.glob("*.js"),
        *(ASSETS / rel for rel in VENDOR.values()),
    ]
    return sum(len(gzip.compress(f.read_bytes(), 9)) for f in files)


def test_a_person_goes_through_every_screen(server: tuple[str, str], tmp_path: Path) -> None:
    url, key = server
    shots = tmp_path / "shots"
    shots.mkdir()
    env = os.environ | {
        "JET_URL": url,
        "JET_API_KEY": key,
        "JET_BIG_REF": BIG,
        "JET_ACME_REF": ACME,
        "JET_GONE_REF": GONE,
        "JET_SHOTS": str(shots),
        "AXE": str(AXE),
        "CHROMIUM": CHROMIUM,
        "E2E_TIMEOUT_MS": str(BROWSER_TIMEOUT_MS),
    }
    done = subprocess.run(
        ["node", str(SCRIPT)],
        env=env,
        cwd=HERE,
        capture_output=True,
        text=True,
        timeout=10 * BROWSER_TIMEOUT_MS / 1000,
    )
    lines = done.stdout.strip().splitlines()
    assert lines, f"no result from the browser script:\n{done.stderr}"
    result = json.loads(lines[-1])
    assert done.returncode == 0 and "error" not in result, result.get("error", done.stderr)
    steps = result["steps"]

    # Offline-clean: nothing but the server under test was asked for; the key never in a URL.
    assert result["external"] == [] and result["failed"] == [], result
    assert not any(key in u for u in result["urls"] + result["sockets"])
    assert result["console"] == [], result["console"]  # no CSP violation, no script error
    # The key: a wrong one is a clear message; the right one kept for this tab only.
    assert "not accepted" in steps["badKey"] and "revoked" in steps["badKey"]
    assert steps["keyInStorage"] == ["jet-memory-console:key"]
    # Scopes with their counts.
    assert f"{BIG}\n{BIG_EVENTS} events · 0 entries" in steps["scopes"]
    assert "entity ent_acme" in steps["scopes"]
    # The timeline: pages follow by scrolling; compressed events link to their summary.
    assert steps["afterScroll"] >= 100
    assert steps["compressedShown"] == 4
    assert "Quarterly call" in steps["summary"]
    assert steps["kindFiltered"] == 1
    # Entries: search with score and matched words; an edit; a concurrent edit shown, kept.
    assert steps["arrowKeyTab"] == "Entries"
    assert "score" in steps["search"] and "matched: " in steps["search"]
    assert "Someone else saved this entry first" in steps["conflict"]
    assert steps["afterConflict"]["summary"] == "Changed by an agent."
    assert steps["afterConflict"]["title"] == "ROAS target"
    assert steps["restored"] == {"summary": "Acme targets a ROAS of 4.0 from Q3.", "version": 4}
    assert steps["sources"] == "Source events (4)"
    assert "Renewal call booked" not in steps["afterDelete"]
    # The context preview, with what was left out.
    assert "## Memory" in steps["context"] and "Left out" in steps["context"]
    assert "Some relevant memory did not fit the budget." in steps["context"]
    assert "new change" in steps["live"] and "Show them" in steps["live"]
    assert "dry run (api)" in steps["runs"] and "run (api)\t1 / 1\t4" in steps["runs"]
    assert steps["dryRun"].startswith("Dry run succeeded: a run now would compact 0 of")
    assert "Request id: req_forced" in steps["serverError"]
    assert steps["eraseDisabledFirst"] is True and "Receipt" in steps["erased"]
    assert steps["overflow320"] <= 320
    # Accessibility: no serious or critical violation on any screen checked.
    serious = {
        name: [v for v in found if v["impact"] in ("serious", "critical")]
        for name, found in result["axe"].items()
    }
    assert all(v == [] for v in serious.values()), serious
    assert all(v == [] for v in result["axe"].values()), result["axe"]  # nor a milder one
    assert len(result["axe"]) == 6

    axe = result["axe"]
    size = first_load_gzip_bytes()
    assert size < 300_000
    print(
        f"\nconsole first load: {size} bytes gzip; first page of {BIG_EVENTS} events: "
        f"{steps['firstPageFetchRenderMs']} ms fetch to render, "
        f"{steps['firstPageClickMs']} ms click to visible; axe (all impacts): "
        f"{ {n: [(v['id'], v['impact'], v['target']) for v in f] for n, f in axe.items()} }"
    )
    for shot in shots.glob("*.png"):
        assert shot.stat().st_size > 5_000
        target = SHOTS / shot.name
        if not target.exists() or os.environ.get("JET_UPDATE_SCREENSHOT") == "1":
            SHOTS.mkdir(exist_ok=True)
            shutil.copyfile(shot, target)
