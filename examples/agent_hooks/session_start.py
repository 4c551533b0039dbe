#!/usr/bin/env python3
"""SessionStart hook: print what Jet Memory knows about this project (stdout joins the
agent's context). JET_CONTEXT_TOKENS sets the budget (default 2000), JET_QUERY a focus."""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from jet_hooks import call_tool, read_event, run, scope_for


def main() -> None:
    event = read_event()
    cwd = Path(event.get("cwd") or os.getcwd())
    scope, scope_ref = scope_for(cwd)
    arguments = {"scope": scope, "maxTokens": int(os.environ.get("JET_CONTEXT_TOKENS", "2000"))}
    if scope_ref is not None:
        arguments["scopeRef"] = scope_ref
    if os.environ.get("JET_QUERY"):
        arguments["query"] = os.environ["JET_QUERY"]
    recalled = call_tool("recall", arguments)
    where = scope if scope_ref is None else f"{scope}/{scope_ref}"
    if recalled["markdown"]:
        print(f"# Team memory for {where} (Jet Memory)\n\n{recalled['markdown']}", end="")
    else:
        print(f"# Team memory for {where} (Jet Memory)\n\nNothing remembered yet.")


if __name__ == "__main__":
    run(main)
