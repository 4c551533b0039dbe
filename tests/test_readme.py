"""The README is the front door: every setting and CLI command it must document is there."""

from pathlib import Path

from app.cli import parser
from app.config import Settings

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def test_every_setting_is_documented() -> None:
    missing = [
        f"JET_{n.upper()}" for n in Settings.model_fields if f"`JET_{n.upper()}`" not in README
    ]
    assert missing == [], "add these settings to the README's configuration table"


def test_every_cli_command_is_documented() -> None:
    sub = next(a for a in parser()._actions if a.dest == "command")
    missing = [c for c in sub.choices if f"jet-memory {c}" not in README]  # type: ignore[union-attr]
    assert missing == []
