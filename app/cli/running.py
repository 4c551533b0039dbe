"""What every CLI command does around its work: build the Container the API builds, run one
coroutine with it, close it, and print an expected error as one line (exit 1)."""

import asyncio
import sys
from collections.abc import Awaitable, Callable

from app.config import Settings
from app.deps import Container, build
from app.errors import ExpectedError

# A command's runner (passed to the modules that add commands).
Run = Callable[[Settings, Callable[[Container], Awaitable[int]]], int]


def run(settings: Settings, fn: Callable[[Container], Awaitable[int]]) -> int:
    async def main() -> int:
        container = await build(settings)
        try:
            return await fn(container)
        finally:
            await container.aclose()

    try:
        return asyncio.run(main())
    except ExpectedError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 1
