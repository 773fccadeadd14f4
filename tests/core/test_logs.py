"""rypsok.core.logs: the structured line, as `event` makes it."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from rypsok.core import logs


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    """rypsok's records through its own formatter into a buffer, the logger restored after."""
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(logs.JsonLineFormatter())
    logger = logging.getLogger("rypsok.test_logs")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield buffer
    finally:
        logger.removeHandler(handler)
        logger.propagate = True
        logger.setLevel(logging.NOTSET)


def _lines(buffer: io.StringIO) -> list[str]:
    return buffer.getvalue().splitlines()


@pytest.mark.req("REQ-OBS-005")
def test_a_line_carries_the_call_id_and_the_fields_in_order(captured: io.StringIO) -> None:
    """One JSON object per line: time, level, logger, event, the call's id, the fields."""
    log = logging.getLogger("rypsok.test_logs")
    token = logs.request_id.set("9519d025c5ec446c")
    try:
        logs.event(log, "engine_request", engine="wikipedia", duration_ms=206.06, hits=9)
    finally:
        logs.request_id.reset(token)
    logs.event(log, "outside_a_call", logging.WARNING, hits=0)
    first, second = _lines(captured)
    assert first.startswith('{"ts":')
    line = json.loads(first)
    assert list(line)[1:] == [
        "level", "logger", "event", "request_id", "engine", "duration_ms", "hits"
    ]  # fmt: skip
    assert line["level"] == "info"
    assert line["logger"] == "rypsok.test_logs"
    assert line["event"] == "engine_request"
    assert (line["request_id"], line["engine"], line["duration_ms"]) == (
        "9519d025c5ec446c",
        "wikipedia",
        206.06,
    )
    assert json.loads(second)["level"] == "warning"
    assert "request_id" not in json.loads(second)


@pytest.mark.req("REQ-OBS-005", "REQ-PRIV-004")
def test_an_exception_is_logged_as_its_class_only(captured: io.StringIO) -> None:
    """The record gets the exception as `Logger.log` would; the line names only its class."""
    log = logging.getLogger("rypsok.test_logs")
    try:
        raise ValueError("text from https://example.org/secret-path")
    except ValueError as exc:
        logs.event(log, "call_failed", logging.ERROR, exc_info=exc)
    (text,) = _lines(captured)
    line = json.loads(text)
    assert line["exception"] == "ValueError"
    assert "secret-path" not in text


@pytest.mark.req("REQ-OBS-005")
def test_a_suppressed_level_makes_no_line(captured: io.StringIO) -> None:
    log = logging.getLogger("rypsok.test_logs")
    logs.event(log, "detail", logging.DEBUG, hits=1)
    assert _lines(captured) == []


@pytest.mark.req("REQ-OBS-005")
def test_a_line_is_the_text_json_dumps_writes(captured: io.StringIO) -> None:
    """The encoder made once writes what `json.dumps` with the same settings writes.

    Non-ASCII escaped, floats as Python writes them (infinity too), None, nested
    containers in order, and a value JSON has no type for as its `str`.
    """
    log = logging.getLogger("rypsok.test_logs")

    class Named:
        def __str__(self) -> str:
            return "named-value"

    fields = {
        "engine": "wikipédia\u2028",
        "duration_ms": 0.1 + 0.2,
        "limit": float("inf"),
        "none": None,
        "flags": [True, False, 3, {"b": 1, "a": [2.5, "é"]}],
        "other": Named(),
    }
    logs.event(log, "engine_request", **fields)
    (text,) = _lines(captured)
    line = json.loads(text)
    expected = {
        "ts": line["ts"],
        "level": "info",
        "logger": "rypsok.test_logs",
        "event": "engine_request",
        **fields,
    }
    assert text == json.dumps(expected, ensure_ascii=True, separators=(",", ":"), default=str)
    assert "named-value" in text and "\\u2028" in text


@pytest.mark.req("REQ-OBS-005")
def test_configure_makes_records_without_thread_or_process_lookups() -> None:
    """No line names a thread or process: `configure` switches those lookups off."""
    root = logging.getLogger()
    saved = (root.handlers[:], root.level, logging.getLogger(logs.ROOT).level)
    switches = (logging.logThreads, logging.logProcesses, logging.logMultiprocessing)
    try:
        logs.configure()
        record = logging.getLogger("rypsok.test_logs").makeRecord(
            "rypsok.test_logs", logging.INFO, "f", 0, "e", (), None
        )
        assert (record.thread, record.threadName, record.process) == (None, None, None)
        assert record.processName is None
    finally:
        root.handlers[:], level, own = saved
        root.setLevel(level)
        logging.getLogger(logs.ROOT).setLevel(own)
        logging.logThreads, logging.logProcesses, logging.logMultiprocessing = switches
