"""The worker tests' arq client, on the session's Redis (`redis_url`, tests/conftest.py)."""

from collections.abc import AsyncIterator

import pytest
from arq.connections import ArqRedis, create_pool

from app.worker import redis_settings_for


@pytest.fixture
async def pool(redis_url: str) -> AsyncIterator[ArqRedis]:
    """An arq client on an empty database (each test starts from a clean queue)."""
    redis = await create_pool(redis_settings_for(redis_url))
    await redis.flushdb()
    try:
        yield redis
    finally:
        await redis.aclose()
