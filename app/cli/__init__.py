"""The operator's CLI: `jet-memory serve | up | worker | migrate | dev | tenants | keys | …`.

Every command builds the same Container as the API and calls the same services
(app/cli/running.py). Secrets (API keys) are printed once, when created, and never again.
One module per group of commands.
"""

import argparse
import sys
from collections.abc import Callable
from typing import Any

from app import logs
from app.cli import compact, erasure, portability, search, server, tenants, webhooks
from app.cli.running import run
from app.config import Settings
from app.storage.citus import CitusNotReady


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="jet-memory", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    server.add_parsers(sub)
    erasure.add_tenant_commands(tenants.add_parsers(sub), run)
    compact.add_parsers(sub)
    portability.add_parsers(sub, run)
    erasure.add_commands(sub, run)
    webhooks.add_commands(sub, run)
    search.add_commands(sub, run)
    server.add_late_parsers(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    settings = Settings()
    logs.configure(settings.log_level, settings.log_format)
    fn: Callable[[Settings, Any], int] = args.fn
    try:
        return fn(settings, args)
    except CitusNotReady as exc:
        # A cluster missing a setting the backend needs: one clear line, no traceback.
        print(f"jet-memory: {exc}", file=sys.stderr)
        return 2
