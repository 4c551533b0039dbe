"""GraphiQL in a real headless browser: Debian's chromium driven by playwright-core
(graphiql.mjs), against a real `jet-memory serve` on 127.0.0.1, with every request to
anywhere else aborted. `make browser` installs both; without them this test is skipped,
unless JET_REQUIRE_BROWSER=1 (`make test` sets it where it could install them).
The screenshot in docs/graphiql.png comes from this test (JET_UPDATE_SCREENSHOT=1)."""

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.servers import free_port, serving

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
JET = Path(sys.executable).parent / "jet-memory"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
SCRIPT = HERE / "graphiql.mjs"
SCREENSHOT = ROOT / "docs" / "graphiql.png"
STARTUP_SECONDS = 90  # a loaded machine starts the server slowly
BROWSER_TIMEOUT_MS = 20_000

pytestmark = pytest.mark.slow

APPEND = """mutation($input: AppendMemoryEventInput!) {
  appendMemoryEvent(input: $input) { event { id } errors { code message } } }"""
QUERY = "{ memoryEvents { edges { node { id } } } }"


def _missing() -> str | None:
    if not (ROOT / "assets" / "node_modules" / "graphiql").is_dir():
        return "GraphiQL's assets are not installed (make assets)"
    if shutil.which("node") is None:
        return "node is not installed"
    if not Path(CHROMIUM).is_file():
        return f"{CHROMIUM} is not installed (make browser)"
    if not (HERE / "node_modules" / "playwright-core").is_dir():
        return "playwright-core is not installed (make browser)"
    return None


@pytest.fixture
def browser_available() -> None:
    """Skip (or, with JET_REQUIRE_BROWSER=1, fail) before starting anything."""
    missing = _missing()
    if missing is not None:
        if os.environ.get("JET_REQUIRE_BROWSER") == "1":
            pytest.fail(f"the browser test must run here: {missing}")
        pytest.skip(missing)


@pytest.fixture
def server(browser_available: None, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A running `jet-memory serve` with one tenant: (base URL, API key); stopped by PID."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JET_")}
    env |= {"JET_DATA_DIR": str(tmp_path / "data"), "PYTHONUNBUFFERED": "1"}
    migrate = [str(JET), "migrate"]
    subprocess.run(migrate, env=env, cwd=tmp_path, capture_output=True, timeout=60, check=True)
    created = subprocess.run(
        [str(JET), "tenants", "create", "Browser Test"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip().splitlines()[-1]
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [str(JET), "serve", "--host", "127.0.0.1", "--port", str(port)]
    with serving(
        argv,
        url=url,
        env=env,
        cwd=tmp_path,
        log=tmp_path / "serve.log",
        startup_seconds=STARTUP_SECONDS,
    ):
        yield url, key


def test_graphiql_sends_a_query_with_the_key_and_shows_the_result(
    server: tuple[str, str], tmp_path: Path
) -> None:
    url, key = server
    appended = httpx.post(
        f"{url}/graphql",
        headers={"Authorization": f"Bearer {key}"},
        json={
            "query": APPEND,
            "variables": {
                "input": {
                    "scope": "ENTITY",
                    "scopeRef": "ent_acme",
                    "kind": "decision",
                    "body": "Acme agreed to raise the ROAS target to 4.0 from Q3.",
                }
            },
        },
        timeout=10,
    ).json()
    event_id = appended["data"]["appendMemoryEvent"]["event"]["id"]

    shot = tmp_path / "graphiql.png"
    env = os.environ | {
        "JET_URL": url,
        "JET_API_KEY": key,
        "JET_QUERY": QUERY,
        "JET_EXPECT": event_id,
        "JET_SCREENSHOT": str(shot),
        "CHROMIUM": CHROMIUM,
        "E2E_TIMEOUT_MS": str(BROWSER_TIMEOUT_MS),
    }
    done = subprocess.run(
        ["node", str(SCRIPT)],
        env=env,
        cwd=HERE,
        capture_output=True,
        text=True,
        timeout=3 * BROWSER_TIMEOUT_MS / 1000,
    )
    lines = done.stdout.strip().splitlines()
    assert lines, f"no result from the browser script:\n{done.stderr}"
    result = json.loads(lines[-1])
    assert done.returncode == 0 and "error" not in result, result.get("error", done.stderr)

    # Nothing but the server under test was even asked for (the page is offline-clean), and
    # had anything been, it was aborted.
    assert result["external"] == [], result["external"]
    assert result["failed"] == [], result["failed"]
    assert result["requests"] > 0
    # 1. Opened: the Headers tab pre-filled with the placeholder, and nothing sent with it
    # (no request at all before the key: no auth error is the first thing a person sees).
    assert "Bearer <paste your API key>" in result["prefilled"]
    assert result["postsBeforeKey"] == 0, result["posts"]
    assert all("<paste" not in (p["authorization"] or "") for p in result["posts"])
    # 2. The key pasted: the schema introspected with it, at once, successfully.
    assert result["introspectionStatus"] == 200
    assert result["posts"][0] == {"authorization": f"Bearer {key}", "introspection": True}
    # 3. Autocomplete offers the schema's fields; 4. Docs show them.
    assert "memoryEvents" in result["completions"], result["completions"]
    assert "memoryEvents" in result["docs"] and "memoryEntries" in result["docs"]
    # 5. The query ran with the key.
    assert result["status"] == 200
    response = json.loads(result["response"])
    assert response == {"data": {"memoryEvents": {"edges": [{"node": {"id": event_id}}]}}}
    assert event_id in result["visible"]
    # No error anywhere on the way (no 401 at load any more).
    assert result["console"] == [], result["console"]
    # The screenshot kept under docs/: written when missing or with JET_UPDATE_SCREENSHOT=1
    # (not on every run: it would dirty the tree), and only from a run that passed.
    assert shot.stat().st_size > 10_000
    if not SCREENSHOT.exists() or os.environ.get("JET_UPDATE_SCREENSHOT") == "1":
        SCREENSHOT.parent.mkdir(exist_ok=True)
        shutil.copyfile(shot, SCREENSHOT)
