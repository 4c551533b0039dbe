"""The background indexer of a real `jet-memory serve`, killed with SIGKILL in the middle of
embedding and started again: it catches up with nothing lost (every entry gets a vector of
its current version) and nothing repeated (the new process embeds only what the killed one
had not stored, counted by jet_entries_embedded_total)."""

import contextlib
import os
import re
import sqlite3
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from tests.support.servers import free_port, jet_serve, serving

ENTRIES = 200


def _counts(tmp_path: Path) -> tuple[int, int]:
    """(entries with a vector of their current version, entries), read from the file."""
    (path,) = (tmp_path / "data" / "tenants").glob("*.db")
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30) as conn:
        done = conn.execute(
            "SELECT count(*) FROM memory_entry_vectors v JOIN memory_entries e "
            "ON e.seq = v.entry_seq AND e.version = v.version"
        ).fetchone()[0]
        total = conn.execute("SELECT count(*) FROM memory_entries").fetchone()[0]
    return int(done), int(total)


def _wait(condition: object, what: str, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.02)  # bounded polling, not a timing assumption


@contextlib.contextmanager
def _serve(tmp_path: Path, env: dict[str, str]) -> Iterator[tuple[str, Any]]:
    """`jet-memory serve` on the data of tmp_path: (URL, its process)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("JET_")}
    environ |= {"JET_DATA_DIR": str(tmp_path / "data"), "PYTHONUNBUFFERED": "1", **env}
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [
        str(Path(sys.executable).parent / "jet-memory"),
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    with serving(argv, url=url, env=environ, cwd=tmp_path, log=tmp_path / "indexer.log") as proc:
        yield url, proc


def test_the_indexer_catches_up_after_a_kill(tmp_path: Path) -> None:
    quiet = {"JET_WORKERS": "1", "JET_EMBEDDER": "none"}
    with (
        jet_serve(tmp_path, "acme", env=quiet) as (url, (key,)),
        httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}) as http,
    ):
        for i in range(ENTRIES):
            r = http.post(
                "/memory",
                json={
                    "scope": "entity",
                    "scopeRef": "acme",
                    "title": f"Note {i}",
                    "summary": f"- weekly pacing note number {i}",
                    "tags": ["note"],
                },
            )
            assert r.status_code == 201, r.text
    assert _counts(tmp_path) == (0, ENTRIES)

    # Small batches, so the kill lands between two of them.
    slow = {"JET_WORKERS": "1", "JET_EMBED_BATCH": "2", "JET_EMBED_INTERVAL_SECONDS": "0.05"}
    with _serve(tmp_path, slow) as (_, proc):
        _wait(lambda: _counts(tmp_path)[0] > 0, "the indexer started")
        proc.kill()  # SIGKILL: no shutdown, no cleanup, a batch possibly half done
        proc.wait(timeout=30)
    before, total = _counts(tmp_path)
    assert 0 < before < total == ENTRIES, "killed in the middle of embedding"

    with _serve(tmp_path, slow) as (url, _):
        _wait(lambda: _counts(tmp_path)[0] == ENTRIES, "the indexer caught up")
        metrics = httpx.get(f"{url}/metrics", timeout=10).text
        (embedded,) = re.findall(r"^jet_entries_embedded_total ([0-9.e+]+)$", metrics, re.M)
        assert float(embedded) == ENTRIES - before, "only what the killed process left"
    assert _counts(tmp_path) == (ENTRIES, ENTRIES)
