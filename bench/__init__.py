"""Benchmarks of Jet Memory: one module per workload, each run with `python -m bench.<name>`
from the repository root; `python -m bench` runs the HTTP workloads (bench/README.md)."""
