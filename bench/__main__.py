"""`python -m bench`: every HTTP workload in turn (bench/suite.py has the options)."""

from bench.suite import main

main()
