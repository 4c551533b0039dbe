"""The container entrypoints, run outside Docker: the Dockerfile's ENTRYPOINT + CMD (the API),
docker-compose.yml's `command:` for every jet-memory service (API and worker), and the
healthchecks both files declare, as subprocesses on this machine with the compose
environment (data dir and Redis pointed at throwaway ones). No Docker engine needed."""

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml  # type: ignore[import-untyped]  # PyYAML: via schemathesis (dev)
from sqlalchemy.engine import make_url

from app.config import Settings
from tests.support.servers import free_port

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "Dockerfile"
COMPOSE = ROOT / "docker-compose.yml"
COMPOSE_POSTGRES = ROOT / "docker-compose.postgres.yml"
BIN = Path(sys.executable).parent
# A bound, not a timing assumption: the image and compose run JET_WORKERS=0 (one API
# process per core), so several processes import the app at once on a busy machine.
STARTUP_SECONDS = 240.0
STOP_SECONDS = 15.0

pytestmark = pytest.mark.slow


# --- reading the files ------------------------------------------------------------------


def dockerfile_instructions(text: str, *, final_stage: bool = True) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments), with `\\` continuations joined: of the final stage only,
    unless `final_stage` is false."""
    instructions: list[tuple[str, str]] = []
    current = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not current and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):  # a comment inside a continued instruction
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        current += line
        keyword, _, args = current.partition(" ")
        instructions.append((keyword.upper(), args.strip()))
        current = ""
    if not final_stage:
        return instructions
    last_from = max(i for i, (kw, _) in enumerate(instructions) if kw == "FROM")
    return instructions[last_from:]


def exec_form(args: str) -> list[str]:
    value = json.loads(args)
    assert isinstance(value, list) and all(isinstance(v, str) for v in value), args
    return value


class Image:
    """What `docker run` would take from the Dockerfile's final stage."""

    def __init__(self, path: Path) -> None:
        self.env: dict[str, str] = {}
        self.entrypoint: list[str] = []
        self.cmd: list[str] = []
        self.healthcheck: list[str] = []
        self.user = ""
        self.volumes: list[str] = []
        for keyword, args in dockerfile_instructions(path.read_text()):
            if keyword == "ENV":
                for pair in shlex.split(args):
                    key, _, value = pair.partition("=")
                    self.env[key] = value
            elif keyword == "ENTRYPOINT":
                self.entrypoint = exec_form(args)
            elif keyword == "CMD":
                self.cmd = exec_form(args)
            elif keyword == "USER":
                self.user = args
            elif keyword == "VOLUME":
                self.volumes = exec_form(args)
            elif keyword == "HEALTHCHECK":
                _, _, command = args.partition("CMD ")
                self.healthcheck = exec_form(command)


def compose_file() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(data, dict)
    return data


def compose_env(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):  # the KEY=value list form
        env = dict(item.partition("=")[::2] for item in env)
    return {str(k): str(v) for k, v in env.items()}


def healthcheck_argv(service: dict[str, Any]) -> list[str]:
    test = service["healthcheck"]["test"]
    assert test[0] in ("CMD", "CMD-SHELL"), test
    return list(test[1:]) if test[0] == "CMD" else ["sh", "-c", test[1]]


# --- running them -----------------------------------------------------------------------


