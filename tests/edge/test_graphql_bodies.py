"""Request bodies /graphql cannot decode are a 400, never a 500: orjson first, then
json.loads (app/edge/graphql_http/view.py's decode_json) answer as json.loads alone would, and
what json.loads cannot take (nesting past the recursion limit, invalid UTF-8) is refused
cleanly, by a real server process, with the fast path on and off."""

import json
import math
import os
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from cross_web import HTTPException

from app.deps import Container
from app.edge.graphql_http.view import GraphQLView
from app.graphql.schema import schema
from tests.support.servers import free_port, serving

JET = Path(sys.executable).parent / "jet-memory"


def _same(a: Any, b: Any) -> bool:
    """Equal, of the same types all the way down, floats to the bit, keys in order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        )
    return bool(a == b)


DEEP = b"[" * 2000 + b"]" * 2000
TRICKY: list[bytes | str] = [
    b'{"query": "{ __typename }"}',
    b'{"a": 1, "a": 2, "b": {"c": [1, 2.5, -0.0, 1e2, 1E-7, true, false, null]}}',
    b'{"big": 123456789012345678901234567890, "neg": -9223372036854775809}',
    b'{"n": 9223372036854775807, "m": -9223372036854775808, "u": 18446744073709551615}',
    b'{"nan": NaN, "inf": Infinity, "ninf": -Infinity}',
    b'{"f": 1e400, "g": -1e400, "h": 4.9e-324, "i": 2.2250738585072014e-308}',
    b'{"f": 0.1, "g": 1.7976931348623157e308, "h": 123456789.123456789e-5}',
    b'{"s": "\\ud800", "t": "\\udc00\\ud800", "u": "\\u00e9\\u0000"}',
    b'{"s": "\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80"}',
    b"\xef\xbb\xbf{}",
    '{"utf16": 1}'.encode("utf-16"),
    '{"utf32": 1}'.encode("utf-32"),
    b'{"bad": "\xff"}',
    b'{"ctl": "a\tb"}',
    DEEP,
    b"[" * 600 + b"]" * 600,
    b"  \n\t{ }\r\n ",
    b"{} x",
    b"",
    b"1",
    b'"s"',
    b"[1,]",
    b"{'a': 1}",
    b"01",
    b'{"a" 1}',
    b'{"id": "12345678901234567890", "n": 1}',
    b"[1234567890123456789, 12345678901234567890, -1234567890123456789, 99999999999999999999]",
    '{"s": "str, not bytes", "n": 12345678901234567890}',
]


def _decode(decode: Any, body: bytes | str) -> Any:
    try:
        return ("ok", decode(body))
    except (RecursionError, UnicodeDecodeError, HTTPException):
        return ("refused",)  # json.loads' 500s, our 400s
    except ValueError as exc:  # JSONDecodeError: Strawberry's 400
        return ("error", type(exc), str(exc))


def _random_json(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.randrange(-(2**70), 2**70) if rng.random() < 0.2 else rng.randrange(-999, 999)
    if kind == 2:
        return rng.uniform(-1e6, 1e6) * 10 ** rng.randrange(-300, 300)
    if kind == 3:
        return rng.choice([0.0, -0.0, 1.0, 5e-324, 1.7976931348623157e308, 0.1, 1 / 3])
    if kind in (4, 5):
        return "".join(
            chr(rng.choice([rng.randrange(32, 127), rng.randrange(0x80, 0x2FFFF)]))
            for _ in range(rng.randrange(8))
        )
    if kind == 6:
        return [_random_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {
        str(_random_json(rng, 4)): _random_json(rng, depth + 1) for _ in range(rng.randrange(4))
    }


async def test_decode_json_is_json_loads(container: Container) -> None:
    view = GraphQLView(schema, container.settings)
    rng = random.Random(7)
    bodies = list(TRICKY)
    for _ in range(3000):
        text = json.dumps(_random_json(rng), ensure_ascii=rng.random() < 0.5)
        bodies.append(text.encode("utf-8", "surrogatepass"))
    for body in bodies:
        ours, theirs = _decode(view.decode_json, body), _decode(json.loads, body)
        assert ours[0] == theirs[0] and _same(ours[1:], theirs[1:]), body[:80]
    assert _decode(view.decode_json, DEEP) == ("refused",)


def _nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = {"a": value}
    return value


def _deep_text(levels: int) -> bytes:
    return b'{"a":' * levels + b"1" + b"}" * levels


UNDECODABLE = {
    "body": DEEP,
    "variables": b'{"query": "{ __typename }", "variables": ' + _deep_text(3000) + b"}",
    "extensions": b'{"query": "{ __typename }", "extensions": ' + _deep_text(3000) + b"}",
    "utf-8": b'{"query": "{ __typename \xff }"}',
    "utf-8 variables": b'{"query": "{ __typename }", "variables": {"a": "\xc3("}}',
}


@pytest.mark.slow
@pytest.mark.parametrize("fast_path", ["1", "0"])
def test_a_real_server_answers_400_without_a_traceback(tmp_path: Path, fast_path: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JET_")} | {
        "JET_DATA_DIR": str(tmp_path / "data"),
        "JET_LOG_LEVEL": "info",
        "JET_GRAPHQL_FAST_PATH": fast_path,
        "PYTHONUNBUFFERED": "1",
    }
    migrate = [str(JET), "migrate"]
    subprocess.run(migrate, env=env, cwd=tmp_path, capture_output=True, timeout=60, check=True)
    created = subprocess.run(
        [str(JET), "tenants", "create", "acme"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    key = created.stdout.strip().splitlines()[-1]
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [str(JET), "serve", "--host", "127.0.0.1", "--port", str(port)]
    log = tmp_path / "serve.log"
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    with (
        serving(argv, url=url, env=env, cwd=tmp_path, log=log, startup_seconds=90),
        httpx.Client(base_url=url, timeout=30) as client,
    ):
        for name, body in UNDECODABLE.items():
            r = client.post("/graphql", content=body, headers=headers)
            assert r.status_code == 400, (name, r.status_code, r.text[:200])
            message = r.json()["errors"][0]["message"]
            assert message.startswith("Unable to parse request body as JSON"), (name, r.text)
        # JSON that is no object: a clean 400 naming what it is, not a 500.
        kinds = [(b'"q"', "string"), (b" 1", "number"), (b"null", "null"), (b"true", "boolean")]
        for body, kind in kinds:
            r = client.post("/graphql", content=body, headers=headers)
            assert r.status_code == 400, (body, r.status_code, r.text[:200])
            message = r.json()["errors"][0]["message"]
            assert message.endswith(f"or an array of them, not {kind}"), (body, r.text)
        # Nesting that decodes (under the limit) is graphql-core's to refuse or accept.
        deep_ok = {"query": "{ __typename }", "variables": _nested(200)}
        r = client.post("/graphql", json=deep_ok, headers=headers)
        assert r.status_code == 200 and r.json() == {"data": {"__typename": "Query"}}
        assert client.post("/graphql", json={"query": "{ __typename }"}, headers=headers).json()
    served = log.read_text()
    assert "Traceback" not in served and not re.search(r"\bERROR\b", served), served[-3000:]
