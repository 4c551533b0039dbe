"""Logging setup for the API, worker and CLI: text for people or JSON lines for pipelines.

Every record carries `request_id` and `tenant_id` (None outside a request), set by
TenantBound through the contextvars below. What is logged is the caller's business: no
module logs an API key, a gateway key or a memory body, and a test holds them to it.
"""

import io
import logging
import logging.config
import time
from contextvars import ContextVar
from typing import Any

from pythonjsonlogger.json import JsonFormatter as _JsonFormatter

request_id_var: ContextVar[str | None] = ContextVar("request_id", default=None)
tenant_id_var: ContextVar[str | None] = ContextVar("tenant_id", default=None)

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
JSON_FIELDS = "%(asctime)s %(levelname)s %(name)s %(message)s %(request_id)s %(tenant_id)s"


class ContextFilter(logging.Filter):
    """Adds the current request and tenant ids to every record (unless given explicitly)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "request_id", None) is None:
            record.request_id = request_id_var.get()
        if getattr(record, "tenant_id", None) is None:
            record.tenant_id = tenant_id_var.get()
        record.__dict__.pop("color_message", None)  # uvicorn's ANSI copy of the message
        return True


# Libraries whose DEBUG records carry data: aiosqlite logs every statement with its
# parameters (memory bodies). They stay at INFO or above whatever JET_LOG_LEVEL says.
QUIET_LIBRARIES = {"aiosqlite": "INFO", "alembic": "WARNING"}


def quiet_libraries() -> None:
    """Hold the QUIET_LIBRARIES at their floor (configure does it; tests call it too)."""
    for name, floor in QUIET_LIBRARIES.items():
        logger = logging.getLogger(name)
        logger.setLevel(max(logger.level, logging.getLevelName(floor)))


class AccessLogFilter(logging.Filter):
    """uvicorn's access lines without the query string: `search=` and `query=` carry the
    words of a question, which can be memory content."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if record.name == "uvicorn.access" and isinstance(args, tuple) and len(args) == 5:
            path = str(args[2])
            if "?" in path:
                record.args = (args[0], args[1], path.split("?", 1)[0] + "?…", *args[3:])
        return True


class _TimeOncePerSecond(logging.Formatter):
    """`asctime` exactly as logging.Formatter writes it by default, with the date and time
    (localtime and strftime: most of a short record's formatting) made once per second
    rather than once per record: the API writes an access line per request."""

    _second: tuple[int, str] = (-1, "")  # replaced whole: safe to read from any thread

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        if (
            datefmt is not None
            or self.converter is not time.localtime
            or self.default_msec_format is None
        ):
            return super().formatTime(record, datefmt)
        second = int(record.created)
        cached = self._second
        if cached[0] != second:
            cached = self._second = (
                second,
                time.strftime(self.default_time_format, time.localtime(second)),
            )
        return self.default_msec_format % (cached[1], record.msecs)


class TextFormatter(_TimeOncePerSecond):
    """TEXT_FORMAT's lines (JET_LOG_FORMAT=text).

    A record without exception or stack is formatted as logging.Formatter.format does it
    (the message, the time when the format uses it, then `fmt % record.__dict__`), in one
    call rather than through usesTime/formatMessage/PercentStyle.format/_format, because
    the API writes an access line per request. Anything else
    (another style, defaults, a traceback, a field the record lacks) is the base class's.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        style = self._style
        self._percent: str | None = (
            style._fmt
            if type(style) is logging.PercentStyle and not style._defaults  # type: ignore[attr-defined]
            else None
        )
        self._uses_time = self.usesTime()

    def format(self, record: logging.LogRecord) -> str:
        fmt = self._percent
        if fmt is None or record.exc_info or record.exc_text or record.stack_info:
            return super().format(record)
        record.message = record.getMessage()
        if self._uses_time:
            record.asctime = self.formatTime(record, self.datefmt)
        try:
            return fmt % record.__dict__
        except KeyError:
            return super().format(record)  # its ValueError names the field


class StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """logging.StreamHandler, without its flush after each record when the stream's write
    already reaches the file: a line-buffered text stream (each line flushes itself, as
    sys.stderr on a terminal), or a write-through one over an unbuffered file (each write
    is a system call, as sys.stderr is when redirected to a file or a pipe). That flush
    takes the handler's lock a second time and calls the stream for nothing. Any other
    stream is flushed after each record as before."""

    _checked: object = None  # the stream last looked at, and whether it writes through
    _through = False

    def emit(self, record: logging.LogRecord) -> None:
        stream = self.stream
        if stream is not self._checked:
            self._checked, self._through = stream, _writes_through(stream)
        if not self._through or self.terminator != "\n":
            super().emit(record)
            return
        try:
            stream.write(self.format(record) + "\n")
        except RecursionError:  # as StreamHandler.emit
            raise
        except Exception:
            self.handleError(record)


def _writes_through(stream: object) -> bool:
    """Whether writing a line to `stream` puts it in its file without a flush."""
    if not isinstance(stream, io.TextIOWrapper):
        return False
    return stream.line_buffering or (stream.write_through and type(stream.buffer) is io.FileIO)


class JsonFormatter(_TimeOncePerSecond, _JsonFormatter):
    """JSON lines (JET_LOG_FORMAT=json): python-json-logger's, with the cached time."""


def config(level: str, fmt: str) -> dict[str, Any]:
    """A logging.config dict: one stderr handler on the root; uvicorn's loggers propagate."""
    formatter: dict[str, Any] = (
        {
            "()": "app.logs.JsonFormatter",
            "fmt": JSON_FIELDS,
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        }
        if fmt == "json"
        else {"()": "app.logs.TextFormatter", "fmt": TEXT_FORMAT}
    )
    quiet = {"handlers": [], "propagate": True}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        # Dotted names (not the classes): the dict is also written as JSON for uvicorn's
        # --log-config (bench/harness.py serves the benchmark app that way).
        "filters": {
            "context": {"()": "app.logs.ContextFilter"},
            "access": {"()": "app.logs.AccessLogFilter"},
        },
        "formatters": {"default": formatter},
        "handlers": {
            "stderr": {
                "class": "app.logs.StderrHandler",
                "formatter": "default",
                "filters": ["context", "access"],
                "stream": "ext://sys.stderr",
            }
        },
        "root": {"level": level.upper(), "handlers": ["stderr"]},
        "loggers": {
            # uvicorn's and arq's own handlers are replaced by the root's (same format).
            "uvicorn": {**quiet, "level": level.upper()},
            "uvicorn.error": {**quiet, "level": level.upper()},
            "uvicorn.access": {**quiet, "level": level.upper()},
            "arq": {**quiet, "level": level.upper()},
            **{name: {**quiet, "level": floor} for name, floor in QUIET_LIBRARIES.items()},
        },
    }


def lean_records() -> None:
    """Records without what no format of ours writes: the caller's file, line and function
    (a walk up the stack per record), the thread and the process. The logging HOWTO's
    "Optimization" section names these switches, and the API writes an access line per
    request. The lines are unchanged."""
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False


def configure(level: str, fmt: str) -> dict[str, Any]:
    """Apply config(level, fmt) to this process and return it (uvicorn takes it too)."""
    lean_records()
    cfg = config(level, fmt)
    logging.config.dictConfig(cfg)
    return cfg
