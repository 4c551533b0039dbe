"""examples/call_summary_skill.py end to end: a real server process (uvicorn), the example as
a subprocess, the result checked over REST; the LLM path against a real HTTP server too."""

import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.config import Settings
from app.deps import build
from app.services import tenants
from tests.support.servers import free_port, serving

ROOT = Path(__file__).resolve().parents[2]
SKILL = ROOT / "examples" / "call_summary_skill.py"
TRANSCRIPT = """\
Dana (Acme): Thanks for joining. The spring campaign ROAS was 3.1, below our target of 4.
Sam (Agency): The display budget underperformed; search carried the quarter.
Dana (Acme): Then we move 20% of display into search from April 1.
Sam (Agency): Agreed. I'll send the revised media plan by Friday.
Dana (Acme): And we will review the landing pages with the design team next week.
"""
LLM_SUMMARY = "Acme moves 20% of display to search.\n\n**Action items**\n- Sam: media plan, Friday"


@dataclass
class Server:
    url: str
    key: str
    data_dir: Path

    def api(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {self.key}"}, timeout=10
        )


def clean_env(**extra: str) -> dict[str, str]:
    """This process' environment without any JET_* or OPENAI_* that could leak in."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JET_", "OPENAI_"))}
    return {**env, **extra}


async def create_tenant(data_dir: Path) -> str:
    container = await build(Settings(_env_file=None, data_dir=data_dir))  # type: ignore[call-arg]
    try:
        _, issued = await tenants.create_tenant(container.control, container.tenants, "agency")
        return issued.secret
    finally:
        await container.aclose()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    data_dir = tmp_path / "data"
    key = asyncio.run(create_tenant(data_dir))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [
        sys.executable,
        "-m",
        "uvicorn",
        "--factory",
        "app.main:create_app",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    env = clean_env(JET_DATA_DIR=str(data_dir), JET_GRAPHIQL="false", PYTHONPATH=str(ROOT))
    # cwd: no stray .env is read.
    with serving(argv, url=url, env=env, cwd=tmp_path, log=tmp_path / "server.log"):
        yield Server(url, key, data_dir)


def run_skill(server: Server, transcript: Path, *args: str, **env: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(SKILL), str(transcript), "--entity", "ent_acme", *args],
        env=clean_env(JET_URL=server.url, JET_API_KEY=server.key, **env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.slow
def test_the_skill_remembers_a_call_once(server: Server, tmp_path: Path) -> None:
    transcript = tmp_path / "acme-call.txt"
    transcript.write_text(TRANSCRIPT)

    first = run_skill(server, transcript, "--curate")
    assert first["summariser"] == "extractive" and first["replayed"] is False

    with server.api() as api:
        params = {"scope": "entity", "scopeRef": "ent_acme", "kind": "call_summary"}
        [event] = api.get("/memory/events", params=params).json()["items"]
        assert event["id"] == first["event"] and event["source"] == "call_summary_skill"
        assert "**Action items**" in event["body"]
        assert "I'll send the revised media plan by Friday." in event["body"]
        [entry] = api.get("/memory", params={"tag": "call_summary"}).json()["items"]
        assert entry["id"] == first["entry"] and entry["source"] == "call"
        assert (entry["scope"], entry["scopeRef"]) == ("entity", "ent_acme")
        assert entry["summary"] == event["body"]
        assert (
            entry["title"]
            == "Call: Dana (Acme): The spring campaign ROAS was 3.1, below our target of 4."
        )
        found = api.get("/memory", params={"search": "revised media plan"}).json()["items"]
        assert [e["id"] for e in found] == [entry["id"]]

    # A re-run (a retried skill, a replayed webhook) remembers nothing twice.
    again = run_skill(server, transcript, "--curate")
    assert again == {**first, "replayed": True}
    with server.api() as api:
        assert len(api.get("/memory/events").json()["items"]) == 1
        assert len(api.get("/memory").json()["items"]) == 1


class FakeGateway(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat-completions endpoint that always says LLM_SUMMARY."""

    seen: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeGateway.seen.append({"path": self.path, "auth": self.headers["Authorization"], **body})
        data = json.dumps({"choices": [{"message": {"role": "assistant", "content": LLM_SUMMARY}}]})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data.encode())

    def log_message(self, *_: Any) -> None:
        pass


@pytest.mark.slow
def test_the_skill_summarises_with_an_openai_compatible_endpoint(
    server: Server, tmp_path: Path
) -> None:
    gateway = ThreadingHTTPServer(("127.0.0.1", 0), FakeGateway)
    thread = threading.Thread(target=gateway.serve_forever, daemon=True)
    thread.start()
    transcript = tmp_path / "call.txt"
    transcript.write_text(TRANSCRIPT)
    try:
        result = run_skill(
            server,
            transcript,
            OPENAI_BASE_URL=f"http://127.0.0.1:{gateway.server_port}/v1",
            OPENAI_API_KEY="sk-test",
            OPENAI_MODEL="small-model",
        )
    finally:
        gateway.shutdown()
        gateway.server_close()
        thread.join()
    assert result["summariser"] == "llm:small-model" and "entry" not in result
    [call] = FakeGateway.seen
    assert (call["path"], call["auth"], call["model"]) == (
        "/v1/chat/completions",
        "Bearer sk-test",
        "small-model",
    )
    assert call["messages"][-1]["content"] == TRANSCRIPT
    with server.api() as api:
        [event] = api.get("/memory/events").json()["items"]
        assert event["body"].startswith(LLM_SUMMARY)

    # The same call summarised differently later (LLMs vary) is still the same call: kept once.
    again = run_skill(server, transcript)
    assert again["event"] == "already-recorded"
    with server.api() as api:
        assert len(api.get("/memory/events").json()["items"]) == 1
