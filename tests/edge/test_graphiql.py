"""The offline GraphiQL page: no external URLs, every asset served locally with matching SRI."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from app.edge.graphql_http.graphiql import (
    ASSETS_PREFIX,
    graphiql_html,
    graphiql_routes,
    verify_assets,
)

ASSETS_DIR = Path(__file__).resolve().parents[2] / "assets" / "node_modules"

# XML namespace names in the inline SVG favicon are identifiers, never fetched.
NAMESPACE_URIS = {"http://www.w3.org/2000/svg"}

CONTENT_TYPES = {
    ".js": {"text/javascript", "application/javascript"},
    ".css": {"text/css"},
}

ASSET_TAG = re.compile(r"<(?:script|link)\b[^>]*\b(?:src|href)=\"(?!data:)[^\"]+\"[^>]*>")


async def graphql_page(request: Request) -> HTMLResponse:
    return HTMLResponse(graphiql_html())


@pytest.fixture
def client() -> TestClient:
    if shutil.which("npm") is None and not ASSETS_DIR.is_dir():
        pytest.skip("npm is not installed here, so GraphiQL's assets cannot be")
    assert ASSETS_DIR.is_dir(), f"{ASSETS_DIR} is missing: run `make test` (it runs npm ci)"
    app = Starlette(routes=[Route("/graphql", graphql_page), *graphiql_routes(ASSETS_DIR)])
    return TestClient(app)


def page_assets(html: str) -> list[tuple[str, str]]:
    """(url, integrity) for every script/stylesheet the page loads."""
    found = []
    for tag in ASSET_TAG.findall(html):
        url = re.search(r"\b(?:src|href)=\"([^\"]+)\"", tag)
        integrity = re.search(r"\bintegrity=\"([^\"]+)\"", tag)
        assert url and integrity, f"asset tag without src/href or integrity: {tag}"
        found.append((url.group(1), integrity.group(1)))
    return found


def test_page_has_no_external_urls(client: TestClient) -> None:
    response = client.get("/graphql")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    urls = set(re.findall(r"https?://[^\s\"'<>%]+", response.text))
    assert urls <= NAMESPACE_URIS
    assert "{{" not in response.text  # no unfilled template variable


def test_page_prefills_api_key_header_and_keeps_it_per_tab(client: TestClient) -> None:
    html = client.get("/graphql").text
    literal = re.search(r"const DEFAULT_HEADERS = (\"(?:[^\"\\]|\\.)*\");", html)
    assert literal is not None
    headers = json.loads(json.loads(literal.group(1)))
    assert headers == {"Authorization": "Bearer <paste your API key>"}
    assert "</" not in literal.group(1)
    # Strawberry's own set-up script is gone: ours is the page's one inline script.
    assert html.count("<script>") == 1 and "EXAMPLE_QUERY" not in html
    # Headers persisted only when the person turns "Persist headers" on; else per tab.
    assert "shouldPersistHeaders: persist," in html and "sessionStorage" in html
    assert "isHeadersEditorEnabled: true" in html


def test_every_asset_is_served_with_matching_integrity(client: TestClient) -> None:
    assets = page_assets(client.get("/graphql").text)
    assert len(assets) == 7  # react, react-dom, js-cookie, graphiql js+css, explorer js+css
    for url, integrity in assets:
        assert url.startswith(f"{ASSETS_PREFIX}/"), url
        response = client.get(url)  # no API key
        assert response.status_code == 200, url
        content_type = response.headers["content-type"].split(";")[0]
        assert content_type in CONTENT_TYPES[Path(url).suffix], (url, content_type)
        algorithm, _, expected = integrity.partition("-")
        assert algorithm == "sha384"
        digest = base64.b64encode(hashlib.sha384(response.content).digest()).decode()
        assert digest == expected, url


@pytest.mark.parametrize(
    "path",
    [
        "",
        "/",
        "/react/package.json",
        "/graphiql/graphiql.js",
        "/react/umd/react.development.js",
        "/../package.json",
        "/%2e%2e/package.json",
        "/react/umd/../umd/../../../package-lock.json",
    ],
)
def test_paths_outside_the_allow_list_are_404(client: TestClient, path: str) -> None:
    assert client.get(f"{ASSETS_PREFIX}{path}").status_code == 404


def test_missing_asset_fails_at_startup(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="make assets"):
        graphiql_routes(tmp_path / "node_modules")


def test_missing_single_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "react" / "umd").mkdir(parents=True)
    source = ASSETS_DIR / "react" / "umd" / "react.production.min.js"
    (tmp_path / "react" / "umd" / "react.production.min.js").write_bytes(source.read_bytes())
    with pytest.raises(RuntimeError, match=r"react-dom\.production\.min\.js.*make assets"):
        verify_assets(tmp_path)


def test_tampered_asset_fails_at_startup(tmp_path: Path) -> None:
    for url, _ in page_assets(graphiql_html()):
        relpath = url.removeprefix(f"{ASSETS_PREFIX}/")
        target = tmp_path / relpath
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((ASSETS_DIR / relpath).read_bytes())
    verify_assets(tmp_path)
    (tmp_path / "graphiql" / "graphiql.min.js").write_text("alert(1)")
    with pytest.raises(RuntimeError, match=r"graphiql\.min\.js.*integrity.*make assets"):
        verify_assets(tmp_path)
