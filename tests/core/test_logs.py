"""rypsok.core.logs: the structured line, as `event` makes it."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import io
import json
import logging
import subprocess
import sys
from collections.abc import Iterator

import anyio
import anyio.to_thread
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rypsok.core import logs

_UVLOOP = pytest.mark.skipif(importlib.util.find_spec("uvloop") is None, reason="no uvloop")


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    """rypsok's records through its own formatter into a buffer, the logger restored after."""
    buffer = io.StringIO()
    with _only_handler("rypsok.test_logs", logging.StreamHandler(buffer)):
        yield buffer


@contextlib.contextmanager
def _only_handler(name: str, handler: logging.Handler) -> Iterator[None]:
    """`handler`, with rypsok's formatter, the only one logger `name` writes to; restored after."""
    handler.setFormatter(logs.JsonLineFormatter())
    logger = logging.getLogger(name)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield
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


# -- the line's text, made in parts (docs/performance.md §26) -----------------------------

_TEXT = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12
) | st.sampled_from(
    ["ts", "level", "logger", "event", "exception", "request_id", "wikipédia\u2028", ""]
)
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=8,
)
_CREATED = (
    st.floats(min_value=-2e12, max_value=2e12)
    | st.floats(min_value=1.7e9, max_value=1.9e9)
    | st.sampled_from([0.0, -0.0, 0.0005, -0.0005, 0.001, 1e12, -1e12, 999999999999.9995,
                       float("inf"), float("nan"), 1e-300])
    | st.integers(min_value=0, max_value=10**10)
)  # fmt: skip


@pytest.mark.req("REQ-OBS-005")
@settings(max_examples=300, deadline=None)
@given(
    created=_CREATED,
    level=st.sampled_from([logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR, 35]),
    name=_TEXT,
    logger=_TEXT,
    fields=st.dictionaries(_TEXT, _VALUES, max_size=6) | st.none() | st.just([1]),
    args=st.sampled_from([(), ("x",)]),
    failed=st.booleans(),
)
def test_the_formatter_writes_the_text_of_the_line_dict(
    *,
    created: float,
    level: int,
    name: str,
    logger: str,
    fields: object,
    args: tuple[str, ...],
    failed: bool,
) -> None:
    """Whatever the record, the text is `json.dumps` of the line's dict (the same settings).

    The dict is the one the formatter always described: time rounded to the
    millisecond, level, logger, event, the fields in order (one named like a
    key of the line replaces its value in place), then the exception's class.
    """
    error = (ValueError, ValueError("x"), None) if failed else None
    message = name.replace("%", "") + "%s" * len(args) if args else name
    record = logging.LogRecord(logger, level, "f", 0, message, args, error)
    if fields is not None:
        record.fields = fields
    record.created = created
    line: dict[str, object] = {
        "ts": round(created, 3),
        "level": logging.getLevelName(level).lower(),
        "logger": logger,
        "event": record.getMessage(),
    }
    if isinstance(fields, dict):
        line.update(fields)
    if failed:
        line["exception"] = "ValueError"
    expected = json.dumps(line, ensure_ascii=True, separators=(",", ":"), default=str)
    assert logs.JsonLineFormatter().format(record) == expected


@pytest.mark.req("REQ-OBS-005")
@settings(max_examples=2000, deadline=None)
@given(
    st.floats(min_value=-1e12, max_value=1e12, exclude_min=True, exclude_max=True)
    | st.floats(min_value=1.7e9, max_value=1.9e9)
)
def test_the_time_text_is_the_rounded_times_repr(created: float) -> None:
    assert logs._ts_text(created) == repr(round(created, 3))


def test_the_time_text_leaves_what_it_has_not_shown_to_the_dict() -> None:
    for outside in (1e12, -1e12, 1e16, float("inf"), float("-inf"), float("nan")):
        assert logs._ts_text(outside) is None
    assert logs._ts_text(5) is None  # type: ignore[arg-type]  # an int rounds to an int


