"""A local OpenAI-compatible chat-completions stub for the benches: every answer after a
fixed latency. Its own process, so it never shares an event loop with what it measures.

Usage: python bench/gateway_stub.py --port 8901 --latency 0.2
"""

import argparse
import asyncio
import json
import re
from typing import Any

import uvicorn

_FIELD = re.compile(r"^(Scope|Period|Events): (.*)$", re.MULTILINE)


def make_app(latency: float) -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        request = json.loads(body)
        prompt = request["messages"][-1]["content"]
        fields = dict(_FIELD.findall(prompt))
        # A well-formed answer: a title naming scope and period, a blank line, a body.
        content = (
            f"{fields.get('Scope', 'scope')}: {fields.get('Period', 'period')}\n\n"
            f"- {fields.get('Events', '?')} events summarised by the bench stub."
        )
        await asyncio.sleep(latency)
        payload = json.dumps({
            "id": "chatcmpl-bench", "object": "chat.completion", "model": request["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": len(content) // 4},
        }).encode()  # fmt: skip
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

    return app


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--latency", type=float, default=0.2, help="seconds before each answer")
    args = p.parse_args()
    uvicorn.run(
        make_app(args.latency),
        host="127.0.0.1",
        port=args.port,
        lifespan="off",
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
