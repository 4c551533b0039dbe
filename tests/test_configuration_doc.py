"""docs/configuration.md is generated from Settings: it may not drift, nor have a blank row."""

from pathlib import Path

import pytest
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from app.config import Settings
from tools import configdoc


def test_the_committed_reference_is_what_the_generator_writes() -> None:
    committed = configdoc.TARGET.read_text()
    assert committed == configdoc.render(), "run `python -m tools.configdoc` and commit the result"


def test_every_setting_has_a_description() -> None:
    blank = [n for n, f in Settings.model_fields.items() if not (f.description or "").strip()]
    assert blank == []


def test_every_setting_has_its_row() -> None:
    text = configdoc.render()
    for name in Settings.model_fields:
        assert f"| `JET_{name.upper()}` |" in text


def test_a_field_without_a_description_is_refused_by_name() -> None:
    class Undocumented(BaseSettings):
        model_config = SettingsConfigDict(env_prefix="JET_")
        documented: int = Field(default=1, description="Has one.")
        bare: int = 2

    with pytest.raises(ValueError, match="JET_BARE has no description"):
        configdoc.render(Undocumented)


def test_defaults_and_bounds_are_rendered_from_the_field() -> None:
    class Sample(BaseSettings):
        model_config = SettingsConfigDict(env_prefix="JET_")
        pool: int = Field(default=20, ge=1, le=500, description="Pool.")
        token: str | None = Field(default=None, description="Token.")
        where: Path = Field(default=configdoc.ROOT / "assets", description="Where.")

    rows = configdoc.render(Sample).splitlines()[-3:]
    assert rows == [
        "| `JET_POOL` | `20` | integer, 1 to 500 | Pool. |",
        "| `JET_TOKEN` | unset | text; may be unset | Token. |",
        "| `JET_WHERE` | `<source>/assets` | a path | Where. |",
    ]


def test_the_command_writes_the_file(tmp_path: Path) -> None:
    out = tmp_path / "configuration.md"
    assert configdoc.main(["-o", str(out)]) == 0
    assert out.read_text() == configdoc.render()
