"""The processes the CLI runs: the API under uvicorn, one or several (serve), the whole
product on one machine (up), and the embedded Redis for `up` and the tests
(embedded_redis)."""
