"""CORS in a real headless browser: a page served from another 127.0.0.1 port fetch()es the
REST API of a real `jet-memory serve` (JET_CORS_ORIGINS naming that page's origin), and a
page on an origin not listed is refused by the browser. Preflights are checked over HTTP
too. `make browser` installs chromium and playwright-core; skipped without them (unless
JET_REQUIRE_BROWSER=1), like test_graphiql_browser.py."""

import contextlib
import functools
import json
import os
import subprocess
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.test_graphiql_browser import CHROMIUM, HERE, JET, _missing
from tests.support.servers import free_port, serving

pytestmark = pytest.mark.slow

BROWSER_TIMEOUT_MS = 20_000
# Generous: on a loaded machine the first import of the app alone takes tens of seconds.
STARTUP_SECONDS = 120.0
PAGE_DIR = HERE / "cors_page"


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def page_server() -> Iterator[str]:
    """The page directory over HTTP on its own 127.0.0.1 port: its origin."""
    handler = functools.partial(_QuietHandler, directory=str(PAGE_DIR))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(10)


@contextlib.contextmanager
def api_server(tmp_path: Path, cors_origins: str | None) -> Iterator[tuple[str, str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JET_")}
    env |= {"JET_DATA_DIR": str(tmp_path / "data"), "PYTHONUNBUFFERED": "1"}
    if cors_origins is not None:
        env["JET_CORS_ORIGINS"] = cors_origins
    migrated = subprocess.run(
        [str(JET), "migrate"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert migrated.returncode == 0, migrated.stderr
    created = subprocess.run(
        [str(JET), "tenants", "create", "Cors Test"],
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


def preflight(url: str, origin: str, method: str, headers: str) -> httpx.Response:
    return httpx.options(
        url,
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": method,
            "Access-Control-Request-Headers": headers,
        },
        timeout=10,
    )


def test_preflight_allows_the_listed_origin_only(tmp_path: Path) -> None:
    allowed = "http://127.0.0.1:5173"
    with api_server(tmp_path, f"{allowed}, https://app.example.com") as (url, key):
        ok = preflight(
            f"{url}/memory/events", allowed, "POST", "authorization, content-type, idempotency-key"
        )
        assert ok.status_code == 200
        assert ok.headers["access-control-allow-origin"] == allowed
        assert "POST" in ok.headers["access-control-allow-methods"]
        allowed_headers = ok.headers["access-control-allow-headers"].lower()
        for name in ("authorization", "content-type", "idempotency-key", "if-match"):
            assert name in allowed_headers
        assert "access-control-allow-credentials" not in ok.headers
        patch = preflight(f"{url}/memory/mem_0", allowed, "PATCH", "authorization, if-match")
        assert patch.status_code == 200

        refused = preflight(f"{url}/memory", "http://evil.example", "GET", "authorization")
        assert refused.status_code == 400
        assert "access-control-allow-origin" not in refused.headers

        # A real request from the allowed origin: its answer names what a page may read.
        got = httpx.get(
            f"{url}/memory", headers={"Origin": allowed, "Authorization": f"Bearer {key}"}
        )
        assert got.status_code == 200
        assert got.headers["access-control-allow-origin"] == allowed
        exposed = got.headers["access-control-expose-headers"].lower()
        for name in ("etag", "location", "x-request-id", "retry-after"):
            assert name in exposed


def test_cors_is_off_by_default(tmp_path: Path) -> None:
    with api_server(tmp_path, None) as (url, key):
        got = httpx.get(
            f"{url}/memory",
            headers={"Origin": "http://127.0.0.1:5173", "Authorization": f"Bearer {key}"},
        )
        assert got.status_code == 200
        assert not [h for h in got.headers if h.startswith("access-control-")]
        # No CORS middleware: a preflight is an OPTIONS without a key, refused like any.
        answer = preflight(f"{url}/memory", "http://127.0.0.1:5173", "GET", "authorization")
        assert answer.status_code == 401
        assert "access-control-allow-origin" not in answer.headers


def test_a_page_on_another_origin_uses_the_api_in_chromium(tmp_path: Path) -> None:
    missing = _missing()
    if missing is not None:
        if os.environ.get("JET_REQUIRE_BROWSER") == "1":
            pytest.fail(f"the browser test must run here: {missing}")
        pytest.skip(missing)
    with (
        page_server() as allowed,
        page_server() as other,
        api_server(tmp_path, allowed) as (url, key),
    ):
        fragment = f"#api={url}&key={key}"
        env = os.environ | {
            "PAGE_URLS": f"{allowed}/index.html{fragment} {other}/index.html{fragment}",
            "CHROMIUM": CHROMIUM,
            "E2E_TIMEOUT_MS": str(BROWSER_TIMEOUT_MS),
        }
        done = subprocess.run(
            ["node", str(HERE / "cors.mjs")],
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
    assert result["external"] == []
    page, refused = result["pages"]

    # The allowed origin: the page's fetch()es got through, and it read the headers exposed.
    assert "error" not in page, page
    assert page["origin"] == allowed
    assert page["appendStatus"] == 201
    assert page["appendLocation"] == f"/memory/events/{page['eventId']}"
    assert len(page["appendRequestId"]) == 32
    assert page["entryStatus"] == 201
    assert page["entryLocation"].startswith("/memory/mem_")
    assert page["entryETag"] == '"1"'
    assert (page["patchStatus"], page["patchETag"]) == (200, '"2"')
    assert (page["unauthorizedStatus"], page["unauthorizedChallenge"]) == (401, "Bearer")

    # An origin not listed: the browser refuses the answer (fetch throws), as it should.
    assert refused["origin"] == other
    assert "Failed to fetch" in refused["error"]
    assert any("CORS policy" in line for line in result["console"]), result["console"]
