"""/console as served: the page and its files under a strict Content-Security-Policy, no
inline script, only the listed npm files, and a clear 503 when they are not installed."""

import re
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette

from app.edge.console.routes import CONSOLE_DIR, VENDOR, console_routes

ASSETS = Path(__file__).resolve().parents[2] / "assets" / "node_modules"


def client_for(assets_dir: Path) -> httpx.AsyncClient:
    app = Starlette(routes=console_routes(assets_dir))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")


@pytest.mark.skipif(not (ASSETS / "preact").is_dir(), reason="make assets has not run")
async def test_the_page_and_its_files_carry_the_policy() -> None:
    async with client_for(ASSETS) as c:
        page = await c.get("/console")
        assert page.status_code == 200
        csp = page.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "'unsafe-inline'" not in csp
        assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp
        # Every script is a file of this origin: none inline, none elsewhere.
        scripts = re.findall(r"<script\b[^>]*>(.*?)</script>", page.text, re.DOTALL)
        assert scripts == [""]
        assert "http" not in page.text
        for name in VENDOR:
            r = await c.get(f"/console/vendor/{name}")
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/javascript")
        for file in sorted(CONSOLE_DIR.glob("*.js")) + [CONSOLE_DIR / "console.css"]:
            r = await c.get(f"/console/app/{file.name}")
            assert r.status_code == 200, file.name
            assert r.text == file.read_text()
            assert "content-security-policy" in r.headers
            # Modules import only this origin's files: no CDN, no bare name to resolve.
            for spec in re.findall(r"""from\s+["']([^"']+)["']""", r.text):
                assert spec.startswith("/console/"), (file.name, spec)
        for path in ("/console/vendor/react.js", "/console/app/index.html", "/console/app/x.js"):
            assert (await c.get(path)).status_code == 404, path


async def test_without_the_npm_files_the_page_says_what_to_run(tmp_path: Path) -> None:
    async with client_for(tmp_path) as c:
        r = await c.get("/console")
    assert r.status_code == 503
    assert "make assets" in r.text and "preact/dist/preact.mjs" in r.text
