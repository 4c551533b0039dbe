"""What every CLI command does around its work: build the Container the API builds, run one
coroutine with it, close it, and print an expected error as one line (exit 1); a missing
control database is created only by the commands that say so."""

import asyncio
import sys
from collections.abc import Awaitable, Callable

from app.config import Settings
from app.deps import Container, build
from app.errors import ExpectedError, NotFound

# A command's runner (passed to the modules that add commands).
Run = Callable[[Settings, Callable[[Container], Awaitable[int]]], int]


def run(
    settings: Settings, fn: Callable[[Container], Awaitable[int]], *, create: bool = False
) -> int:
    """Run `fn` with a Container; `create`: the command may create a missing control database
    (`migrate`, `dev`). Any other command refuses, so a mistyped JET_DATA_DIR leaves no empty
    database behind and says where it looked."""
    if not create and settings.database_url is None and not settings.control_db_path.exists():
        print(
            f"error: no control database in {settings.data_dir.resolve()} (JET_DATA_DIR): "
            "point JET_DATA_DIR at the server's data directory, or create one there with "
            "`jet-memory migrate`",
            file=sys.stderr,
        )
        return 1

    async def main() -> int:
        container = await build(settings)
        try:
            return await fn(container)
        finally:
            await container.aclose()

    try:
        return asyncio.run(main())
    except NotFound as exc:
        print(f"error: {exc.message} (looked in {_where(settings)})", file=sys.stderr)
        return 1
    except ExpectedError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 1


def _where(settings: Settings) -> str:
    if settings.database_url is not None:
        return settings.storage_label
    return f"the data directory {settings.data_dir.resolve()}; JET_DATA_DIR"