def container_env(
    image: Image, service: dict[str, Any], *, data_dir: Path, redis_url: str, port: int
) -> dict[str, str]:
    """The image's ENV, then the compose service's environment, then this machine's stand-ins:
    the venv's bin instead of /opt/venv/bin, a temp data dir instead of the /data volume, the
    test's Redis instead of the `redis` service, 127.0.0.1 and a free port."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("JET_")}
    env = base | image.env | compose_env(service)
    env.pop("JET_ASSETS_DIR", None)  # /srv/assets/…: here the checkout's own assets
    return env | {
        "PATH": f"{BIN}{os.pathsep}{base.get('PATH', '')}",
        "JET_DATA_DIR": str(data_dir),
        "JET_REDIS_URL": redis_url,
        "JET_HOST": "127.0.0.1",
        "JET_PORT": str(port),
    }


def stop(proc: "subprocess.Popen[bytes]") -> None:
    if proc.poll() is None:
        os.kill(proc.pid, 15)  # SIGTERM, as `docker stop` sends
        try:
            proc.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, 9)
            proc.wait(5)


def wait_for(predicate: Any, proc: "subprocess.Popen[bytes]", log: Path, what: str) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while not predicate():
        assert proc.poll() is None, f"{what}: exited with {proc.returncode}:\n{log.read_text()}"
        assert time.monotonic() < deadline, f"{what}: not ready in time:\n{log.read_text()}"
        time.sleep(0.1)


def healthz_ok(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=1).status_code == 200
    except httpx.TransportError:
        return False


def run_check(
    argv: list[str], env: dict[str, str], cwd: Path
) -> "subprocess.CompletedProcess[str]":
    return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=30)


# --- the tests --------------------------------------------------------------------------


def test_the_files_say_what_the_test_runs() -> None:
    image = Image(DOCKERFILE)
    services = compose_file()["services"]
    assert image.entrypoint == ["jet-memory"] and image.cmd == ["serve"]
    assert image.user and image.user != "root" and image.volumes == ["/data"]
    assert image.env["JET_DATA_DIR"] == "/data" and image.healthcheck
    assert services["api"]["command"] == ["serve"]
    assert "/readyz" in " ".join(healthcheck_argv(services["api"]))
    assert services["worker"]["command"] == ["worker"]
    assert services["redis"]["image"].startswith("redis:")
    assert healthcheck_argv(services["redis"]) == ["redis-cli", "ping"]
    for name in ("api", "worker"):
        env = compose_env(services[name])
        assert env["JET_REDIS_URL"] == "redis://redis:6379/0" and env["JET_DATA_DIR"] == "/data"
        assert "jet-data:/data" in services[name]["volumes"] and services[name]["restart"]
        assert services[name]["depends_on"]["redis"]["condition"] == "service_healthy"
    # Every COPY source exists in the build context and is not excluded by .dockerignore.
    ignored = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    copied = 0
    for keyword, args in dockerfile_instructions(DOCKERFILE.read_text(), final_stage=False):
        assert keyword != "ADD", args
        if keyword == "COPY" and "--from=" not in args:
            for source in args.split()[:-1]:
                assert (ROOT / source).exists(), source
                assert source not in ignored and source.split("/")[0] not in ignored, source
                copied += 1
    assert copied >= 5


def test_the_postgres_override_gives_both_services_a_valid_database_url() -> None:
    base = compose_file()["services"]
    override = yaml.safe_load(COMPOSE_POSTGRES.read_text())["services"]
    pg = override["postgres"]
    assert int(pg["image"].split(":")[1]) >= 15 and healthcheck_argv(pg)[0] == "pg_isready"
    max_connections = int(pg["command"][pg["command"].index("-c") + 1].split("=")[1])
    for name in ("api", "worker"):
        assert name in base and override[name]["depends_on"]["postgres"]["condition"] == (
            "service_healthy"
        )
        env = compose_env(override[name])
        # What compose substitutes for ${JET_POSTGRES_PASSWORD:?…}, then the app's own check.
        url = env["JET_DATABASE_URL"].replace(
            "${JET_POSTGRES_PASSWORD:?set JET_POSTGRES_PASSWORD}", "pw"
        )
        settings = Settings(_env_file=None, database_url=url)  # type: ignore[call-arg]
        assert settings.storage_label == "PostgreSQL postgres:5432/jet"
        parsed = make_url(url)
        assert (parsed.username, parsed.database) == (
            pg["environment"]["POSTGRES_USER"],
            pg["environment"]["POSTGRES_DB"],
        )
        # Room for an API, a few workers and the CLI, each with its pool + 4 control.
        assert max_connections >= 5 * (settings.postgres_pool_size + 4)


def test_api_and_worker_run_as_the_image_and_compose_run_them(
    tmp_path: Path, redis_url: str
) -> None:
    image = Image(DOCKERFILE)
    services = compose_file()["services"]
    procs: dict[str, subprocess.Popen[bytes]] = {}
    logs: dict[str, Path] = {}
    envs: dict[str, dict[str, str]] = {}
    runs = {
        # `docker run jet-memory`: ENTRYPOINT + CMD; then what compose runs for each service.
        "image": (image.entrypoint + image.cmd, {}),
        "api": (image.entrypoint + services["api"]["command"], services["api"]),
        "worker": (image.entrypoint + services["worker"]["command"], services["worker"]),
    }
    try:
        for name, (argv, service) in runs.items():
            # The compose services share one data volume, as in docker-compose.yml.
            data_dir = tmp_path / ("image-data" if name == "image" else "data")
            envs[name] = container_env(
                image, service, data_dir=data_dir, redis_url=redis_url, port=free_port()
            )
            logs[name] = tmp_path / f"{name}.log"
            with logs[name].open("wb") as out:
                procs[name] = subprocess.Popen(
                    argv, env=envs[name], cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT
                )
        for name in ("image", "api"):
            url = f"http://127.0.0.1:{envs[name]['JET_PORT']}"
            wait_for(lambda url=url: healthz_ok(url), procs[name], logs[name], name)
            assert httpx.get(f"{url}/healthz", timeout=5).json()["status"] == "ok"
        wait_for(
            lambda: "worker ready" in logs["worker"].read_text(),
            procs["worker"],
            logs["worker"],
            "worker",
        )

        # The healthchecks, as Docker would run them inside each container.
        for name in ("image", "api"):
            argv = image.healthcheck if name == "image" else healthcheck_argv(services["api"])
            done = run_check(argv, envs[name], tmp_path)
            assert done.returncode == 0, f"{name} healthcheck: {done.stderr}"
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:  # the worker records its health key on its first poll of the queue
            done = run_check(healthcheck_argv(services["worker"]), envs["worker"], tmp_path)
            if done.returncode == 0:
                break
            assert time.monotonic() < deadline, f"worker healthcheck: {done.stdout}{done.stderr}"
            time.sleep(0.5)

        # And the API's healthcheck fails once the API is gone.
        stop(procs["api"])
        done = run_check(healthcheck_argv(services["api"]), envs["api"], tmp_path)
        assert done.returncode != 0
    finally:
        for proc in procs.values():
            stop(proc)
    for name, proc in procs.items():
        assert proc.returncode is not None, name
