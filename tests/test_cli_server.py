"""`jet-memory serve` and `up` on a port something else holds: one line naming the setting that
changes the port, exit 1, no traceback, and (for `up`) nothing started."""

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from app import cli

JET = Path(sys.executable).parent / "jet-memory"


@pytest.fixture
def held_port() -> Iterator[int]:
    """A port another program listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def busy(port: int) -> str:
    return (
        f"error: port {port} on 127.0.0.1 is in use: stop what holds it, or set JET_PORT "
        "(or --port) to another port\n"
    )


@pytest.mark.parametrize("source", ["--port", "JET_PORT"])
def test_serve_names_the_setting(
    source: str,
    held_port: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("JET_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("JET_HOST", "127.0.0.1")
    argv = ["serve"]
    if source == "JET_PORT":
        monkeypatch.setenv("JET_PORT", str(held_port))
    else:
        argv += ["--port", str(held_port)]
    assert cli.main(argv) == 1
    assert capsys.readouterr().err == busy(held_port)


def test_an_address_it_cannot_listen_on_names_both_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("JET_DATA_DIR", str(tmp_path / "data"))
    # TEST-NET-1 (RFC 5737): never an address of this machine.
    assert cli.main(["serve", "--host", "192.0.2.1", "--port", "8000"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: cannot listen on 192.0.2.1:8000 (") and err.count("\n") == 1
    assert "set JET_HOST and JET_PORT (or --host and --port)" in err


@pytest.mark.slow
def test_up_stops_before_starting_anything(held_port: int, tmp_path: Path) -> None:
    """What `make serve` runs last: a real process, so the whole output is seen."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JET_")}
    env |= {"JET_DATA_DIR": str(tmp_path / "data"), "JET_PORT": str(held_port)}
    done = subprocess.run(
        [str(JET), "up", "--host", "127.0.0.1"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stderr == busy(held_port) and done.stdout == ""
    assert not (tmp_path / "data" / "redis").exists()  # no embedded Redis was started
