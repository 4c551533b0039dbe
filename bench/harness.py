"""Shared pieces of the HTTP benchmarks (python -m bench): the server process, wrk,
the Python load generator, tenants, statistics and the results table.

The server is the real app (bench/benchapp.py wraps `app.edge.app.create_app`) under
uvicorn, one process, as `jet-memory serve` runs it; the load comes from other processes
(wrk, or bench/http_load.py) over 127.0.0.1; the server is stopped by its PID.
"""

import asyncio
import hashlib
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from app import logs
from app.config import Settings
from app.deps import Container, build
from app.services import tenants as tenant_service

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
RESULTS = BENCH / "results"
LUA = BENCH / "wrk_bench.lua"
PYTHON = sys.executable


# ------------------------------------------------------------------------- statistics


def pct(samples: Sequence[float], p: float) -> float:
    """The p-th percentile (0-100), linear interpolation between closest ranks."""
    if not samples:
        return float("nan")
    s = sorted(samples)
    k = (len(s) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def load_note() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


# ---------------------------------------------------------------------------- results


@dataclass
class Row:
    workload: str
    metric: str
    figure: float
    unit: str
    baseline: float | None = None
    baseline_label: str = ""
    ratio: float | None = None
    target: str = ""
    met: bool | None = None
    command: str = ""
    notes: str = ""

    def cells(self) -> list[str]:
        base = "" if self.baseline is None else f"{fmt(self.baseline)} {self.baseline_label}"
        ratio = "" if self.ratio is None else f"{self.ratio:.2f}x"
        met = {True: "yes", False: "**no**", None: "-"}[self.met]
        return [
            self.workload,
            self.metric,
            f"{fmt(self.figure)} {self.unit}",
            base,
            ratio,
            self.target,
            met,
            f"`{self.command}`",
        ]


def fmt(x: float) -> str:
    if isinstance(x, int):
        return f"{x:,}"
    if x != x:  # NaN
        return "n/a"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 100:
        return f"{x:.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def markdown_table(rows: Sequence[Row]) -> str:
    head = [
        "workload",
        "metric",
        "figure",
        "baseline (same run)",
        "ratio",
        "target",
        "met?",
        "command",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r.cells()) + " |" for r in rows]
    return "\n".join(lines)


def save_results(rows: Sequence[Row], extra: dict[str, Any], name: str) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = RESULTS / f"{name}-{stamp}.json"
    path.write_text(json.dumps({"rows": [asdict(r) for r in rows], **extra}, indent=2))
    (RESULTS / f"{name}-{stamp}.md").write_text(markdown_table(rows) + "\n")
    return path


# ----------------------------------------------------------------------------- server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def proc_cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def proc_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _dotted(obj: Any) -> str:
    """A class in a logging config, by its dotted name (older app/logs.py gave classes)."""
    return f"{obj.__module__}.{obj.__qualname__}"


