"""Jet Memory: the memory layer for AI agents."""

import os

# One BLAS thread per process: searches by meaning are many small products, one request per
# core already, and OpenBLAS's extra threads spin between them (docs/search.md). Set before
# anything loads numpy; an operator's own value wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.1.0"
