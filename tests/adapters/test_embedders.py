"""The local model is optional: where its wheel is missing, loading it is one warning that
names the command installing it, and no error."""

import logging
import sys

import pytest

from app.adapters import embedders


def test_a_missing_local_model_is_one_warning_naming_its_install(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "wordllama", None)  # `import wordllama` raises ImportError
    with caplog.at_level(logging.WARNING, logger=embedders.__name__):
        assert embedders.load_local() is None
    [record] = caplog.records
    message = record.getMessage()
    assert record.levelno == logging.WARNING and "search by keywords only" in message
    assert "pip install --require-hashes --no-deps -r requirements/embedder.txt" in message
