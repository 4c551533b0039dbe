"""The layers of ARCHITECTURE.md as import-linter contracts ([tool.importlinter] in
pyproject.toml): edge > GraphQL > services > storage and adapters, a kernel that imports
nothing above it, services without a web framework or SQL dialect, and no import cycles."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_import_contracts_hold() -> None:
    lint = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run(
        [str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout
