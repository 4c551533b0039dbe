"""`jet-memory up`: the whole product on one machine. Redis (embedded unless JET_REDIS_URL
is set), one arq worker and the API (JET_WORKERS processes) run as child processes; Ctrl-C
or SIGTERM stops the API and the worker, then Redis, each by its pid."""

import logging
import os
import signal
import subprocess
import sys
import time
from types import FrameType

from app.config import Settings
from app.processes.embedded_redis import EmbeddedRedis

log = logging.getLogger(__name__)

STOP_TIMEOUT_S = 15.0
_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class _Stop(Exception):
    pass


def _on_signal(signum: int, _: FrameType | None) -> None:
    raise _Stop(signal.Signals(signum).name)


def _spawn(name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    # Its own session: Ctrl-C reaches only this supervisor, which stops each child once
    # and in order (Redis last, so the worker can hand back its jobs before it goes).
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli", *args], env=env, start_new_session=True
    )
    log.info("%s pid %d", name, proc.pid)
    return proc


def _watch(children: dict[str, subprocess.Popen[bytes]]) -> int:
    while True:
        for name, proc in children.items():
            code = proc.poll()
            if code is not None:
                log.error("%s exited with code %d; stopping the others", name, code)
                return code or 1
        time.sleep(0.2)


def _stop(children: dict[str, subprocess.Popen[bytes]]) -> None:
    alive = [p for p in children.values() if p.poll() is None]
    for proc in alive:
        proc.terminate()
    deadline = time.monotonic() + STOP_TIMEOUT_S
    for proc in alive:
        try:
            proc.wait(max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            log.warning("pid %d did not stop in %.0f s; killing it", proc.pid, STOP_TIMEOUT_S)
            proc.kill()
            proc.wait()


def run(settings: Settings, *, host: str, port: int, workers: int) -> int:
    """Run Redis, a worker and the API until a signal or until one of them exits."""
    env = dict(os.environ)
    redis: EmbeddedRedis | None = None
    children: dict[str, subprocess.Popen[bytes]] = {}
    previous = {sig: signal.signal(sig, _on_signal) for sig in _SIGNALS}
    try:
        if settings.redis_url is None:
            redis = EmbeddedRedis(settings.data_dir / "redis")
            env["JET_REDIS_URL"] = redis.start()
        children["worker"] = _spawn("worker", ["worker"], env)
        serve = ["serve", "--host", host, "--port", str(port), "--workers", str(workers)]
        children["api"] = _spawn("api", serve, env)
        return _watch(children)
    except _Stop as stop:
        log.info("%s: stopping the API, the worker and Redis", stop)
        return 0
    finally:
        for sig in _SIGNALS:  # a second Ctrl-C must not cut the clean stop short
            signal.signal(sig, signal.SIG_IGN)
        try:
            _stop(children)
            if redis is not None:
                redis.stop()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
