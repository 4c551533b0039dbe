"""ASGI entry point: `uvicorn --factory app.main:create_app` (what `jet-memory serve` runs)."""

from app import logs
from app.edge.app import create_app

# serve's worker processes (uvicorn --workers) import this module, not app.cli: the same
# lean log records there.
logs.lean_records()

__all__ = ["create_app"]
