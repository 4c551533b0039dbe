"""`jet-memory mcp`: the same tools over stdio for a local client, forwarded to a remote server.

A thin proxy: tools/list and tools/call go to JET_URL's /mcp with JET_API_KEY, through the
SDK's own Streamable HTTP client, so a desktop agent uses the team's deployment (its tenant,
limits and data) and nothing runs against a local database. The remote is asked for its
tools before serving, so a missing setting, a bad key or an unreachable server is one clear
line on stderr and exit status 2, not a client that hangs.
"""

import logging
import sys
from collections.abc import Mapping
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
)

from app import __version__
from app.edge.mcp.server import INSTRUCTIONS, NAME

URL_ENV = "JET_URL"
KEY_ENV = "JET_API_KEY"
CONNECT_SECONDS = 10.0
CALL_SECONDS = 120.0
PROTOCOL = "2026-07-28"


class ProxyError(Exception):
    """The proxy cannot start: the message says what to fix."""


def settings_from(environ: Mapping[str, str]) -> tuple[str, str]:
    """(the remote /mcp URL, the API key) from the environment, or a ProxyError naming both."""
    url = environ.get(URL_ENV, "").strip()
    key = environ.get(KEY_ENV, "").strip()
    missing = [name for name, value in ((URL_ENV, url), (KEY_ENV, key)) if not value]
    if missing:
        raise ProxyError(
            f"set {' and '.join(missing)}: {URL_ENV} is the Jet Memory server "
            f"(e.g. http://127.0.0.1:8000) and {KEY_ENV} an API key of your tenant"
        )
    if not url.startswith(("http://", "https://")):
        raise ProxyError(f"{URL_ENV} must be an http:// or https:// URL, got {url!r}")
    url = url.rstrip("/")
    return (url if url.endswith("/mcp") else f"{url}/mcp"), key


class Remote:
    """The remote server's tools, one SDK client per call on a shared connection pool.

    The server is stateless, and a client pinned to the 2026-07-28 protocol opens without
    a handshake, so a client per call costs no request; a long-lived one would die with
    the first failed request (a server restarting), taking the proxy with it.
    """

    def __init__(self, url: str, http: httpx2.AsyncClient) -> None:
        self.url = url
        self.http = http

    def _client(self) -> Client:
        return Client(streamable_http_client(self.url, http_client=self.http), mode=PROTOCOL)

    async def list_tools(self) -> ListToolsResult:
        async with self._client() as client:
            return await client.list_tools()

    async def call_tool(self, name: str, arguments: dict[str, Any] | None) -> CallToolResult:
        async with self._client() as client:
            return await client.call_tool(name, arguments)


async def _first_tools(remote: Remote, url: str) -> ListToolsResult:
    try:
        with anyio.fail_after(CONNECT_SECONDS):
            return await remote.list_tools()
    except TimeoutError:
        raise ProxyError(f"{url} did not answer within {CONNECT_SECONDS:g} s") from None


def _describe(exc: BaseException, url: str) -> str:
    """One line for why connecting to `url` failed (the SDK may wrap it in groups)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, ProxyError):
        return str(exc)
    if isinstance(exc, httpx2.HTTPStatusError):
        status = exc.response.status_code
        if status == 401:
            return f"{url} refused {KEY_ENV} (401): the key is unknown or revoked"
        return f"{url} answered HTTP {status}"
    if isinstance(exc, MCPError):  # the server's JSON-RPC error: a 401's says which key problem
        return f"{url} refused the connection: {exc}"
    if isinstance(exc, httpx2.TransportError):
        return f"cannot reach {url}: {exc or type(exc).__name__}"
    return f"cannot use {url}: {type(exc).__name__}: {exc}"


def _proxy_server(remote: Remote, tools: ListToolsResult) -> Server[Any]:
    async def list_tools(
        _: ServerRequestContext[Any, Any], __: PaginatedRequestParams | None
    ) -> ListToolsResult:
        return ListToolsResult(tools=tools.tools)

    async def call_tool(
        _: ServerRequestContext[Any, Any], params: CallToolRequestParams
    ) -> CallToolResult:
        try:
            with anyio.fail_after(CALL_SECONDS):
                return await remote.call_tool(params.name, params.arguments)
        except Exception as exc:
            message = f"the Jet Memory server failed this call: {_describe(exc, 'the server')}"
            return CallToolResult(
                content=[TextContent(text=message)],
                structured_content={"error": {"code": "UNAVAILABLE", "message": message}},
                is_error=True,
            )

    server: Server[Any] = Server(
        NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    server.middleware.clear()  # no OpenTelemetry exporter here either
    return server


async def serve_stdio(url: str, key: str) -> None:
    """Serve the remote server's tools on this process's stdin/stdout until stdin closes."""
    headers = {"Authorization": f"Bearer {key}"}
    timeout = httpx2.Timeout(CONNECT_SECONDS, read=CALL_SECONDS)
    try:
        async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http:
            remote = Remote(url, http)
            tools = await _first_tools(remote, url)
            server = _proxy_server(remote, tools)
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())
    except ProxyError:
        raise
    except Exception as exc:
        raise ProxyError(_describe(exc, url)) from None


def main(environ: Mapping[str, str]) -> int:
    """`jet-memory mcp`: 0 when the client closed stdin, 2 with a message when it cannot start."""
    # A line per forwarded request on stderr would drown what the client shows of it.
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    try:
        url, key = settings_from(environ)
        anyio.run(serve_stdio, url, key)
    except ProxyError as exc:
        print(f"jet-memory mcp: {exc}", file=sys.stderr)
        return 2
    return 0
