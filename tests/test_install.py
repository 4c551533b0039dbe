"""The package as a deployment gets it, without the Makefile or the checkout: the Dockerfile's
builder stage (its files copied, its pip commands run, in a fresh virtualenv), then the
installed `jet-memory` from another directory: migrate, a tenant, `serve`, a REST call and a
GraphQL query. Then without the local embedder, as `pip install jet-memory` alone leaves it:
it still serves, searches by keywords, and says once how to install the embedder. A second
test holds the Dockerfile to the same commands. No Docker engine needed."""

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.support.servers import free_port, serving
from tests.test_entrypoints import dockerfile_instructions

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "Dockerfile"
VENV = "/opt/venv"  # the Dockerfile's virtualenv
# What the builder stage copies into its WORKDIR, and its pip commands in order (`pip`: the
# virtualenv's, run in the WORKDIR). The install test runs exactly these.
BUILD_FILES = [
    "requirements/embedder.txt",
    "pyproject.toml",
    "setup.py",
    "README.md",
    "app",
    "migrations",
]
INSTALL_STEPS = [
    "pip install --require-hashes --no-deps -r requirements/embedder.txt",
    "pip wheel --no-deps --wheel-dir dist .",
    "pip install dist/jet_memory-*.whl",
]
# The local embedder's packages that the package itself does not need (numpy it does).
EMBEDDER_ONLY = "wordllama safetensors tokenizers toml requests urllib3 charset-normalizer".split()
EMBEDDER_HINT = "pip install --require-hashes --no-deps -r requirements/embedder.txt"
SITE = Path("lib") / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
STEP_SECONDS = 600  # a bound for one pip command on a cold cache, not a timing assumption


def builder_stage() -> list[tuple[str, str]]:
    """The instructions of the Dockerfile's `builder` stage."""
    stage: list[tuple[str, str]] = []
    inside = False
    for keyword, args in dockerfile_instructions(DOCKERFILE.read_text(), final_stage=False):
        if keyword == "FROM":
            inside = args.endswith(" AS builder")
        elif inside:
            stage.append((keyword, args))
    assert stage, "the Dockerfile has no `builder` stage"
    return stage