@pytest.mark.req("REQ-OBS-005")
def test_an_event_record_is_the_record_make_record_makes() -> None:
    """Every attribute `Logger.makeRecord` sets, in its order, equal but for the clock's."""
    log = logging.getLogger("rypsok.test_logs")
    switches = (logging.logThreads, logging.logProcesses, logging.logMultiprocessing)
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    try:
        error = (ValueError, ValueError("x"), None)
        for level, exc_info in ((logging.INFO, None), (logging.ERROR, error), (25, None)):
            fields = {"request_id": "9519d025c5ec446c", "hits": 3}
            ours = vars(logs._record(log, level, "engine_request", exc_info, fields))
            made_by_logging = log.makeRecord(
                log.name, level, "(unknown file)", 0, "engine_request", (), exc_info,
                "(unknown function)", {"fields": fields},
            )  # fmt: skip
            theirs = vars(made_by_logging)
            assert list(ours) == list(theirs)
            clock = ("created", "msecs", "relativeCreated")
            assert {k: v for k, v in ours.items() if k not in clock} == {
                k: v for k, v in theirs.items() if k not in clock
            }
            assert abs(ours["created"] - theirs["created"]) < 1.0
            assert ours["msecs"] == int((ours["created"] - int(ours["created"])) * 1000)
            made = theirs["relativeCreated"] + (ours["created"] - theirs["created"]) * 1000
            assert abs(ours["relativeCreated"] - made) < 1e-3
        # Thread lookups switched on: the stdlib makes the record, with them.
        logging.logThreads = True
        assert vars(logs._record(log, logging.INFO, "e", None, {}))["thread"] is not None
    finally:
        logging.logThreads, logging.logProcesses, logging.logMultiprocessing = switches


# -- the handler: a turn's lines in one write ---------------------------------------------


class _Writes(io.StringIO):
    """A stream that records each write."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []

    def write(self, text: str) -> int:
        self.writes.append(text)
        return super().write(text)


@pytest.fixture
def turn_lines() -> Iterator[_Writes]:
    stream = _Writes()
    with _only_handler("rypsok.test_turns", logs.TurnLines(stream)):
        yield stream


def _events(stream: _Writes) -> list[object]:
    return [json.loads(line)["event"] for line in stream.getvalue().splitlines()]


@pytest.mark.req("REQ-OBS-005")
async def test_the_lines_of_one_turn_are_one_write_before_the_loop_waits(
    turn_lines: _Writes,
) -> None:
    log = logging.getLogger("rypsok.test_turns")
    for name in ("first", "second", "third"):
        logs.event(log, name)
    assert turn_lines.writes == []  # held while this callback runs
    await asyncio.sleep(0)  # the loop's next turn
    assert len(turn_lines.writes) == 1
    assert _events(turn_lines) == ["first", "second", "third"]
    logs.event(log, "fourth")
    await asyncio.sleep(0.01)  # a wait for a timer: the line is out before the loop sleeps
    assert _events(turn_lines)[-1] == "fourth" and len(turn_lines.writes) == 2


@pytest.mark.req("REQ-OBS-005")
async def test_a_line_from_a_thread_is_written_after_the_lines_held_before_it(
    turn_lines: _Writes,
) -> None:
    """A thread has no loop to wait for: its line is written at once, with what was held first."""
    log = logging.getLogger("rypsok.test_turns")
    logs.event(log, "on_the_loop")
    await anyio.to_thread.run_sync(lambda: logs.event(log, "in_a_thread"))
    assert _events(turn_lines) == ["on_the_loop", "in_a_thread"]
    await asyncio.sleep(0)
    assert _events(turn_lines) == ["on_the_loop", "in_a_thread"]  # none twice


def test_without_a_loop_each_line_is_written_at_once(turn_lines: _Writes) -> None:
    log = logging.getLogger("rypsok.test_turns")
    logs.event(log, "start")
    assert turn_lines.writes != [] and _events(turn_lines) == ["start"]


@pytest.mark.req("REQ-OBS-005")
async def test_flush_writes_what_is_held(turn_lines: _Writes) -> None:
    log = logging.getLogger("rypsok.test_turns")
    logs.event(log, "held")
    handler = log.handlers[0]
    handler.flush()
    assert _events(turn_lines) == ["held"]
    await asyncio.sleep(0)
    assert _events(turn_lines) == ["held"]


_FAILING_SERVER = """
import logging, sys
import anyio
from rypsok.core import logs
logs.configure()
log = logging.getLogger("rypsok.test")
async def main():
    logs.event(log, "before_the_failure")
    raise RuntimeError("boom")
anyio.run(main, backend_options={"use_uvloop": sys.argv[1] == "uvloop"})
"""


@pytest.mark.req("REQ-OBS-005")
@pytest.mark.parametrize("loop", ["asyncio", pytest.param("uvloop", marks=_UVLOOP)])
def test_a_line_held_when_the_loop_fails_comes_before_the_traceback(loop: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _FAILING_SERVER, loop], capture_output=True, timeout=60, check=False
    )
    assert done.returncode == 1
    err = done.stderr.decode()
    assert '"event":"before_the_failure"' in err
    assert err.index('"event":"before_the_failure"') < err.index("Traceback")
    assert "RuntimeError: boom" in err
