"""`jet-memory export` and `jet-memory import`, as an operator runs them: files, stdout,
errors, and progress only on a terminal."""

import asyncio
import io
from pathlib import Path

import orjson
import pytest

from app import cli
from app.cli.portability import Progress
from app.config import Settings
from app.deps import build
from tests.services.portability_data import ABSENT, NOT_AN_ID, fill, rebuild, version_line


@pytest.fixture
def data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Path:
    monkeypatch.setenv("JET_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("JET_LOG_LEVEL", "warning")
    assert jet(capsys, "migrate")[0] == 0  # the one command besides `dev` that creates it
    return tmp_path / "data"


def jet(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_export_then_import_into_another_tenant(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert jet(capsys, "tenants", "create", "acme")[0] == 0
    assert jet(capsys, "tenants", "create", "copy")[0] == 0

    async def seed() -> None:
        c = await build(Settings(_env_file=None, data_dir=data_dir))  # type: ignore[call-arg]
        try:
            tenant = await c.control.find_tenant("acme")
            assert tenant is not None
            async with c.tenants.lease(tenant.id) as db:
                await fill(c, tenant.id, db)
        finally:
            await c.aclose()

    asyncio.run(seed())
    target = tmp_path / "acme.jsonl"
    code, out, err = jet(capsys, "export", "acme", "-o", str(target))
    assert code == 0, err
    assert (
        "exported 3 entry, 10 event, 5 provenance, 1 entry_version, 1 compaction_run, 1 llm_call"
        in out
    )
    assert err == "" and not (tmp_path / "acme.jsonl.partial").exists()  # no progress in a pipe
    code, out, err = jet(capsys, "import", "copy", str(target))
    assert code == 0, err
    assert "imported 21 records" in out and "0 already present" in out and err == ""
    code, out, _ = jet(capsys, "import", "copy", str(target))
    assert "stored 0 entry" in out and "21 already present" in out
    # To stdout: the file there, the report on stderr; the same records as the copy's.
    code, out, err = jet(capsys, "export", "copy")
    assert code == 0 and "exported 3 entry" in err
    lines = out.encode().splitlines()
    assert lines[1:] == target.read_bytes().splitlines()[1:]
    code, out, err = jet(capsys, "export", "acme", "--scope", "entity", "--scope-ref", "ent_acme")
    assert code == 0 and orjson.loads(out.splitlines()[0])["scope_ref"] == "ent_acme"


def test_errors_are_one_line(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert jet(capsys, "tenants", "create", "acme")[0] == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"format":"jet-memory-export","version":9}\n')
    for argv, message in (
        (["import", "acme", str(bad)], "error: line 1: format version 9 is not supported"),
        (["import", "acme", str(tmp_path / "none")], "error: no such file"),
        (["import", "nobody", str(bad)], "error: no tenant"),
        (["export", "acme", "--scope", "galaxy"], "error: --scope must be one of"),
        (["export", "acme", "--scope", "entity"], "error: scopeRef is required"),
        (["export", "acme", "--scope-ref", "x"], "error: --scope-ref needs --scope"),
    ):
        code, out, err = jet(capsys, *argv)
        assert code == 1 and err.startswith(message), (argv, err)
        assert "Traceback" not in err and out == ""


def test_the_history_of_an_entry_that_never_existed_is_refused(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert jet(capsys, "tenants", "create", "acme")[0] == 0
    for entry_id, message in (
        (NOT_AN_ID, "entry_id must be an id of the form mem_"),
        (ABSENT, f"entry_id '{ABSENT}' names an entry that is neither in the tenant"),
    ):
        made_up = tmp_path / "made-up.jsonl"
        made_up.write_bytes(rebuild([version_line(entry_id)]))
        code, out, err = jet(capsys, "import", "acme", str(made_up))
        assert code == 1 and out == "", (entry_id, out)
        assert err.startswith(f"error: line 2 (entry_version): {message}"), err
        code, out, err = jet(capsys, "export", "acme")
        assert code == 0 and "exported 0 entry, 0 event, 0 provenance, 0 entry_version" in err


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_shows_on_a_terminal_only() -> None:
    shown = Terminal()
    progress = Progress("imported", shown)
    progress(10, 20)
    progress(20, 20)
    progress.close()
    assert shown.getvalue() == "\rimported 10/20 (50%) records\rimported 20/20 (100%) records\n"
    piped = io.StringIO()
    progress = Progress("exported", piped)
    progress(10)
    progress.close()
    assert piped.getvalue() == ""
