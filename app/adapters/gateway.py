"""Client for the tenant's OpenAI-compatible gateway: chat completions (retries, fallback
models) and `/embeddings` (GatewayEmbedder, for search by meaning).

It never logs, and no error or repr it builds carries the api key or the prompt.

Errors:

    GatewayError                 base; str(exc) is safe to record on a compactor run
     ├── GatewayUnavailable      every model exhausted: timeouts (an attempt past its
     │                           deadline), connection errors, 408/429/5xx after
     │                           max_retries (a later run may succeed)
     ├── GatewayRejected         a 4xx other than 408/429 (bad key, bad request): not
     │                           retried; 404 alone moves on to the next model
     └── GatewayBadAnswer        200 but a body that cannot be decoded (bad content-encoding),
                                 over max_answer_bytes, not JSON, not the chat-completions
                                 shape, or empty content: not retried (tokens were spent)
"""

import asyncio
import email.utils
import json
import math
import random
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

import httpx
import numpy as np

from app.adapters.embedders import Vectors

# The one token estimator (ceil(UTF-8 bytes / 4)); re-exported for the gateway's callers.
from app.tokens import estimate_tokens


class GatewayError(Exception):
    """Base of every gateway failure. `model` and `status` describe the last attempt."""

    def __init__(self, message: str, *, model: str | None = None, status: int | None = None):
        super().__init__(message)
        self.model = model
        self.status = status


class GatewayUnavailable(GatewayError):
    def __init__(self, message: str, *, attempts: tuple[str, ...] = (), **kw: Any) -> None:
        super().__init__(message, **kw)
        self.attempts = attempts  # one "model: reason" line per failed attempt


class GatewayRejected(GatewayError):
    pass


class GatewayBadAnswer(GatewayError):
    pass


@dataclass(frozen=True)
class GatewayConfig:
    """A tenant's gateway and model routing.

    `base_url` is everything before `/chat/completions`, with or without `/v1` as that
    gateway needs (e.g. "https://gw.example/v1"). `models` is the routing list: the first
    model, then its fallbacks in order. Each model gets 1 + `max_retries` attempts; one
    attempt, from connecting to the answer's last byte, gets `timeout_s` in all, and an
    answer over `max_answer_bytes` (decoded) is refused as it streams in.
    """

    base_url: str
    api_key: str | None = field(repr=False)
    models: tuple[str, ...]
    timeout_s: float = 60.0
    max_retries: int = 3
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0
    max_answer_bytes: int = 1 << 20

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError("gateway base_url must start with http:// or https://")
        if not self.models or not all(m.strip() for m in self.models):
            raise ValueError("gateway models must name at least one model, none blank")
        if self.timeout_s <= 0 or self.max_retries < 0:
            raise ValueError("gateway timeout_s must be > 0 and max_retries >= 0")
        if self.backoff_base_s < 0 or self.backoff_max_s < 0:
            raise ValueError("gateway backoff times must be >= 0")
        if self.max_answer_bytes < 1:
            raise ValueError("gateway max_answer_bytes must be >= 1")


@dataclass(frozen=True)
class Completion:
    text: str
    model: str  # the routing-list name that answered, not the gateway's internal name
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None = None  # "length" means the answer was cut at max_tokens


def estimate_messages_tokens(messages: list[dict[str, str]]) -> int:
    """Prompt tokens of a chat request: each message's content plus ~4 tokens of framing."""
    return sum(estimate_tokens(m.get("content", "")) + 4 for m in messages)


_SAFE_CODE = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_RETRY_STATUSES = frozenset({408, 429})


class _OverCap(Exception):
    """The answer passed max_answer_bytes while it was read."""


class _Retryable(Exception):
    def __init__(self, reason: str, *, status: int | None = None, wait: float | None = None):
        super().__init__(reason)
        self.reason = reason
        self.status = status
        self.wait = wait  # from Retry-After, already capped


