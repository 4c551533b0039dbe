"""`jet-memory tenants configure|show` and `jet-memory compact`, as an operator runs them."""

import asyncio
import getpass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from app import cli
from app.config import Settings
from app.deps import build
from app.services import events
from app.services.records import EventIn, Scope

KEY = "gk-live-NEVERPRINTED0123456789"


@pytest.fixture
def data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Path:
    monkeypatch.setenv("JET_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("JET_LOG_LEVEL", "warning")
    monkeypatch.delenv("JET_GATEWAY_KEY", raising=False)
    assert jet(capsys, "migrate")[0] == 0  # the one command besides `dev` that creates it
    return tmp_path / "data"


def jet(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def acme(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> str:
    code, out, _ = jet(capsys, "tenants", "create", "acme")
    assert code == 0
    return out.split()[1]  # "tenant ten_… (acme) created; …"


def test_configure_and_show_never_print_the_key(
    acme: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JET_GATEWAY_KEY", KEY)
    code, out, err = jet(
        capsys,
        "tenants",
        "configure",
        "acme",
        "--gateway-url",
        "https://gw.example/v1",
        "--model",
        "m1",
        "--fallback-model",
        "m2",
        "--fallback-model",
        "m3",
        "--gateway-timeout",
        "20",
        "--dlp",
        "block",
        "--dlp-pattern",
        r"PRJ-\d{4}",
        "--budget-daily-tokens",
        "50000",
        "--budget-monthly-tokens",
        "unlimited",
    )
    assert code == 0, err
    assert out.splitlines() == [
        f"tenant {acme} (acme) policy:",
        "  gateway: https://gw.example/v1",
        "  gateway key: set",
        "  models: m1 → m2 → m3",
        "  gateway timeout: 20s",
        "  dlp: block",
        r"  dlp custom patterns: 'PRJ-\\d{4}'",
        "  budget per day: 50,000 tokens",
        "  budget per month: unlimited",
        "  embedder: local model",
    ]
    monkeypatch.delenv("JET_GATEWAY_KEY")
    code, shown, err = jet(capsys, "tenants", "show", acme)
    assert code == 0 and shown == out
    assert KEY not in out + err + shown

    # --model alone keeps the fallbacks; --fallback-model replaces them.
    code, out, _ = jet(capsys, "tenants", "configure", "acme", "--model", "m9")
    assert "  models: m9 → m2 → m3" in out.splitlines() and "gateway key: set" in out
    code, out, _ = jet(capsys, "tenants", "configure", "acme", "--fallback-model", "m4")
    assert "  models: m9 → m4" in out.splitlines()
    code, out, _ = jet(capsys, "tenants", "configure", "acme", "--clear-gateway")
    assert out.splitlines()[1] == "  gateway: none (built-in extractive summariser, no network)"
    assert "gateway key" not in out


def test_the_key_can_be_typed_in(
    acme: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    prompts: list[str] = []

    def fake_getpass(prompt: str = "") -> str:  # the terminal, which a test has not got
        prompts.append(prompt)
        return KEY

    monkeypatch.setattr(getpass, "getpass", fake_getpass)
    code, out, err = jet(
        capsys,
        "tenants",
        "configure",
        acme,
        "--gateway-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "m",
        "--gateway-key-prompt",
    )
    assert code == 0 and prompts == ["gateway key (not echoed): "]
    assert "gateway key: set" in out and KEY not in out + err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gateway-url", "https://u:NEVERPRINTED@gw/v1", "--model", "m"], "credentials"),
        (["--gateway-url", "https://gw.example/v1"], "needs at least one model"),
        (["--fallback-model", "m2"], "needs a --model"),
        (["--budget-daily-tokens", "lots"], "number of tokens or 'unlimited'"),
        (["--dlp-pattern", "(a+)+"], "DLP pattern #0 '(a+)+' repeats"),
    ],
)
def test_bad_settings_are_errors(
    acme: str, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code, out, err = jet(capsys, "tenants", "configure", "acme", *args)
    assert code == 1 and out == ""
    assert err.startswith("error: ") and message in err and "NEVERPRINTED" not in err


def test_show_an_unknown_tenant(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = jet(capsys, "tenants", "show", "nobody")
    # Where it looked: another data directory than the server's is the usual cause.
    assert code == 1 and err == (
        f"error: no tenant 'nobody' (looked in the data directory {data_dir}; JET_DATA_DIR)\n"
    )


def seed(data_dir: Path, tenant_id: str, bodies: list[str]) -> None:
    async def go() -> None:
        container = await build(Settings(_env_file=None, data_dir=data_dir))
        try:
            async with container.tenants.lease(tenant_id) as db:
                old = datetime.now(UTC) - timedelta(days=200)
                batch = [
                    EventIn(Scope.ENTITY, "ent_acme", "decision", body, occurred_at=old)
                    for body in bodies
                ]
                await events.append_events(db, batch)
        finally:
            await container.aclose()

    asyncio.run(go())


def test_compact_prints_one_line_per_run(
    acme: str, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = jet(capsys, "tenants", "create", "beta")
    seed(data_dir, acme, ["Acme approved the $45,000 budget.", "Priya will sign.", "Go live."])

    code, out, err = jet(capsys, "compact", "--dry-run")
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 2
    assert lines[0] == (
        f"{acme} (acme): succeeded (dry run); buckets 1/1 compacted, 0 skipped; 1 entries; "
        "3 events; tokens 0+0; summariser builtin-extractive-v2; 0 problems"
    )
    assert lines[1].endswith(
        "(beta): succeeded (dry run); buckets 0/0 compacted, 0 skipped; "
        "0 entries; 0 events; tokens 0+0; summariser builtin-extractive-v2; "
        "0 problems"
    )

    code, out, err = jet(capsys, "compact", "--tenant", "acme")
    assert code == 0, err
    assert out.startswith(f"{acme} (acme): succeeded; buckets 1/1 compacted") and "3 events" in out
    code, out, _ = jet(capsys, "compact", "--tenant", "acme")
    assert "buckets 0/0 compacted" in out


def test_a_failed_run_lists_its_problems_and_exits_1(
    acme: str, data_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(data_dir, acme, ["Short.", "Short too.", "A very long transcript. " * 300])
    monkeypatch.setenv("JET_COMPACTION_MAX_INPUT_TOKENS", "600")
    code, out, _ = jet(capsys, "compact", "--tenant", acme)
    assert code == 1
    first, problem = out.splitlines()
    assert first.startswith(f"{acme} (acme): failed; buckets 0/1 compacted, 1 skipped")
    assert (
        problem.startswith("  - entity ent_acme: event evt_") and "over compaction_max" in problem
    )
