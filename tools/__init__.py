"""Maintainers' tools, outside the product package: `python -m tools.configdoc` writes
docs/configuration.md."""
