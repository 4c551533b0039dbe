"""app.logs' formatters write what logging's and python-json-logger's own write (the time
is cached per second; the lines must not change), and the config is plain data."""

import json
import logging
import logging.config

import pytest
from pythonjsonlogger.json import JsonFormatter

from app import logs
from tests.conftest import ACCESS, record_at

# Within one second, across a second's end, back in time (a clock step), far apart.
TIMES = [
    1_700_000_000.0,
    1_700_000_000.25,
    1_700_000_000.999,
    1_700_000_001.0005,
    1_700_000_000.5,
    1_000_000_000.125,
    1_700_003_600.75,
]


def test_text_lines_are_loggings_own() -> None:
    ours, theirs = logs.TextFormatter(fmt=logs.TEXT_FORMAT), logging.Formatter(logs.TEXT_FORMAT)
    for created in TIMES:
        assert ours.format(record_at(created)) == theirs.format(record_at(created))


def test_json_lines_are_python_json_loggers_own() -> None:
    kw = logs.config("info", "json")["formatters"]["default"].copy()
    assert kw.pop("()") == "app.logs.JsonFormatter"
    ours, theirs = logs.JsonFormatter(**kw), JsonFormatter(**kw)
    for created in TIMES:
        line = ours.format(record_at(created))
        assert line == theirs.format(record_at(created))
        assert json.loads(line)["time"].startswith("20") or created < 1.1e9


def test_a_date_format_or_another_clock_is_honoured() -> None:
    ours = logs.TextFormatter(fmt="%(asctime)s", datefmt="%H:%M")
    assert ours.format(record_at(TIMES[0])) == logging.Formatter(
        "%(asctime)s", datefmt="%H:%M"
    ).format(record_at(TIMES[0]))


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_the_config_is_json_and_applies(fmt: str) -> None:
    cfg = json.loads(json.dumps(logs.config("info", fmt)))  # uvicorn's --log-config file
    # Its handler on a logger of this test's own, not on the root of the test session.
    del cfg["root"]
    cfg["loggers"] = {"test-logs-config": {"handlers": ["stderr"], "propagate": False}}
    logging.config.dictConfig(cfg)
    (handler,) = logging.getLogger("test-logs-config").handlers
    assert isinstance(handler.formatter, logs.TextFormatter | logs.JsonFormatter)
    assert {type(f) for f in handler.filters} == {logs.ContextFilter, logs.AccessLogFilter}


def test_lean_records_leave_the_lines_as_they_were(caplog: pytest.LogCaptureFixture) -> None:
    saved = (logging._srcfile, logging.logThreads, logging.logProcesses, logging.logMultiprocessing)
    formatters = [
        logs.TextFormatter(fmt=logs.TEXT_FORMAT),
        logs.JsonFormatter(fmt=logs.JSON_FIELDS),
    ]
    log = logging.getLogger("test-lean-records")

    def lines() -> list[str]:
        caplog.clear()
        with caplog.at_level(logging.INFO, logger=log.name):
            log.info(ACCESS, "127.0.0.1:5555", "POST", "/memory/events", "1.1", 201)
        [record] = caplog.records
        record.created, record.msecs = TIMES[1], 250.0
        return [f.format(record) for f in formatters]

    try:
        before = lines()
        logs.lean_records()
        assert lines() == before
        assert caplog.records[0].funcName != "lines"  # no caller lookup any more
    finally:
        (logging._srcfile, logging.logThreads, logging.logProcesses, logging.logMultiprocessing) = (
            saved
        )