class Gateway:
    """Calls one tenant's gateway. Close it (or use `async with`) when it owns its client."""

    def __init__(
        self,
        config: GatewayConfig,
        *,
        client: httpx.AsyncClient | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rand: Callable[[], float] = random.random,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self._owns_client = client is None
        self._client = client if client is not None else httpx.AsyncClient()
        self._sleep = sleep
        self._rand = rand
        self._clock = clock
        self._url = config.base_url.rstrip("/") + "/chat/completions"

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def complete(
        self, messages: list[dict[str, str]], *, max_tokens: int, temperature: float = 0.0
    ) -> Completion:
        """One chat completion, walking the routing list until a model answers."""
        failures: list[str] = []
        not_found = 0
        last_status: int | None = None
        for model in self.config.models:
            for attempt in range(self.config.max_retries + 1):
                try:
                    return await self._attempt(model, messages, max_tokens, temperature)
                except _Retryable as exc:
                    failures.append(f"{model}: {exc.reason}")
                    last_status = exc.status
                    if attempt == self.config.max_retries:
                        break
                    await self._sleep(exc.wait if exc.wait is not None else self._backoff(attempt))
                except GatewayRejected as exc:
                    if exc.status != 404:
                        raise
                    failures.append(f"{model}: HTTP 404")
                    not_found += 1
                    break
        if not_found == len(self.config.models):
            raise GatewayRejected(
                "no model of the routing list exists on the gateway (HTTP 404)",
                model=self.config.models[-1],
                status=404,
            )
        raise GatewayUnavailable(
            f"gateway unavailable after {len(failures)} attempts over "
            f"{len(self.config.models)} model(s); last: {failures[-1]}",
            model=self.config.models[-1],
            status=last_status,
            attempts=tuple(failures),
        )

    def _backoff(self, attempt: int) -> float:
        # "Equal jitter": at least half the exponential delay, so retries keep spreading
        # out, plus a random half so many tenants' workers don't retry in lockstep.
        delay = min(self.config.backoff_max_s, self.config.backoff_base_s * 2.0**attempt)
        return delay / 2 + self._rand() * delay / 2

    async def _attempt(
        self, model: str, messages: list[dict[str, str]], max_tokens: int, temperature: float
    ) -> Completion:
        # httpx's timeout applies to each read: a gateway sending a byte now and then would
        # hold the attempt for ever. The deadline covers the whole exchange.
        deadline = asyncio.timeout(self.config.timeout_s)
        try:
            async with deadline:
                return await self._exchange(model, messages, max_tokens, temperature)
        except TimeoutError:
            if not deadline.expired():
                raise
            raise _Retryable(f"timed out after {self.config.timeout_s:g}s") from None

    async def _exchange(
        self, model: str, messages: list[dict[str, str]], max_tokens: int, temperature: float
    ) -> Completion:
        headers = {"Accept": "application/json"}
        if self.config.api_key:
            headers["Authorization"] = f"Bearer {self.config.api_key}"
        payload = {
            "model": model,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        request = self._client.build_request(
            "POST", self._url, json=payload, headers=headers, timeout=self.config.timeout_s
        )
        # Streamed, so the status is known before the body is read and decoded: a body that
        # cannot be decoded (a bad content-encoding) is then judged by the status it came with.
        try:
            response = await self._client.send(request, stream=True, follow_redirects=False)
        except httpx.TimeoutException:
            raise _Retryable(f"timed out after {self.config.timeout_s:g}s") from None
        except httpx.RequestError as exc:
            # The exception text can echo the URL, never the key or body; keep the type only.
            raise _Retryable(f"connection error ({type(exc).__name__})") from None
        status = response.status_code
        answered = 200 <= status < 300
        try:
            body = await self._read(response, model)
        except httpx.TimeoutException:
            raise _Retryable(f"timed out after {self.config.timeout_s:g}s") from None
        except httpx.DecodingError:
            if answered:  # answered, so the tokens were spent: not retried
                raise GatewayBadAnswer(
                    f"model {model!r} gave an unusable answer: "
                    "its body could not be decoded (content-encoding)",
                    model=model,
                    status=status,
                ) from None
            body = None
        except _OverCap:
            if answered:
                raise GatewayBadAnswer(
                    f"model {model!r} gave an unusable answer: over "
                    f"{self.config.max_answer_bytes:,} bytes (gateway_max_answer_bytes)",
                    model=model,
                    status=status,
                ) from None
            body = None  # an error page too big to read: its status says enough
        except httpx.RequestError as exc:
            raise _Retryable(f"connection error ({type(exc).__name__})") from None
        finally:
            await response.aclose()
        if status in _RETRY_STATUSES or status >= 500:
            raise _Retryable(
                f"HTTP {status}", status=status, wait=self._retry_after(response.headers)
            )
        if not answered:
            code = "" if body is None else _error_code(body)
            raise GatewayRejected(
                f"model {model!r} was rejected: HTTP {status}{code}",
                model=model,
                status=status,
            )
        assert body is not None  # an unreadable 2xx body was refused above
        return _parse_completion(body, model, messages)

    async def _read(self, response: httpx.Response, model: str) -> bytes:
        """The decoded body, refused (_OverCap) as soon as it passes max_answer_bytes."""
        cap = self.config.max_answer_bytes
        declared = response.headers.get("content-length", "")
        if (
            declared.isdigit()
            and int(declared) > cap
            and "content-encoding" not in response.headers
        ):
            raise _OverCap
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > cap:
                raise _OverCap
        return bytes(body)

    def _retry_after(self, headers: httpx.Headers) -> float | None:
        value = headers.get("retry-after", "").strip()
        if not value:
            return None
        try:
            seconds = float(value)
        except ValueError:
            try:
                seconds = email.utils.parsedate_to_datetime(value).timestamp() - self._clock()
            except (TypeError, ValueError, IndexError, OverflowError):
                return None
        if math.isnan(seconds):
            return None
        return min(max(seconds, 0.0), self.config.backoff_max_s)


def _error_code(body: bytes) -> str:
    """The OpenAI error code/type only: error messages may quote a masked key or input."""
    try:
        error = json.loads(body).get("error")
    except (ValueError, AttributeError):
        return ""
    if not isinstance(error, dict):
        return ""
    for name in ("code", "type"):
        value = error.get(name)
        if isinstance(value, str) and _SAFE_CODE.fullmatch(value):
            return f" ({value})"
    return ""


def _parse_completion(body: bytes, model: str, messages: list[dict[str, str]]) -> Completion:
    def bad(reason: str) -> GatewayBadAnswer:
        return GatewayBadAnswer(f"model {model!r} gave an unusable answer: {reason}", model=model)

    try:
        data = json.loads(body)
    except ValueError:  # UnicodeDecodeError included
        raise bad("body is not JSON") from None
    try:
        choice = data["choices"][0]
        content = choice["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise bad("no choices[0].message.content") from None
    if isinstance(content, list):  # some gateways send content parts
        texts = (p.get("text") for p in content if isinstance(p, dict))
        content = "".join(t for t in texts if isinstance(t, str))
    if not isinstance(content, str) or not content.strip():
        raise bad("empty content")
    finish = choice.get("finish_reason") if isinstance(choice, dict) else None
    usage = data.get("usage") if isinstance(data, dict) else None
    prompt_tokens = _usage_int(usage, "prompt_tokens")
    completion_tokens = _usage_int(usage, "completion_tokens")
    # Some gateways omit usage; the budget still has to be charged, so estimate with the
    # same estimator the pre-check uses rather than record zero.
    if prompt_tokens is None:
        prompt_tokens = estimate_messages_tokens(messages)
    if completion_tokens is None:
        completion_tokens = estimate_tokens(content)
    return Completion(
        text=content,
        model=model,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        finish_reason=finish if isinstance(finish, str) else None,
    )


def _usage_int(usage: object, name: str) -> int | None:
    if not isinstance(usage, dict):
        return None
    value = usage.get(name)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


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
            raise GatewayUnavailable(
                f"embeddings gateway answered HTTP {status}", model=name, status=status
            )
        if status >= 300:
            raise GatewayRejected(
                f"embeddings gateway refused: HTTP {status}", model=name, status=status
            )
        return self._vectors(response.content, len(texts), name, status)

    def _vectors(self, body: bytes, n: int, name: str, status: int) -> Vectors:
        def bad(why: str) -> GatewayBadAnswer:
            return GatewayBadAnswer(
                f"embeddings model {name!r} gave an unusable answer: {why}",
                model=name,
                status=status,
            )

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
