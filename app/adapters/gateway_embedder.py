"""Client for a tenant's OpenAI-compatible `/embeddings` endpoint (the compactor's gateway).

Errors are the chat gateway's (app/adapters/gateway.py): GatewayUnavailable (timeouts,
connection errors, 408/429/5xx), GatewayRejected (other 4xx), GatewayBadAnswer (a 200
whose body is not the embeddings shape). It never logs, and no error carries the key or
the texts. What is sent has already passed the tenant's DLP (app/services/gateway_embedding.py).
"""

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, field

import httpx
import numpy as np

from app.adapters.embedders import Vectors
from app.adapters.gateway import GatewayBadAnswer, GatewayRejected, GatewayUnavailable

MAX_ANSWER_BYTES = 64 << 20  # a batch's vectors as JSON numbers

# The HTTP client several GatewayEmbedders share (the caller makes and closes it).
Client = httpx.AsyncClient


@dataclass(frozen=True)
class EmbeddingsConfig:
    base_url: str  # everything before `/embeddings`, as for chat completions
    api_key: str | None = field(repr=False)
    model: str
    timeout_s: float = 60.0


class GatewayEmbedder:
    """Embeds through the tenant's gateway; `usage` is the prompt tokens of the last call."""

    def __init__(self, config: EmbeddingsConfig, *, client: httpx.AsyncClient | None = None):
        self.config = config
        self.model = f"gateway:{config.model}"
        self._client = client if client is not None else httpx.AsyncClient()
        self._owns_client = client is None
        self._url = config.base_url.rstrip("/") + "/embeddings"
        self.usage: int | None = None

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    async def embed(self, texts: Sequence[str]) -> Vectors:
        headers = {"Accept": "application/json"}
        if self.config.api_key:
            headers["Authorization"] = f"Bearer {self.config.api_key}"
        payload = {"model": self.config.model, "input": list(texts)}
        name = self.config.model
        try:
            # One deadline for the whole exchange (httpx's timeout is per read).
            async with asyncio.timeout(self.config.timeout_s):
                response = await self._client.post(
                    self._url, json=payload, headers=headers, timeout=self.config.timeout_s
                )
        except (TimeoutError, httpx.TimeoutException):
            raise GatewayUnavailable(
                f"embeddings model {name!r} timed out after {self.config.timeout_s:g}s", model=name
            ) from None
        except httpx.RequestError as exc:
            raise GatewayUnavailable(
                f"embeddings gateway connection error ({type(exc).__name__})", model=name
            ) from None
        status = response.status_code
        if status in (408, 429) or status >= 500:
            raise GatewayUnavailable(f"embeddings gateway answered HTTP {status}", model=name,
                                     status=status)  # fmt: skip
        if status >= 300:
            raise GatewayRejected(f"embeddings gateway refused: HTTP {status}", model=name,
                                  status=status)  # fmt: skip
        return self._vectors(response.content, len(texts), name, status)

    def _vectors(self, body: bytes, n: int, name: str, status: int) -> Vectors:
        def bad(why: str) -> GatewayBadAnswer:
            return GatewayBadAnswer(f"embeddings model {name!r} gave an unusable answer: {why}",
                                    model=name, status=status)  # fmt: skip

        if len(body) > MAX_ANSWER_BYTES:
            raise bad(f"over {MAX_ANSWER_BYTES:,} bytes")
        try:
            data = json.loads(body)
            items = sorted(data["data"], key=lambda d: int(d["index"]))
            matrix = np.asarray([d["embedding"] for d in items], dtype=np.float32)
        except (ValueError, KeyError, TypeError):
            raise bad("not the embeddings shape") from None
        if matrix.ndim != 2 or matrix.shape[0] != n or not matrix.shape[1]:
            raise bad(f"{matrix.shape[0] if matrix.ndim else 0} vectors for {n} texts")
        if not np.isfinite(matrix).all():
            raise bad("a vector is not finite")
        usage = data.get("usage") if isinstance(data, dict) else None
        tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        self.usage = tokens if isinstance(tokens, int) and tokens >= 0 else None
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        out: Vectors = (matrix / np.where(norms == 0, 1, norms)).astype(np.float32)
        return out
