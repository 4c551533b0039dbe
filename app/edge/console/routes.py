"""The console at /console: its page, its own modules (beside this module) and the two npm
files it loads (Preact and htm, installed by `make assets`), under a strict
Content-Security-Policy. No key is needed to load it; every call it makes is /graphql's.
"""

import html
from pathlib import Path

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

# The page, modules and styles beside this module (only .js and .css are served from it).
CONSOLE_DIR = Path(__file__).parent
# The npm files the console imports, by the name it imports them under (vendor/<name>).
VENDOR = {"preact.mjs": "preact/dist/preact.mjs", "htm.mjs": "htm/dist/htm.mjs"}
# Scripts and styles from this origin only (no inline script, no eval), API calls and the
# change feed's websocket to this origin only, never framed.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-cache",
}


class _ConsoleFiles(StaticFiles):
    """The console's own modules and styles, with the page's security headers."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        if not path.endswith((".js", ".css")):
            raise HTTPException(status_code=404)
        response = await super().get_response(path, scope)
        response.headers.update(HEADERS)
        return response


def _unavailable(missing: list[str]) -> HTMLResponse:
    names = ", ".join(html.escape(m) for m in missing)
    return HTMLResponse(
        "<!doctype html><html lang=en><title>Console unavailable</title>"
        f"<p>The console's npm files are not installed ({names}): run <code>make assets</code>.",
        status_code=503,
        headers=HEADERS,
    )


def console_routes(assets_dir: Path) -> list[BaseRoute]:
    """GET /console (the page), /console/app/* (its modules), /console/vendor/* (npm)."""
    missing = [rel for rel in VENDOR.values() if not (assets_dir / rel).is_file()]
    page = (CONSOLE_DIR / "index.html").read_text()

    async def index(_: Request) -> Response:
        if missing:
            return _unavailable(missing)
        return HTMLResponse(page, headers=HEADERS)

    async def vendor(request: Request) -> Response:
        rel = VENDOR.get(request.path_params["name"])
        if rel is None or not (assets_dir / rel).is_file():
            raise HTTPException(status_code=404)
        return FileResponse(assets_dir / rel, media_type="text/javascript", headers=HEADERS)

    return [
        Route("/console", index, methods=["GET"]),
        Route("/console/vendor/{name}", vendor, methods=["GET"]),
        Mount("/console/app", app=_ConsoleFiles(directory=CONSOLE_DIR), name="console"),
    ]