def simple_commands(shell: str) -> list[list[str]]:
    """A RUN line's simple commands (split at &&, || and ;, braces dropped)."""
    lexer = shlex.shlex(shell, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    commands: list[list[str]] = [[]]
    for token in lexer:
        if token in ("&&", "||", ";"):
            commands.append([])
        elif token not in ("{", "}"):
            commands[-1].append(token)
    return [c for c in commands if c]


def test_the_dockerfile_installs_what_the_install_test_installs() -> None:
    stage = builder_stage()
    copied = [source for k, a in stage if k == "COPY" for source in a.split()[:-1]]
    assert sorted(copied) == sorted(BUILD_FILES)
    commands = [c for k, a in stage if k == "RUN" for c in simple_commands(a)]
    assert ["python", "-m", "venv", VENV] in commands
    pip = [c for c in commands if "pip" in c[0]]
    assert all(c[0] == f"{VENV}/bin/pip" for c in pip), pip
    assert [["pip", *c[1:]] for c in pip] == [shlex.split(s) for s in INSTALL_STEPS]
    # The image runs the installed wheel: the final stage copies no code of its own.
    final = dockerfile_instructions(DOCKERFILE.read_text())
    assert f"--from=builder {VENV} {VENV}" in [a for k, a in final if k == "COPY"]
    assert not [a for k, a in final if k == "COPY" and "--from=" not in a]


@pytest.fixture
def outside(tmp_path: Path) -> dict[str, str]:
    """The environment of a process run from outside the checkout: no JET_* and no path
    that leads back to it."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("JET_") and k not in ("PYTHONPATH", "VIRTUAL_ENV")
    }
    data = str(tmp_path / "data")
    return env | {"JET_DATA_DIR": data, "JET_LOG_LEVEL": "info", "PYTHONUNBUFFERED": "1"}


def run(argv: list[str], env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run(
        argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=STEP_SECONDS
    )
    assert done.returncode == 0, f"{argv}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def install(venv: Path, context: Path, env: dict[str, str]) -> None:
    """The builder stage: its files copied into `context`, its pip commands run there."""
    for name in BUILD_FILES:
        source, target = ROOT / name, context / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():  # as .dockerignore leaves them
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(source, target)
    run([sys.executable, "-m", "venv", str(venv)], env, context)
    for step in INSTALL_STEPS:
        argv = shlex.split(step)
        # The shell's glob, as the RUN line's shell expands it.
        args = [str(next(context.glob(a))) if "*" in a else a for a in argv[1:]]
        run([str(venv / "bin" / "pip"), *args], env, context)


def serve_and_ask(jet: Path, env: dict[str, str], cwd: Path, log: Path, key: str) -> str:
    """Serve, store an entry over REST, find it by a word over REST and over GraphQL; the
    server's log."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [str(jet), "serve", "--host", "127.0.0.1", "--port", str(port)]
    headers = {"Authorization": f"Bearer {key}"}
    with (
        serving(argv, url=url, env=env, cwd=cwd, log=log),
        httpx.Client(base_url=url, headers=headers, timeout=30) as client,
    ):
        entry = {"scope": "entity", "scopeRef": "ent_acme", "title": f"ROAS target {log.stem}"}
        made = client.post("/memory", json=entry | {"summary": "Agreed on the quarterly call."})
        assert made.status_code == 201, made.text
        found = client.get(
            "/memory", params={"scope": "entity", "scopeRef": "ent_acme", "search": "ROAS"}
        )
        assert made.json()["id"] in [item["id"] for item in found.json()["items"]]
        query = '{ memoryEntries(filter: {search: "quarterly"}) { edges { node { id } } } }'
        answer = client.post("/graphql", json={"query": query}).json()
        ids = [e["node"]["id"] for e in answer["data"]["memoryEntries"]["edges"]]
        assert made.json()["id"] in ids, answer
        # The console's files are package data of the wheel.
        assert client.get("/console/app/main.js").status_code == 200
    return log.read_text()


@pytest.mark.slow
def test_the_built_wheel_serves_from_a_fresh_virtualenv(
    tmp_path: Path, outside: dict[str, str]
) -> None:
    venv, context, work = tmp_path / "venv", tmp_path / "context", tmp_path / "work"
    work.mkdir()
    install(venv, context, outside)
    shutil.rmtree(context)  # nothing may be read from the sources once installed
    python, jet = venv / "bin" / "python", venv / "bin" / "jet-memory"

    # Everything from the virtualenv; the image keeps search by meaning: the local model loads
    # from its hash-checked wheel.
    code = (
        "import app, app.storage.migrate as m, app.adapters.embedders as e\n"
        "print(app.__file__, m.MIGRATIONS_DIR, e.load_local().embed_now(['x']).shape)"
    )
    package, migrations, shape = run([str(python), "-c", code], outside, work).split(" ", 2)
    assert package == str(venv / SITE / "app" / "__init__.py")
    assert migrations == str(venv / SITE / "app" / "migrations")
    assert shape.strip() == "(1, 256)"

    run([str(jet), "migrate"], outside, work)
    key = run([str(jet), "tenants", "create", "acme"], outside, work).strip().splitlines()[-1]
    log = serve_and_ask(jet, outside, work, tmp_path / "with-embedder.log", key)
    assert "local embedder is not installed" not in log

    # What a pip install of the package alone has: numpy (a dependency), no local model.
    (metadata,) = (venv / SITE).glob("jet_memory-*.dist-info/METADATA")
    assert "Requires-Dist: numpy" in metadata.read_text()
    run([str(python), "-m", "pip", "uninstall", "--yes", *EMBEDDER_ONLY], outside, work)
    log = serve_and_ask(jet, outside, work, tmp_path / "keywords-only.log", key)
    warnings = [line for line in log.splitlines() if "local embedder is not installed" in line]
    assert len(warnings) == 1 and EMBEDDER_HINT in warnings[0], log
    assert "Traceback" not in log
