"""`python -m app.cli`: the same as `jet-memory` (servers started by tests and benches)."""

from app.cli import main

raise SystemExit(main())
