"""The CLI creates a control database only when told to (`migrate`, `dev`): any other command
run against a data directory without one says where it looked and leaves nothing behind."""

from pathlib import Path

import pytest

from app import cli

# A command of each module that adds data commands; each reaches the control database.
DATA_COMMANDS = [
    ["tenants", "list"],
    ["tenants", "create", "acme"],
    ["tenants", "show", "dev"],
    ["keys", "list", "dev"],
    ["compact", "--tenant", "dev", "--dry-run"],
    ["export", "dev"],
    ["import", "dev", "{file}"],
    ["erasures", "--tenant", "dev"],
    ["webhooks", "list", "--tenant", "dev"],
    ["search", "dev"],
]


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("JET_DATA_DIR", str(tmp_path / "elsewhere" / "data"))
    monkeypatch.setenv("JET_LOG_LEVEL", "warning")
    monkeypatch.delenv("JET_DATABASE_URL", raising=False)
    return tmp_path / "elsewhere" / "data"


@pytest.mark.parametrize("argv", DATA_COMMANDS, ids=lambda argv: " ".join(argv[:2]))
def test_a_data_command_creates_no_control_database(
    argv: list[str], data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    export = tmp_path / "export.jsonl"
    export.write_text("")
    code = cli.main([a.replace("{file}", str(export)) for a in argv])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert err == (
        f"error: no control database in {data_dir} (JET_DATA_DIR): point JET_DATA_DIR at the "
        "server's data directory, or create one there with `jet-memory migrate`\n"
    )
    assert not data_dir.exists()


def test_a_relative_data_directory_is_named_in_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JET_DATA_DIR", "data")
    assert cli.main(["tenants", "list"]) == 1
    assert f"no control database in {tmp_path / 'data'} (JET_DATA_DIR)" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["migrate", "dev"])
def test_migrate_and_dev_create_it(
    command: str, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main([command]) == 0
    capsys.readouterr()
    assert (data_dir / "control.db").is_file()
    assert cli.main(["tenants", "list"]) == 0
