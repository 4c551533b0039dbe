"""A webhook receiver on 127.0.0.1 for tests: an aiohttp server in the test's event loop
that verifies each POST with the Standard Webhooks library, answers 500 to the first
`fail_first` requests, and keeps what it received in arrival order."""

from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from standardwebhooks.webhooks import Webhook, WebhookVerificationError


@dataclass
class Received:
    message_id: str
    body: dict[str, Any]
    answered: int


@dataclass
class Receiver:
    secret: str = ""
    fail_first: int = 0
    status_after: int = 204
    received: list[Received] = field(default_factory=list)
    unverified: int = 0
    answer: bytes = b""  # the body of every answer
    connections: set[Any] = field(default_factory=set)  # the client's (host, port) of each
    url: str = ""
    _runner: web.AppRunner | None = None

    async def __aenter__(self) -> "Receiver":
        app = web.Application()
        app.router.add_post("/hook", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}/hook"
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.Response:
        data = await request.read()
        if request.transport is not None:
            self.connections.add(request.transport.get_extra_info("peername"))
        try:
            body = Webhook(self.secret).verify(data, dict(request.headers))
        except WebhookVerificationError:
            self.unverified += 1
            return web.Response(status=400)
        status = 500 if len(self.received) < self.fail_first else self.status_after
        self.received.append(Received(request.headers["webhook-id"], body, status))
        return web.Response(status=status, body=self.answer or None)

    def delivered(self) -> list[Received]:
        """The first successful receipt of each message, in arrival order."""
        seen: set[str] = set()
        out = []
        for r in self.received:
            if r.answered < 300 and r.message_id not in seen:
                seen.add(r.message_id)
                out.append(r)
        return out
