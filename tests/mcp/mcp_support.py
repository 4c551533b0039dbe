"""Helpers of the MCP tests: the SDK's client on a URL or an in-process app, real servers."""

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

from app.config import Settings
from app.deps import build
from app.services import tenants
from tests.support.servers import free_port, serving

JET = Path(sys.executable).parent / "jet-memory"
__all__ = ["JET", "free_port", "serving"]


@contextlib.asynccontextmanager
async def connect(
    url: str,
    key: str | None,
    *,
    transport: httpx2.AsyncBaseTransport | None = None,
    mode: str = "auto",
) -> AsyncIterator[Client]:
    """The SDK's client on `url` (…/mcp) with `key` as the bearer key."""
    headers = {} if key is None else {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, transport=transport, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,  # type: ignore[arg-type]
    ):
        yield client


def structured(result: CallToolResult) -> dict[str, Any]:
    """A successful call's structured content (the test fails with the text otherwise)."""
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def error_of(result: CallToolResult) -> dict[str, Any]:
    """A tool error's {code, field, message}, checking it is one."""
    assert result.is_error, result.structured_content
    assert isinstance(result.structured_content, dict)
    error: dict[str, Any] = result.structured_content["error"]
    assert error["message"] in result.content[0].text  # type: ignore[union-attr]
    return error


def server_env(data_dir: Path) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("JET_")}
    return environ | {
        "JET_DATA_DIR": str(data_dir),
        # Revocation is immediate: the server asks the control database on every request.
        "JET_AUTH_CACHE_SECONDS": "0",
        "JET_LOG_LEVEL": "info",
        "PYTHONUNBUFFERED": "1",
    }


def make_keys(data_dir: Path, *names: str) -> dict[str, tuple[str, str]]:
    """Tenants in `data_dir`'s control database: name -> (tenant id, API key)."""

    async def go() -> dict[str, tuple[str, str]]:
        settings = Settings(_env_file=None, data_dir=data_dir)  # type: ignore[call-arg]
        container = await build(settings)
        try:
            made = {}
            for name in names:
                tenant, issued = await tenants.create_tenant(
                    container.control, container.tenants, name
                )
                made[name] = (tenant.id, issued.secret)
            return made
        finally:
            await container.aclose()

    return asyncio.run(go())


@contextlib.contextmanager
def jet_server(data_dir: Path, log: Path) -> Iterator[str]:
    """A running `jet-memory serve` on 127.0.0.1 over `data_dir`: its base URL."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [str(JET), "serve", "--host", "127.0.0.1", "--port", str(port)]
    with serving(
        argv, url=url, env=server_env(data_dir), cwd=log.parent, log=log, startup_seconds=60
    ):
        yield url
