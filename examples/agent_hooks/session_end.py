#!/usr/bin/env python3
"""SessionEnd hook: append a session_summary event for this project, built from the
transcript (what the user asked, how the agent ended), with the idempotency key
session-end:<session_id>:<digest of the summary>: a hook that runs twice stores one event,
and a resumed session that ends again adds its new summary."""

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from jet_hooks import HookError, call_tool, read_event, run, scope_for

MAX_PROMPTS = 8
PROMPT_CHARS = 300
LAST_REPLY_CHARS = 1500


def _text(message: Any) -> str:
    """The text of a transcript message (a string, or a list of content blocks)."""
    content = message.get("content") if isinstance(message, dict) else message
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def summarise(transcript: Path | None) -> str:
    """A plain extractive summary: the user's requests and the agent's last answer."""
    prompts: list[str] = []
    last_reply = ""
    turns = 0
    if transcript is not None and transcript.is_file():
        for line in transcript.read_text(errors="replace").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            kind = record.get("type") or record.get("role")
            text = _text(record.get("message", record)).strip()
            if not text:
                continue
            if kind == "user":
                turns += 1
                prompts.append(text)
            elif kind == "assistant":
                last_reply = text
    lines = [f"{turns} user request(s)."]
    if prompts:
        lines.append("\nAsked:")
        lines += [f"- {_clip(p, PROMPT_CHARS)}" for p in prompts[:MAX_PROMPTS]]
        if len(prompts) > MAX_PROMPTS:
            lines.append(f"- … and {len(prompts) - MAX_PROMPTS} more")
    if last_reply:
        lines.append(f"\nLast answer: {_clip(last_reply, LAST_REPLY_CHARS)}")
    return "\n".join(lines)


def main() -> None:
    event = read_event()
    session_id = event.get("session_id")
    if not session_id:
        raise HookError("stdin has no session_id")
    cwd = Path(event.get("cwd") or os.getcwd())
    scope, scope_ref = scope_for(cwd)
    transcript = Path(event["transcript_path"]) if event.get("transcript_path") else None
    reason = event.get("reason", "ended")
    body = f"Agent session `{session_id}` ended ({reason}).\n\n{summarise(transcript)}"
    digest = hashlib.sha256(body.encode()).hexdigest()[:16]
    arguments = {
        "scope": scope,
        "kind": "session_summary",
        "body": body,
        "source": os.environ.get("JET_SOURCE", "claude_code"),
        "sourceRef": session_id,
        "idempotencyKey": f"session-end:{session_id}:{digest}",
    }
    if scope_ref is not None:
        arguments["scopeRef"] = scope_ref
    stored = call_tool("remember", arguments)
    state = "already stored" if stored["replayed"] else "stored"
    print(f"session summary {state} as {stored['event']['id']}", file=sys.stderr)


if __name__ == "__main__":
    run(main)
