"""bench/soak.py for ~10 s against a real `jet-memory serve`: zero lost, zero duplicated."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
SOAK = Path(__file__).resolve().parents[2] / "bench" / "soak.py"


def test_soak_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    out = tmp_path / "soak.json"
    done = subprocess.run(
        [
            sys.executable,
            str(SOAK),
            "--seconds",
            "10",
            "--concurrency",
            "12",
            "--json",
            str(out),
            "--rss-every",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    report = json.loads(out.read_text())
    assert report["lost"] == 0 and report["duplicated"] == 0 and report["errors"] == 0
    assert report["acked_appends"] > 100 and report["retries"] > 10 and report["replays"] > 10
    assert len(report["tenants"]) == 3
    for tenant in report["tenants"]:
        assert tenant["stored_events"] == tenant["acked_keys"] > 0  # nothing unanswered either
    ops = set(report["ops"])
    assert {
        "append_rest",
        "append_gql",
        "batch_rest",
        "entry_create",
        "list_events",
        "memory_context",
        "search_entries",
        "search_events_gql",
    } <= ops
    # The server's RSS over the run, sampled every 2 s and drawn: where a leak shows.
    rss = report["rss"]
    assert len(rss["samples"]) >= 4 and 50 < rss["first_mib"] <= rss["max_mib"]
    assert rss["second_half_mib_per_min"] is not None
    assert "MiB +" in done.stdout and "server RSS:" in done.stdout
