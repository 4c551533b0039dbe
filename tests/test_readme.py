"""The README is the front door: short, every link leads somewhere, and its first session
works when typed as written (a test types it against a real server)."""

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from app.cli import parser

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
OPERATIONS = (ROOT / "docs" / "operations.md").read_text()
BIN = Path(sys.executable).parent
DEV_URL = "http://127.0.0.1:8000"

# Documents written on other branches of the same change; empty this once they are merged.
WRITTEN_ELSEWHERE = {"docs/fast-paths.md"}


def session_blocks() -> list[str]:
    """The shell blocks of "A first session", in order."""
    section = README.split("\n## A first session\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)```", section, re.S)


def test_the_readme_stays_short() -> None:
    assert len(README.splitlines()) <= 180, "move the detail into a docs/ topic file"


def test_every_relative_link_leads_to_a_file() -> None:
    targets = re.findall(r"\]\(((?!https?:|#)[^)#]+)", README)
    assert "docs/configuration.md" in targets
    missing = [t for t in targets if not (ROOT / t).exists() and t not in WRITTEN_ELSEWHERE]
    assert missing == []


def test_every_docs_page_is_linked_from_the_readme() -> None:
    pages = {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}
    assert sorted(pages - set(re.findall(r"\]\((docs/[^)#]+)", README))) == []


def test_every_cli_command_is_documented() -> None:
    sub = next(a for a in parser()._actions if a.dest == "command")
    missing = [c for c in sub.choices if f"jet-memory {c}" not in OPERATIONS]  # type: ignore[union-attr]
    assert missing == [], "add these commands to docs/operations.md"


def test_the_first_session_creates_before_it_searches() -> None:
    text = "\n".join(session_blocks())
    assert session_blocks()[0].strip() == "make serve"
    assert "export JET_URL=" in text and "export JET_API_KEY=$(cat data/.dev-api-key)" in text
    create = text.index('"$JET_URL/memory" ')
    search = text.index('"$JET_URL/memory?')
    append = text.index('"$JET_URL/memory/events"')
    assert append < create < search
    # Whoever has not activated the virtualenv can still type every command as written.
    assert re.findall(r"^(?!\.venv/bin/)jet-memory ", text, re.M) == []


def _wait_for(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 120
    while True:
        assert proc.poll() is None, log.read_text()
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)  # bounded polling until the server answers


@pytest.mark.slow
def test_the_first_session_works_as_written(tmp_path: Path) -> None:
    # `make serve` is `jet-memory migrate`, `dev`, `up`; here the API alone serves (the
    # session needs no worker) in a scratch directory standing in for the repository root.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("JET_")}
    env |= {"JET_PORT": str(port), "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}"}
    for command in ("migrate", "dev"):
        subprocess.run([BIN / "jet-memory", command], cwd=tmp_path, env=env, check=True)
    assert (tmp_path / "data" / ".dev-api-key").read_text().startswith("jm_")
    (tmp_path / ".venv").symlink_to(BIN.parent)

    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [BIN / "jet-memory", "serve"], cwd=tmp_path, env=env, stdout=out, stderr=out
        )
    try:
        _wait_for(url, server, log)
        shell = "set -e\n"
        for block in session_blocks()[1:]:
            shell += block.replace(DEV_URL, url) + "\necho '<<block>>'\n"
        done = subprocess.run(
            ["bash", "-c", shell], cwd=tmp_path, env=env, capture_output=True, timeout=60
        )
        assert done.returncode == 0, done.stderr.decode()
        outputs = done.stdout.decode().split("<<block>>")
    finally:
        server.terminate()
        server.wait(timeout=15)

    _, append, create, search, context, compact, _ = outputs
    assert '"id":"evt_' in append and '"kind":"decision"' in append
    entry_id = re.search(r'"id":"(mem_\w+)"', create)
    assert entry_id is not None and '"version":1' in create
    assert entry_id.group(1) in search and '"score":' in search
    assert entry_id.group(1) in context and "Acme agreed to raise the ROAS target" in context
    assert "(dev): succeeded (dry run)" in compact


def _anchor(heading: str) -> str:
    """GitHub's anchor for a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_every_link_between_documents_leads_somewhere() -> None:
    broken = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target, anchor in re.findall(
            r"\]\(((?!https?:)[^)#\s]*)(?:#([^)\s]+))?\)", page.read_text()
        ):
            path = (page.parent / target).resolve() if target else page
            if path.relative_to(ROOT).as_posix() in WRITTEN_ELSEWHERE:
                continue
            if not path.exists():
                broken.append(f"{page.name}: {target}")
            elif anchor and path.suffix == ".md":
                headings = re.findall(r"^#+ (.+)$", path.read_text(), re.M)
                if anchor not in {_anchor(h) for h in headings}:
                    broken.append(f"{page.name}: {target}#{anchor}")
    assert broken == []


def layout_paths() -> list[tuple[str, list[Path]]]:
    """Each path the README's layout names, with where it may be: a name in the left column
    under its folder; a path in a description under its entry or at the root."""
    block = README.split("\n## Layout\n", 1)[1].split("```")[1]
    found: list[tuple[str, list[Path]]] = []
    top = entry = ROOT
    for line in block.splitlines()[1:]:
        indent = len(line) - len(line.lstrip(" "))
        names, _, description = line.strip().partition("  ")
        if indent in (0, 2) and line.strip():
            base = ROOT if indent == 0 else top
            for name in names.split():
                found.append((name, [base / name]))
            entry = base / names.split()[0]
            if indent == 0:
                top = entry
        else:
            description = line.strip()
        for path in re.findall(r"(?<![\w./-])([\w-]+(?:/[\w-]+)*(?:/|\.(?:py|txt)))", description):
            found.append((path, [entry / path, ROOT / path]))
    return found


def test_every_path_in_the_layout_exists() -> None:
    paths = layout_paths()
    assert {"app/", "edge/", "mcp/", "console/"} <= {p for p, _ in paths}
    assert [p for p, where in paths if not any(w.exists() for w in where)] == []
