"""HttpMetrics records a request's count and time through the children's values
(app/edge/observe.py `_Series`): the samples exposed are exactly what prometheus_client's
`inc()` and `observe()` would have made; operation names are labelled the same without
the lock once seen."""

import math

import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from app import metrics
from app.edge.observe import HttpMetrics, _Series

TIMES = [
    0.0,
    1e-9,
    0.004,
    0.005,
    0.0050001,
    0.01,
    0.3,
    0.75,
    1.0,
    7.5,
    9.99,
    10.0,
    10.5,
    1e9,
    math.inf,
    -1.0,
    math.nan,
]


def pair(registry: CollectorRegistry, prefix: str) -> tuple[Counter, Histogram]:
    counter = Counter(f"{prefix}_requests", "c", ["route", "method", "status"], registry=registry)
    latency = Histogram(f"{prefix}_seconds", "h", ["route", "method"], registry=registry)
    return counter, latency


def exposed(registry: CollectorRegistry, prefix: str) -> list[str]:
    lines = generate_latest(registry).decode().splitlines()
    return [line.replace(prefix, "x") for line in lines if "_created" not in line]


@pytest.mark.parametrize("elapsed", TIMES)
def test_a_series_records_what_inc_and_observe_would(elapsed: float) -> None:
    ours, theirs = CollectorRegistry(), CollectorRegistry()
    c1, h1 = pair(ours, "ours")
    c2, h2 = pair(theirs, "theirs")
    series = _Series(c1.labels("/r", "GET", "200"), h1.labels("/r", "GET"))
    for _ in range(2):
        series.record(elapsed)
        c2.labels("/r", "GET", "200").inc()
        h2.labels("/r", "GET").observe(elapsed)
    assert exposed(ours, "ours") == exposed(theirs, "theirs")


def test_http_metrics_record_every_label_set_it_is_given() -> None:
    before = {
        key: metrics.HTTP_REQUESTS.labels(*key)._value.get()
        for key in [("/memory/events", "POST", "201"), ("unmatched", "other", "404")]
    }
    count = metrics.GRAPHQL_LATENCY.labels("Some", "query")._sum.get()
    m = HttpMetrics(lambda *_: None)  # type: ignore[arg-type,return-value]

    class Route:
        path = "/memory/events"

    scope = {"method": "POST", "path": "/memory/events", "route": Route()}
    m.record(scope, 201, 0.5)
    m.record(scope, 201, 0.5)
    m.record({"method": "BREW", "path": "/nowhere"}, 404, 0.1)
    state = {"graphql_operation": ("Some", "query")}
    graphql = {"method": "POST", "path": "/graphql", "state": state}
    m.record(graphql, 200, 0.25)
    m.record({**graphql, "method": "GET", "query_string": b""}, 200, 0.25)  # no operation
    assert metrics.HTTP_REQUESTS.labels("/memory/events", "POST", "201")._value.get() == (
        before[("/memory/events", "POST", "201")] + 2
    )
    assert metrics.HTTP_REQUESTS.labels("unmatched", "other", "404")._value.get() == (
        before[("unmatched", "other", "404")] + 1
    )
    assert metrics.GRAPHQL_LATENCY.labels("Some", "query")._sum.get() == count + 0.25


def test_an_operation_name_seen_before_keeps_its_label(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics, "_names", set())
    monkeypatch.setattr(metrics, "MAX_OPERATION_NAMES", 2)
    assert [metrics.operation_label(n) for n in ["A", "B", "C", "A", "B", "C", "x" * 80]] == [
        "A",
        "B",
        "other",
        "A",
        "B",
        "other",
        "other",
    ]
    monkeypatch.setattr(metrics, "_names", set())
    assert metrics.operation_label("y" * 80) == "y" * 64 == metrics.operation_label("y" * 70)
