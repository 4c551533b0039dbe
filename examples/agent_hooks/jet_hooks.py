"""Shared by the session hooks: settings, the project's scope, and one MCP tool call.

Standard library only, so a hook runs with any python3. A hook gets JSON on stdin (Claude
Code's shape: session_id, cwd, transcript_path, hook_event_name) and calls one tool of the
Jet Memory server at JET_URL with JET_API_KEY, as one JSON-RPC POST to its /mcp (the
server is stateless: no session to open first).
"""

import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

CONFIG_FILE = ".jet-memory.json"  # {"scope": "project", "scopeRef": "billing-api"}
PROTOCOL_VERSION = "2025-11-25"
TIMEOUT_SECONDS = 10


class HookError(Exception):
    """Why the hook could not do its job: one line for stderr."""


def read_event() -> dict[str, Any]:
    """The hook's input: a JSON object on stdin (an empty stdin is an empty object)."""
    text = sys.stdin.read()
    if not text.strip():
        return {}
    event = json.loads(text)
    if not isinstance(event, dict):
        raise HookError("stdin must hold a JSON object")
    return event


def scope_for(cwd: Path) -> tuple[str, str | None]:
    """(scope, scopeRef): JET_SCOPE/JET_SCOPE_REF, else the nearest .jet-memory.json, else
    the project named after the repository (or directory) the session runs in."""
    if os.environ.get("JET_SCOPE"):
        return os.environ["JET_SCOPE"], os.environ.get("JET_SCOPE_REF") or None
    for folder in (cwd, *cwd.parents):
        config = folder / CONFIG_FILE
        if config.is_file():
            data = json.loads(config.read_text())
            return data["scope"], data.get("scopeRef")
    root = next((f for f in (cwd, *cwd.parents) if (f / ".git").exists()), cwd)
    return "project", root.name or "root"


def call_tool(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The tool's structured result; a HookError for settings, network or tool errors."""
    url = os.environ.get("JET_URL", "").rstrip("/")
    key = os.environ.get("JET_API_KEY", "")
    if not url or not key:
        raise HookError("set JET_URL (e.g. http://127.0.0.1:8000) and JET_API_KEY")
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    request = urllib.request.Request(
        url if url.endswith("/mcp") else f"{url}/mcp",
        data=json.dumps(body).encode(),
        headers={
            "Authorization": f"Bearer {key}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": PROTOCOL_VERSION,
        },
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
            answer = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode(errors="replace")[:300]
        raise HookError(f"{url} answered {exc.code}: {detail}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise HookError(f"cannot reach {url}: {exc}") from None
    if "error" in answer:
        raise HookError(f"{name}: {answer['error'].get('message')}")
    result = answer["result"]
    if result.get("isError"):
        raise HookError(f"{name}: {result['content'][0]['text']}")
    structured: dict[str, Any] = result["structuredContent"]
    return structured


def run(main: Any) -> None:
    """Run a hook's main; a HookError is one line on stderr and exit status 1, which
    Claude Code reports without blocking the session."""
    try:
        main()
    except HookError as exc:
        print(f"jet-memory hook: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
