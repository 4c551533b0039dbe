"""Requests per second per API key: a token bucket per key, in this process's memory.

Per process by design (no Redis round trip per request): with N API processes a key may
make up to N times the configured rate. Keys are held as digests, never as secrets.
"""

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass

# Buckets kept before idle (refilled) ones are dropped: bounds memory under a key flood.
MAX_BUCKETS = 50_000


@dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float


class RateLimiter:
    """`rate` requests per second with bursts of `burst`; `rate` 0 lets everything through."""

    def __init__(
        self, rate: float, burst: int, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = rate
        self.burst = max(burst, 1)
        self.clock = clock
        self._buckets: dict[bytes, _Bucket] = {}

    @property
    def enabled(self) -> bool:
        return self.rate > 0

    def acquire(self, api_key: str, tokens: int = 1) -> float:
        """Take `tokens` for this key: 0.0 when allowed (all taken), else seconds until
        they are free (none taken)."""
        if not self.enabled:
            return 0.0
        now = self.clock()
        key = hashlib.blake2b(api_key.encode(), digest_size=16).digest()
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= MAX_BUCKETS:
                self._prune(now)
            bucket = self._buckets[key] = _Bucket(float(self.burst), now)
        else:
            bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.at) * self.rate)
            bucket.at = now
        if bucket.tokens >= tokens:
            bucket.tokens -= tokens
            return 0.0
        return (tokens - bucket.tokens) / self.rate

    def _prune(self, now: float) -> None:
        full_after = self.burst / self.rate
        idle = [k for k, b in self._buckets.items() if now - b.at >= full_after]
        for k in idle:
            del self._buckets[k]
