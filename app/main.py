"""ASGI entry point: `uvicorn --factory app.main:create_app` (what `jet-memory serve` runs)."""

from app.edge.app import create_app

__all__ = ["create_app"]
