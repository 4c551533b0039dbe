"""`jet-memory serve`: the API under uvicorn, as one process or as N worker processes on
one port (uvicorn's own supervisor: it replaces a worker that dies and, on SIGTERM, stops
each one gracefully and waits for it). With N > 1, /metrics sums over the workers."""

import logging
import os
import shutil
import sys
import tempfile
from importlib.machinery import ModuleSpec
from pathlib import Path

from app import logs
from app.config import Settings
from app.metrics import MULTIPROCESS_DIR_ENV

log = logging.getLogger(__name__)

WORKER_HEALTHCHECK_SECONDS = 15


def cpu_cores() -> int:
    """The CPU cores this process may run on (its affinity, which a container's cpuset
    narrows), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def worker_count(setting: int) -> int:
    """JET_WORKERS (or --workers) as a number of processes: 0 means one per CPU core."""
    return setting if setting > 0 else cpu_cores()


def run(settings: Settings, *, host: str, port: int, workers: int) -> int:
    """Serve the API on host:port with `workers` processes until a signal stops it."""
    # Children (uvicorn's workers) read settings from the environment: pass the choices on.
    os.environ["JET_HOST"], os.environ["JET_PORT"] = host, str(port)
    logs.lean_records()
    if workers == 1:
        _uvicorn(settings, host=host, port=port, workers=1)
        return 0
    # prometheus-client's multiprocess mode: each worker writes its metrics to files in
    # this directory (the variable must be set before a worker imports prometheus_client)
    # and /metrics reads them all. A fresh directory per run: counts from an earlier run
    # would otherwise be added to this one's.
    directory = Path(tempfile.mkdtemp(prefix="jet-memory-metrics-"))
    os.environ[MULTIPROCESS_DIR_ENV] = str(directory)
    log.info("%d API processes; their metrics are summed in %s", workers, directory)
    # multiprocessing's spawn re-imports the parent's __main__ (here the CLI, and with it
    # the whole app) in each worker before the worker can answer the supervisor's ping; a
    # __main__ named like `python -m pkg`'s is not re-imported, so each worker answers
    # once Python and uvicorn are up and loads the app while serving pings. The workers
    # need nothing from __main__: uvicorn pickles their target by its own module.
    main = sys.modules["__main__"]
    spec = getattr(main, "__spec__", None)
    main.__spec__ = ModuleSpec("uvicorn.__main__", None)
    try:
        _uvicorn(settings, host=host, port=port, workers=workers)
    finally:
        main.__spec__ = spec
        os.environ.pop(MULTIPROCESS_DIR_ENV, None)
        shutil.rmtree(directory, ignore_errors=True)
    return 0


def _uvicorn(settings: Settings, *, host: str, port: int, workers: int) -> None:
    import uvicorn

    from app.edge.limits import MAX_BODY_BYTES

    uvicorn.run(
        "app.main:create_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=settings.log_level,
        # The same handlers and format (text or JSON) as the rest of the process.
        log_config=logs.config(settings.log_level, settings.log_format),
        proxy_headers=False,
        # No `server: uvicorn` on every response: it tells a scanner what runs here, and
        # each header costs uvicorn's per-header checks on the way out.
        server_header=False,
        # A subscription's frames are a few hundred bytes each: compressing them cost more
        # CPU than their bytes (docs/changes.md, "Cost"), and a client asking for
        # permessage-deflate gets plain frames instead.
        ws_per_message_deflate=False,
        # A websocket message is held to the HTTP body limit (uvicorn's own is 16 MiB): one
        # over it closes the socket with 1009 before it is parsed.
        ws_max_size=MAX_BODY_BYTES,
        # The supervisor replaces a worker that does not answer its ping in this time (and
        # handles no signal while it waits): uvicorn's 5 s killed workers still starting
        # Python on a busy machine.
        timeout_worker_healthcheck=WORKER_HEALTHCHECK_SECONDS,
        # uvicorn's 5 s equals httpx's pool expiry: a request sent as the server closed the
        # idle connection failed with a transport error (one in an hour of the soak).
        timeout_keep_alive=settings.keep_alive_seconds,
    )
