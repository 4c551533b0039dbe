"""Helpers shared by the tests and the benchmarks: real servers on 127.0.0.1 (`servers`),
a throwaway PostgreSQL (`postgres_server`), a scripted AI gateway (`gateway_stub`) and SQL
on a tenant's database from outside the service (`raw_sql`)."""