@dataclass
class Server:
    """uvicorn serving bench/benchapp.py: one process on 127.0.0.1, stopped by its PID.

    With `tree`, `jet-memory serve` of that source tree instead (`python -m app.cli serve`
    with PYTHONPATH=tree, so its `app` package is imported before the editable install's):
    how bench/ab.py serves two versions of the code from one venv."""

    data_dir: Path
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)
    access_log: bool = True
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None
    tree: Path | None = None
    # Generous: on a machine shared with other work, imports alone can take a minute.
    startup_seconds: float = 180

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self) -> "Server":
        self.port = free_port()
        env = {**os.environ, "JET_DATA_DIR": str(self.data_dir), **self.env}
        if self.tree is not None:
            paths = [str(self.tree), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
            env["PYTHONPATH"] = os.pathsep.join(paths)
        cmd = self._tree_command() if self.tree is not None else self._bench_command()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        # cwd: the data dir's parent, so no stray .env in the repository changes settings.
        self.proc = subprocess.Popen(
            cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=self.data_dir.parent
        )
        log.close()
        deadline = time.monotonic() + self.startup_seconds
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited; see {self.log_path}")
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=1) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"server did not start; see {self.log_path}")

    def _tree_command(self) -> list[str]:
        serve = ["-m", "app.cli", "serve", "--host", "127.0.0.1", "--port", str(self.port)]
        return [PYTHON, *serve]

    def _bench_command(self) -> list[str]:
        # The same uvicorn settings as `jet-memory serve` (app/cli/server.py): uvicorn's default
        # loop (uvloop when installed) and HTTP parser, log level info, no proxy headers,
        # no server header, and the same logging (app/logs.py's text format, whose access
        # lines cost differently from uvicorn's own default formatter).
        log_config = self.log_path.parent / "log-config.json"
        log_config.parent.mkdir(parents=True, exist_ok=True)
        log_config.write_text(json.dumps(logs.config("info", "text"), default=_dotted))
        cmd = [
            PYTHON,
            "-m",
            "uvicorn",
            "--app-dir",
            str(ROOT),
            "--factory",
            "bench.benchapp:factory",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--workers",
            "1",
            "--log-level",
            "info",
            "--no-proxy-headers",
            "--no-server-header",
            "--log-config",
            str(log_config),
        ]
        if not self.access_log:
            cmd.append("--no-access-log")
        return cmd

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        os.kill(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def __enter__(self) -> "Server":
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()


# --------------------------------------------------------------------------- profiles


class Profiler:
    """py-spy attached to the server for the length of one measured phase."""

    def __init__(self, pid: int, out: Path, seconds: float) -> None:
        self.out = out
        spy = Path(PYTHON).parent / "py-spy"
        out.parent.mkdir(parents=True, exist_ok=True)
        # --nonblocking: sampling never pauses the server; --threads keeps the aiosqlite
        # threads apart from the event loop's; --gil: only samples holding the GIL, i.e.
        # where the Python CPU goes (a thread waiting for the GIL, or SQLite's C code that
        # released it, is not counted: compare with the raw SQL baselines for that).
        self.proc = subprocess.Popen(
            [
                str(spy),
                "record",
                "--pid",
                str(pid),
                "--format",
                "raw",
                "--output",
                str(out),
                "--duration",
                str(max(1, int(seconds))),
                "--rate",
                "200",
                "--nonblocking",
                "--threads",
                "--gil",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def wait(self) -> Path:
        self.proc.wait(timeout=120)
        return self.out


# -------------------------------------------------------------------------------- wrk


def ensure_wrk() -> str:
    path = shutil.which("wrk")
    if path is None:
        raise SystemExit(
            "wrk is not installed: `apt-get install -y wrk` (make bench does it as root)"
        )
    return path


def run_wrk(
    url: str,
    *,
    mode: str,
    key: str,
    path: str,
    seconds: float,
    connections: int,
    threads: int = 2,
    run_id: str = "-",
    ack_dir: Path | None = None,
    batch: int = 1,
    requests_file: Path | None = None,
) -> dict[str, Any]:
    cmd = [
        ensure_wrk(),
        "-t",
        str(threads),
        "-c",
        str(connections),
        "-d",
        f"{seconds:g}s",
        "--timeout",
        "10s",
        "-s",
        str(LUA),
        url,
        "--",
        mode,
        run_id,
        str(ack_dir) if ack_dir else "-",
        key,
        path,
        str(batch),
    ]
    if requests_file is not None:  # the replay modes
        cmd.append(str(requests_file))
    if ack_dir is not None:
        ack_dir.mkdir(parents=True, exist_ok=True)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=seconds + 120)
    for line in out.stdout.splitlines():
        if line.startswith("JSON "):
            result: dict[str, Any] = json.loads(line[5:])
            result["rate"] = result["requests"] / (result["duration_us"] / 1e6)
            return result
    raise RuntimeError(f"wrk printed no result:\n{out.stdout}\n{out.stderr}")


def read_acks(ack_dir: Path) -> dict[str, int]:
    """sourceRef → events the response echoed, for every acknowledged request."""
    acked: dict[str, int] = {}
    for f in sorted(ack_dir.glob("acked-*.txt")):
        for line in f.read_text().splitlines():
            ref, n = line.split()
            if ref in acked:
                raise AssertionError(f"{ref} acknowledged twice")
            acked[ref] = int(n)
    return acked


# -------------------------------------------------------------------- python load gen


def run_load(spec: dict[str, Any], work: Path) -> dict[str, Any]:
    """Run bench/http_load.py in its own process with `spec`; its results."""
    work.mkdir(parents=True, exist_ok=True)
    spec_path, out_path = work / "load-spec.json", work / "load-out.json"
    spec_path.write_text(json.dumps(spec))
    subprocess.run([PYTHON, str(BENCH / "http_load.py"), str(spec_path), str(out_path)], check=True)
    result: dict[str, Any] = json.loads(out_path.read_text())
    return result


# ---------------------------------------------------------------------------- tenants


async def open_container(data_dir: Path) -> Container:
    return await build(Settings(_env_file=None, data_dir=data_dir))


async def new_tenant(data_dir: Path, name: str) -> tuple[str, str]:
    """A new tenant (its database created and migrated by the services) and an API key."""
    container = await open_container(data_dir)
    try:
        tenant, issued = await tenant_service.create_tenant(
            container.control, container.tenants, name
        )
        return tenant.id, issued.secret
    finally:
        await container.aclose()


async def key_for(data_dir: Path, tenant_id: str) -> str:
    container = await open_container(data_dir)
    try:
        return (await tenant_service.create_key(container.control, tenant_id)).secret
    finally:
        await container.aclose()


def run_async(coro: Any) -> Any:
    return asyncio.run(coro)


def git_state() -> str:
    """The commit and how far app/ differs from it (the app may be changing under us)."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "app"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=True,
        ).stdout
        diff = subprocess.run(
            ["git", "diff", "HEAD", "--", "app"], capture_output=True, cwd=ROOT, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown (no git)"
    n = len(dirty.splitlines())
    if not n:
        return f"{head}, app/ clean"
    return f"{head} + {n} changed files in app/ (diff sha1 {hashlib.sha1(diff).hexdigest()[:10]})"
