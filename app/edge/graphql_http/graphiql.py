"""Offline GraphiQL: strawberry's page with its CDN assets served from `assets/node_modules`.

Owns the page rewrite (local asset URLs, our set-up script graphiql_page.js: the key header
pre-filled, no request without a key, the key kept per tab) and the asset routes.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles
from starlette.types import Scope
from strawberry.http.ides import get_graphql_ide_html

ASSETS_PREFIX = "/graphiql-assets"

DEFAULT_HEADERS = {"Authorization": "Bearer <paste your API key>"}

# A `<script>` or `<link>` tag whose src/href points at a versioned npm file on a CDN,
# e.g. https://<cdn>/@graphiql/plugin-explorer@1.0.2/dist/style.css (optionally under /npm/).
_TAG = re.compile(r"<(?:script|link)\b[^>]*>", re.IGNORECASE)
_CDN_ATTR = re.compile(
    r"""(?P<attr>\b(?:src|href)=)"https?://[^/"]+/(?:npm/)?"""
    r"""(?P<package>(?:@[\w.-]+/)?[\w.-]+)@(?P<version>[^/"]+)/(?P<path>[^"?#]+)\""""
)
_INTEGRITY = re.compile(r"""\bintegrity="(?P<integrity>[^"]+)\"""")
_EXTERNAL_ATTR = re.compile(r"""\b(?:src|href)="(?:https?:)?//""")
# The page's one inline script (the others load files): strawberry's GraphiQL set-up.
_INLINE_SCRIPT = re.compile(r"<script>.*?</script>", re.DOTALL)
PAGE_SCRIPT = Path(__file__).with_name("graphiql_page.js")


@dataclass(frozen=True)
class Asset:
    """One file the page loads: `<package>/<path>` under node_modules, as pinned upstream."""

    package: str
    version: str
    path: str
    integrity: str | None

    @property
    def relpath(self) -> str:
        return f"{self.package}/{self.path}"


def _template() -> str:
    # The same function strawberry's views use; the template has no variables to fill in.
    return get_graphql_ide_html(graphql_ide="graphiql")


def _rewrite_tags(html: str, assets_prefix: str) -> tuple[str, list[Asset]]:
    assets: list[Asset] = []

    def rewrite_tag(tag_match: re.Match[str]) -> str:
        tag = tag_match.group(0)
        url_match = _CDN_ATTR.search(tag)
        if url_match is None:
            return tag
        integrity_match = _INTEGRITY.search(tag)
        asset = Asset(
            package=url_match["package"],
            version=url_match["version"],
            path=str(PurePosixPath(url_match["path"])),
            integrity=integrity_match["integrity"] if integrity_match else None,
        )
        assets.append(asset)
        local = f'{url_match["attr"]}"{assets_prefix}/{asset.relpath}"'
        return tag[: url_match.start()] + local + tag[url_match.end() :]

    rewritten = _TAG.sub(rewrite_tag, html)
    leftover = [tag for tag in _TAG.findall(rewritten) if _EXTERNAL_ATTR.search(tag)]
    if leftover:
        raise RuntimeError(f"GraphiQL page still loads external assets: {leftover}")
    return rewritten, assets


def _with_page_script(html: str) -> str:
    """Strawberry's page with its inline script replaced by ours (graphiql_page.js)."""
    inline = _INLINE_SCRIPT.findall(html)
    if len(inline) != 1:
        raise RuntimeError(f"GraphiQL template changed: expected one inline script, {len(inline)}")
    # A JS string literal holding the JSON text; `<` escaped so it cannot close the script tag.
    literal = json.dumps(json.dumps(DEFAULT_HEADERS, indent=2)).replace("<", "\\u003c")
    script = PAGE_SCRIPT.read_text().replace("__DEFAULT_HEADERS__", literal)
    if "</script" in script.lower():
        raise RuntimeError(f"{PAGE_SCRIPT} must not contain </script")
    return html.replace(inline[0], f"<script>\n{script}</script>")


@functools.cache
def page_assets() -> tuple[Asset, ...]:
    """The files strawberry's GraphiQL page loads, in page order."""
    _, assets = _rewrite_tags(_template(), ASSETS_PREFIX)
    return tuple(assets)


@functools.cache
def graphiql_html(assets_prefix: str = ASSETS_PREFIX) -> str:
    """Strawberry's GraphiQL page, loading its assets from `assets_prefix` instead of a CDN."""
    html, _ = _rewrite_tags(_template(), assets_prefix.rstrip("/"))
    return _with_page_script(html)


def _sri_matches(data: bytes, token: str) -> bool:
    """Whether `data` matches one subresource-integrity token such as `sha384-<base64>`."""
    algorithm, _, expected = token.partition("-")
    if algorithm not in ("sha256", "sha384", "sha512"):
        return False
    digest = base64.b64encode(hashlib.new(algorithm, data).digest()).decode("ascii")
    return digest == expected.split("?")[0]


def verify_assets(assets_dir: Path) -> None:
    """Fail fast if a file the page loads is missing or differs from the integrity it pins."""
    for asset in page_assets():
        file = Path(assets_dir) / asset.relpath
        if not file.is_file():
            raise RuntimeError(
                f"GraphiQL asset {file} is missing ({asset.package}@{asset.version}); "
                "run `make assets`"
            )
        if asset.integrity is None:
            continue
        data = file.read_bytes()
        if not any(_sri_matches(data, token) for token in asset.integrity.split()):
            raise RuntimeError(
                f"GraphiQL asset {file} does not match the integrity strawberry pins for "
                f"{asset.package}@{asset.version}; pin that version in assets/package.json "
                "and run `make assets`"
            )


class _AllowListStaticFiles(StaticFiles):
    """StaticFiles that serves only the listed relative paths; anything else is a 404."""

    def __init__(self, *, directory: Path, allowed: frozenset[str]) -> None:
        super().__init__(directory=directory)
        self.allowed = allowed

    async def get_response(self, path: str, scope: Scope) -> Response:
        if Path(path).as_posix() not in self.allowed:
            raise HTTPException(status_code=404)
        return await super().get_response(path, scope)


def graphiql_routes(assets_dir: Path) -> list[BaseRoute]:
    """Routes serving the page's assets (public, no API key). Verifies them now, at startup."""
    verify_assets(assets_dir)
    allowed = frozenset(asset.relpath for asset in page_assets())
    static = _AllowListStaticFiles(directory=Path(assets_dir), allowed=allowed)
    return [Mount(ASSETS_PREFIX, app=static, name="graphiql-assets")]
