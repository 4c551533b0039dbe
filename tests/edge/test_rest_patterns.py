r"""The OpenAPI document's text patterns say what the services accept. JSON Schema reads a
pattern as ECMA-262, so Node.js evaluates them here: a client validating with the document
must accept exactly the titles, summaries and tags the services accept. Python's `re`
would not do: its `\s` is what `str.strip()` removes, ECMA-262's is not."""

import json
import shutil
import subprocess
from typing import Any

import pytest

from app.edge.rest.openapi import openapi_document
from app.errors import ExpectedError
from app.services import validation
from app.services.records import EntryPatch

# Every character either language counts as a space or a control lies below U+3001, except
# U+FEFF (a space to ECMAScript's `\s`, not to Python's); U+FFFE and U+FFFF, the last two
# non-characters of the plane, are text like any other to both.
CHARS = [chr(c) for c in [*range(0x3001), 0xFEFF, 0xFFFE, 0xFFFF]]
SAMPLES = [s for c in CHARS for s in (c, "a" + c, c + "a", c + "a" + c)]

NODE = """
const {patterns, samples} = JSON.parse(require("fs").readFileSync(0, "utf8"));
const out = {};
for (const [field, p] of Object.entries(patterns)) {
  const re = new RegExp(p, "u");
  out[field] = samples.map((s) => re.test(s));
}
process.stdout.write(JSON.stringify(out));
"""


def _accepted(field: str, value: str) -> bool:
    patch = {
        "title": EntryPatch(title=value),
        "summary": EntryPatch(summary=value),
        "tags": EntryPatch(tags=[value]),
    }[field]
    try:
        validation.check_patch(patch)
    except ExpectedError:
        return False
    return True


def _patterns() -> dict[str, str]:
    schemas: dict[str, Any] = openapi_document()["components"]["schemas"]
    props = schemas["CreateMemoryEntryInput"]["properties"]
    return {
        "title": props["title"]["pattern"],
        "summary": props["summary"]["pattern"],
        "tags": props["tags"]["items"]["pattern"],
    }


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js evaluates ECMA-262 patterns")
def test_the_documents_patterns_read_as_ecma_262_accept_what_the_services_accept() -> None:
    node = shutil.which("node")
    assert node is not None
    done = subprocess.run(
        [node, "-e", NODE],
        input=json.dumps({"patterns": _patterns(), "samples": SAMPLES}),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    matched: dict[str, list[bool]] = json.loads(done.stdout)
    disagree = {
        field: [s for s, m in zip(SAMPLES, matched[field], strict=True) if m != _accepted(field, s)]
        for field in matched
    }
    assert disagree == {"title": [], "summary": [], "tags": []}
