"""The test suite, a package so `tests.support` is importable from the tests and from bench/."""
