"""The app keeps numpy's OpenBLAS to one thread per process unless the operator says
otherwise (app/__init__.py): searches by meaning are many small products, and OpenBLAS's
extra threads spin between them."""

import os
import subprocess
import sys

SHOW = "import app, os; print(os.environ['OPENBLAS_NUM_THREADS'])"


def _threads(env: dict[str, str]) -> str:
    out = subprocess.run(
        [sys.executable, "-c", SHOW], env=env, capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def test_one_blas_thread_by_default_and_the_operators_value_wins() -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    assert _threads(env) == "1"
    assert _threads({**env, "OPENBLAS_NUM_THREADS": "4"}) == "4"
