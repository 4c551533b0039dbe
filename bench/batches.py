"""Workload 3: appendMemoryEvents / POST /memory/events with 500 events a request, 8 clients
(wrk), against raw aiosqlite executemany; verified as workload 2 (bench/appends.py).
`python -m bench.batches [options of python -m bench]`."""

from bench.appends import appends
from bench.runner import Run


def run(b: Run) -> None:
    appends(b, "batch", 500, 8)


if __name__ == "__main__":
    from bench.suite import main

    main(default_only="batch")
