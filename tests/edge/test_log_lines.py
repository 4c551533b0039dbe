"""app.logs' TextFormatter one-call path and StderrHandler write what logging's own
Formatter and StreamHandler write (the lines must not change), flushed as soon as each
record is handled."""

import io
import logging
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from app import logs
from tests.conftest import record_at

TIMES = [1_700_000_000.0, 1_700_000_000.25, 1_700_000_000.999]


def test_text_lines_of_every_kind_are_loggings_own() -> None:
    """TextFormatter's one-call path and the base class's agree: with and without time in
    the format, a date format, defaults, a traceback, a stack, a missing field."""
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        exc_info = sys.exc_info()
    cases: list[tuple[dict[str, object], dict[str, object]]] = [
        ({"fmt": logs.TEXT_FORMAT}, {}),
        ({"fmt": "%(levelname)s %(message)s"}, {}),
        ({"fmt": "%(asctime)s %(message)s", "datefmt": "%H:%M"}, {}),
        ({"fmt": "%(asctime)s %(x)s %(message)s", "defaults": {"x": "d"}}, {}),
        ({"fmt": logs.TEXT_FORMAT}, {"exc_info": exc_info}),
        ({"fmt": logs.TEXT_FORMAT}, {"sinfo": "Stack (most recent call last):\n  here"}),
        ({"fmt": "{asctime} {message}", "style": "{"}, {}),
        ({"fmt": "%(message)s %(request_id)s"}, {}),
    ]
    for kwargs, extra in cases:
        ours = logs.TextFormatter(**kwargs)  # type: ignore[arg-type]
        theirs = logging.Formatter(**kwargs)  # type: ignore[arg-type]
        for created in TIMES[:3]:
            a, b = record_at(created), record_at(created)
            for r in (a, b):
                r.exc_info = extra.get("exc_info")  # type: ignore[assignment]
                r.stack_info = extra.get("sinfo")  # type: ignore[assignment]
            if "request_id" in str(kwargs["fmt"]):
                with pytest.raises(ValueError, match="request_id"):
                    ours.format(a)
                continue
            assert ours.format(a) == theirs.format(b)
            assert a.__dict__ == b.__dict__  # message, asctime, exc_text set alike


class Counting(io.TextIOWrapper):
    flushes = 0

    def flush(self) -> None:
        Counting.flushes += 1
        super().flush()


@pytest.mark.parametrize(
    ("line_buffering", "write_through", "raw", "skipped"),
    [
        (True, False, False, True),  # sys.stderr on a terminal
        (False, True, True, True),  # sys.stderr redirected to a file or a pipe
        (False, True, False, False),  # write-through to a buffer: flushed as before
        (False, False, True, False),
        (False, False, False, False),
    ],
)
def test_the_stderr_handler_puts_each_line_in_the_file(
    tmp_path: Path, line_buffering: bool, write_through: bool, raw: bool, skipped: bool
) -> None:
    path = tmp_path / "log"
    file = path.open("wb", buffering=0 if raw else 8192)
    stream = Counting(
        file, encoding="utf-8", line_buffering=line_buffering, write_through=write_through
    )
    handler = logs.StderrHandler(stream)
    handler.setFormatter(logs.TextFormatter(fmt=logs.TEXT_FORMAT))
    Counting.flushes = 0
    try:
        for i, created in enumerate(TIMES):
            handler.handle(record_at(created))
            # In the file as soon as it is handled, either way.
            assert path.read_text().count(" 201\n") == i + 1
    finally:
        stream.close()
    assert Counting.flushes - 1 == (0 if skipped else len(TIMES))  # - close()'s own
    assert not logs._writes_through(io.StringIO())


def test_the_configured_handler_is_the_stderr_handler() -> None:
    cfg = logs.config("info", "text")
    assert cfg["handlers"]["stderr"]["class"] == "app.logs.StderrHandler"
    # What makes it skip the flush in the services: their stderr (a file or a pipe here).
    probe = "import sys; from app import logs; print(logs._writes_through(sys.stderr))"
    with tempfile.TemporaryFile() as err:
        out = subprocess.run(
            [sys.executable, "-c", probe],
            stderr=err,
            stdout=subprocess.PIPE,
            check=True,
            cwd=Path(logs.__file__).parent.parent,
        )
    assert out.stdout.strip() == b"True"
