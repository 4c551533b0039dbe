"""Summarise a py-spy profile recorded with `--format raw` (collapsed stacks, one line per
stack: `frame;frame;... count`): where the server's CPU samples go.

Usage: .venv/bin/python -m bench.profile_summary PROFILE.txt [--top 25]

Prints samples per thread, the top functions by self time and by inclusive time, and the
share of a few layers (uvicorn/HTTP, Starlette, Strawberry, graphql-core, pydantic,
SQLAlchemy, aiosqlite/sqlite3, the app's own code) in the event loop's thread.
"""

import argparse
import re
from collections import Counter
from pathlib import Path

# Layer of a frame, by the file it is in (first match wins, checked leaf to root).
LAYERS = [
    ("sqlite3 (C) / aiosqlite thread", re.compile(r"aiosqlite|sqlite3")),
    ("SQLAlchemy", re.compile(r"sqlalchemy")),
    ("graphql-core", re.compile(r"/graphql/")),
    ("Strawberry", re.compile(r"strawberry|cross_web")),
    ("pydantic", re.compile(r"pydantic")),
    ("Starlette", re.compile(r"starlette")),
    ("uvicorn / httptools / uvloop", re.compile(r"uvicorn|httptools|uvloop")),
    ("asyncio", re.compile(r"asyncio")),
    ("logging", re.compile(r"/logging/")),
    ("json", re.compile(r"/json/")),
    ("app/", re.compile(r"/work/main/app/|\(app/")),
]


# Below a middleware's frame, the frames that are the rest of the request, not its own work.
OWN_ONLY = {
    "metrics middleware, its own work (app/edge/observe.py)": re.compile(
        r"starlette/routing|\(app/edge/(app|auth|limits|rest|graphql_view)\.py"
        r"|RequestResponseCycle\.send \("
    )
}
# Named parts of a request, inclusive (a sample counts once per part whose frame is on its
# stack), as a share of the event-loop thread's samples.
PARTS = [
    ("uvicorn: parse request, start ASGI task", r"HttpToolsProtocol\.(data_received|on_)"),
    ("uvicorn: send response (socket write)", r"RequestResponseCycle\.send \("),
    ("logging (access log, app logs)", r"\(logging/"),
    ("metrics middleware, its own work (app/edge/observe.py)", r"\(app/edge/observe\.py"),
    ("auth: key -> tenant", r"tenant_for \("),
    ("tenant lease", r"TenantDatabases\.(lease|_get)|lease \(app/storage"),
    ("Strawberry: read + parse the body", r"parse_http_body|parse_json"),
    ("Strawberry: Schema.execute", r"Schema\.execute \("),
    ("graphql-core: parse/validate (cache misses)", r"graphql/(language|validation)/"),
    ("graphql-core: execute fields", r"Executor\.execute_fields \("),
    ("Strawberry: input/argument conversion", r"convert_argument|convert_arguments"),
    ("JSON encode of the response", r"encode_json|json/encoder\.py|JSONResponse\.render"),
    ("pydantic (REST validation, dumps)", r"\(pydantic"),
    ("app/services (domain code)", r"\(app/services/"),
    ("group commit (app/storage/group_commit.py)", r"\(app/storage/group_commit\.py"),
    ("SQLAlchemy (main thread)", r"\(sqlalchemy/"),
    ("aiosqlite calls (main thread)", r"\(aiosqlite/"),
    ("uuid4 (request ids)", r"uuid4 \("),
]


def parse(path: Path) -> list[tuple[list[str], int]]:
    stacks: list[tuple[list[str], int]] = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        stack, _, count = line.rpartition(" ")
        stacks.append((stack.split(";"), int(count)))
    return stacks


def short(frame: str) -> str:
    # "func (path/to/file.py:123)" -> "func (file.py)"
    m = re.match(r"(.*) \((.*?):(\d+)\)$", frame)
    if not m:
        return frame
    name, file = m.group(1), m.group(2)
    parts = file.split("/")
    if "site-packages" in parts:
        parts = parts[parts.index("site-packages") + 1 :]
    elif "main" in parts:
        parts = parts[parts.index("main") + 1 :]
    return f"{name} ({'/'.join(parts[-3:])})"


def layer(frame: str) -> str | None:
    for name, pattern in LAYERS:
        if pattern.search(frame):
            return name
    return None


def summarize(path: Path, top: int = 25) -> str:
    stacks = parse(path)
    total = sum(c for _, c in stacks)
    if not total:
        return "no samples"
    threads: Counter[str] = Counter()
    for frames, c in stacks:
        threads[frames[0] if frames[0].startswith(("thread", "process")) else "?"] += c
    # The event loop's thread is the one with uvicorn's server frames.
    loop_thread = next(
        (f[0] for f, _ in stacks if any("uvicorn" in x for x in f)), next(iter(threads))
    )
    self_t: Counter[str] = Counter()
    incl: Counter[str] = Counter()
    layers: Counter[str] = Counter()
    parts: Counter[str] = Counter()
    compiled = [(name, re.compile(rx)) for name, rx in PARTS]
    loop_total = 0
    for frames, c in stacks:
        body = [f for f in frames if not f.startswith(("thread", "process"))]
        if not body:
            continue
        self_t[short(body[-1])] += c
        for f in set(map(short, body)):
            incl[f] += c
        if frames[0] == loop_thread:
            loop_total += c
            for name, rx in compiled:
                hits = [i for i, f in enumerate(body) if rx.search(f)]
                if not hits:
                    continue
                rest = OWN_ONLY.get(name)
                if rest is not None and any(rest.search(f) for f in body[hits[-1] + 1 :]):
                    continue
                parts[name] += c
            # Attribute the sample to the innermost frame that belongs to a known layer.
            for f in reversed(body):
                found = layer(f)
                if found:
                    layers[found] += c
                    break
            else:
                layers["other"] += c
    out = [f"{total} samples (active CPU, all threads)"]
    for t, c in threads.most_common():
        out.append(f"  {100 * c / total:5.1f}%  {t}")
    out.append(f"\nevent-loop thread by layer (innermost known frame), {loop_total} samples:")
    for name, c in layers.most_common():
        out.append(f"  {100 * c / max(1, loop_total):5.1f}%  {name}")
    out.append("\nevent-loop thread, named parts of a request (inclusive, may overlap):")
    for name, _ in PARTS:
        if parts[name]:
            out.append(f"  {100 * parts[name] / max(1, loop_total):5.1f}%  {name}")
    out.append(f"\ntop {top} by self time:")
    for f, c in self_t.most_common(top):
        out.append(f"  {100 * c / total:5.1f}%  {f}")
    out.append(f"\ntop {top} by inclusive time:")
    for f, c in incl.most_common(top + 10)[: top + 10]:
        out.append(f"  {100 * c / total:5.1f}%  {f}")
    return "\n".join(out)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("profile", type=Path)
    p.add_argument("--top", type=int, default=25)
    a = p.parse_args()
    print(summarize(a.profile, a.top))


if __name__ == "__main__":
    main()
