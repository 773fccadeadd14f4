"""Structured log lines on standard error (REQ-OBS-005, REQ-PRIV-004).

Each line is one JSON object: time, level, event and the fields the caller
gave. Fields are rypsok's own values (ids, hosts that passed policy, counts,
timings, outcomes, decisions); query text, URL paths, page content and
secrets are never passed here at the default level. Standard output is not
touched: on stdio it belongs to MCP alone (REQ-MCP-002).
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import sys
import time
from collections.abc import Callable
from json import encoder as _json_encoder
from typing import Any, TextIO

ROOT = "rypsok"
# The one logger that may carry query text, at debug level, and only when the
# operator turned `privacy.log_queries` on (LIM-P3).
QUERIES = "rypsok.queries"

# What a record made without `findCaller` names as its origin (logging's own words).
_NO_FILE = "(unknown file)"
_NO_FUNCTION = "(unknown function)"

# The id of the call being served; tasks started for the call inherit it, so
# every line a call causes (engine requests included) carries its id.
request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "rypsok_request_id", default=None
)


def _line_encoder() -> Callable[[dict[str, Any]], str]:
    """`json.dumps(line, ensure_ascii=True, separators=(",", ":"), default=str)`, built once.

    `json.dumps` with arguments makes a new encoder, and its C scanner, for
    every line: half the cost of formatting one (docs/performance.md §20.3).
    The C encoder made once with the same settings writes the same text. It
    skips the check for circular containers, which rypsok's fields (ids,
    counts, timings, names) never are.
    """
    make: Any = getattr(_json_encoder, "c_make_encoder", None)  # not in typeshed
    if make is None:  # an interpreter without the C accelerator: the library's own path
        encoder = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), default=str)
        return encoder.encode
    encode = make(
        None, str, _json_encoder.encode_basestring_ascii, None, ":", ",", False, False, True
    )
    return lambda line: "".join(encode(line, 0))


_encode_line = _line_encoder()


class JsonLineFormatter(logging.Formatter):
    """The line: `{"ts", "level", "logger", "event", <the record's fields>, "exception"?}`.

    Its text is always what `_encode_line` writes for that dict. An `event`
    record (fields in a dict that renames no key of the line, no arguments,
    no exception) is written in parts that are the same text, made cheaper:
    the time by `_ts_text`, and the level, logger and event, the same for
    every line of one event, from `_headers`.
    """

    def format(self, record: logging.LogRecord) -> str:
        fields = getattr(record, "fields", None)
        if (
            type(fields) is dict
            and type(record.msg) is str
            and not record.args
            and not record.exc_info
            and _LINE_KEYS.isdisjoint(fields)
        ):
            ts = _ts_text(record.created)
            if ts is not None:
                header = _header_text(record.levelname, record.name, record.msg)
                rest = _encode_line(fields)  # "{}" or '{"key":...}'
                return f'{{"ts":{ts}{header}{"}" if len(rest) == 2 else "," + rest[1:]}'
        return _encode_line(_line_of(record, fields))


def _line_of(record: logging.LogRecord, fields: object) -> dict[str, Any]:
    line: dict[str, Any] = {
        "ts": round(record.created, 3),
        "level": record.levelname.lower(),
        "logger": record.name,
        "event": record.getMessage(),
    }
    if isinstance(fields, dict):
        line.update(fields)
    if record.exc_info and record.exc_info[0] is not None:
        # The class only: exception text may carry external data.
        line["exception"] = record.exc_info[0].__name__
    return line


# The keys the line sets before the fields; a field of one of these names
# replaces its value in place, which only the dict makes.
_LINE_KEYS = frozenset(("ts", "level", "logger", "event"))

# `,"level":...,"logger":...,"event":...` for each (level, logger, event) seen,
# as `_encode_line` writes them. rypsok's events are names in its code; what
# the dict path below the limit does not keep is made again for each line.
_headers: dict[tuple[str, str, str], str] = {}
_HEADERS_KEPT = 1024


def _header_text(levelname: str, logger: str, event: str) -> str:
    key = (levelname, logger, event)
    text = _headers.get(key)
    if text is None:
        named = {"level": levelname.lower(), "logger": logger, "event": event}
        text = "," + _encode_line(named)[1:-1]
        if len(_headers) < _HEADERS_KEPT:
            _headers[key] = text
    return text


# Below 10**12 (s; the year 33,658) a time to the millisecond has at most 15
# significant digits.
_TS_BOUND = 1e12


def _ts_text(created: float) -> str | None:
    """`repr(round(created, 3))`, as the line's encoder writes it, or None where not shown equal.

    `round(x, 3)` and `f"{x:.3f}"` take the same correctly rounded three
    decimals of `x` (CPython's `_Py_dg_dtoa`, mode 3); `round` then reads them
    back into the nearest double and `repr` writes that double's shortest
    round-trip digits. A decimal of at most 15 significant digits is the only
    one of at most 15 that reads back to its double, so those shortest digits
    are the decimals' own: ``f"{x:.3f}"`'s text without its trailing zeros (one kept
    after the point, as `repr` keeps it). Two conversions fewer a line.
    """
    if type(created) is not float or not -_TS_BOUND < created < _TS_BOUND:
        return None
    text = f"{created:.3f}".rstrip("0")
    return text + "0" if text[-1] == "." else text


class TurnLines(logging.StreamHandler[TextIO]):
    """A stream handler that writes the lines of one turn of the event loop at once.

    A search call logs six lines; written one by one, each is a `write` and a
    flush of the text stream (a third of a line's cost, docs/performance.md
    §23.2.1). On a thread whose event loop is running, a line is held and the
    loop is asked (`call_soon`) to write what is held once the callbacks
    ready in this turn have run, before it next waits for I/O: every line is
    written within the turn that logged it, in the order logged, and lines
    of concurrent calls stay in time order. Where no loop runs (start-up,
    `check`, a worker thread), the line and any held before it are written at
    once. `flush` (the stdlib's `logging.shutdown` at exit, `logs.flush`
    before `os._exit`, the end of every call) writes what is held.
    """

    def __init__(self, stream: TextIO) -> None:
        super().__init__(stream)
        self._held: list[str] = []
        # The loop asked to write the held lines, until it has.
        self._write_asked: asyncio.AbstractEventLoop | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._held.append(self.format(record) + self.terminator)
        except RecursionError:  # as StreamHandler.emit (CPython issue 36272)
            raise
        except Exception:
            self.handleError(record)
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop on this thread: nothing will write it later
            self.flush()
            return
        if loop is not self._write_asked:
            loop.call_soon(self._write_turn)
            self._write_asked = loop

    def flush(self) -> None:
        self.acquire()  # the handler's RLock, as `handle` takes it around `emit`
        try:
            self._write_held()
            super().flush()
        finally:
            self.release()

    def _write_turn(self) -> None:
        self.acquire()
        try:
            self._write_asked = None
            self._write_held()
        finally:
            self.release()

    def _write_held(self) -> None:
        # Swapped first: a line logged meanwhile (a signal handler between two
        # bytecodes) lands in one list or the other, never in one cleared unwritten.
        held, self._held = self._held, []
        if held:
            try:
                self.stream.write("".join(held))
                self.stream.flush()
            except RecursionError:
                raise
            except Exception:
                self.handleError(_HELD_LINES)


# What `handleError` reports when a write of held lines fails (it names a record).
_HELD_LINES = logging.makeLogRecord({"name": ROOT, "msg": "held log lines"})


def configure(level: int = logging.INFO) -> None:
    """Send rypsok's and the SDK's records to stderr as JSON lines.

    No line names a thread or a process, so records are made without looking
    them up (`logging`'s documented switches for that; half the cost of making
    a record, docs/performance.md §20.3).
    """
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    handler = TurnLines(sys.stderr)
    handler.setFormatter(JsonLineFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    logging.getLogger(ROOT).setLevel(level)


def enable_query_log() -> None:
    """Let the debug lines of the query logger through; everything else keeps its level."""
    logging.getLogger(QUERIES).setLevel(logging.DEBUG)


def flush() -> None:
    """Write every line held, then stderr: before `os._exit`, which skips `logging.shutdown`."""
    for handler in logging.getLogger().handlers:
        handler.flush()
    sys.stderr.flush()


def event(
    logger: logging.Logger,
    name: str,
    level: int = logging.INFO,
    exc_info: BaseException | None = None,
    **fields: Any,
) -> None:
    """Log one structured line, stamped with the id of the call being served.

    The record is made as `Logger.log` makes it, less the walk up the stack for
    the caller's file, line and function (`findCaller`), which no line of ours
    prints: a search call writes six lines (docs/performance.md §17).
    """
    if logger.isEnabledFor(level):
        current = request_id.get()
        stamped = {"request_id": current, **fields} if current is not None else fields
        error = None if exc_info is None else (type(exc_info), exc_info, exc_info.__traceback__)
        logger.handle(_record(logger, level, name, error, stamped))


_ExcInfo = tuple[type[BaseException], BaseException, Any]
# `logging`'s globals: a switch it may not have is read without an AttributeError.
_LOGGING = vars(logging)

# A record `LogRecord` made with `event`'s placeholders: the attributes every
# one of `event`'s records shares, in the stdlib's order. Made on first use.
_shared: dict[str, Any] = {}


def _record(
    logger: logging.Logger,
    level: int,
    name: str,
    error: _ExcInfo | None,
    fields: dict[str, Any],
) -> logging.LogRecord:
    """The record `logger.makeRecord` makes for `event`, without its per-line string work.

    `LogRecord.__init__` derives the file name and module from the path with
    `os.path.basename` and `splitext`, and checks the arguments for a mapping,
    on every record; for `event` the path is always `_NO_FILE` and there are no
    arguments, so those attributes are the same on every record. They are
    copied from one record the stdlib made; only what differs per line is set,
    computed as `__init__` computes it. Where that would not be the stdlib's
    record (another record factory or `makeRecord`, or thread, process or task
    lookups switched on), the stdlib makes it.
    """
    if (
        logging.logThreads
        or logging.logProcesses
        or logging.logMultiprocessing
        or _LOGGING.get("logAsyncioTasks", False)  # Python 3.12+
        or logging.getLogRecordFactory() is not logging.LogRecord
        or type(logger).makeRecord is not logging.Logger.makeRecord
    ):
        return logger.makeRecord(
            logger.name, level, _NO_FILE, 0, name, (), error, _NO_FUNCTION, {"fields": fields}
        )
    if not _shared:
        made = logging.LogRecord(ROOT, level, _NO_FILE, 0, "", (), None, _NO_FUNCTION)
        _shared.update(vars(made))
    record: logging.LogRecord = object.__new__(logging.LogRecord)
    attributes = record.__dict__
    attributes.update(_shared)
    now = time.time()
    attributes["name"] = logger.name
    attributes["msg"] = name
    attributes["levelname"] = logging.getLevelName(level)
    attributes["levelno"] = level
    attributes["exc_info"] = error
    attributes["created"] = now
    attributes["msecs"] = int((now - int(now)) * 1000) + 0.0  # as __init__ (CPython gh-89047)
    # `(now - logging._startTime) * 1000`, from the shared record's own pair.
    attributes["relativeCreated"] = _shared["relativeCreated"] + (now - _shared["created"]) * 1000
    attributes["fields"] = fields  # as makeRecord sets `extra`, after the record's own
    return record
