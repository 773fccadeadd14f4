"""Structured log lines on standard error (REQ-OBS-005, REQ-PRIV-004).

Each line is one JSON object: time, level, event and the fields the caller
gave. Fields are rypsok's own values (ids, hosts that passed policy, counts,
timings, outcomes, decisions); query text, URL paths, page content and
secrets are never passed here at the default level. Standard output is not
touched: on stdio it belongs to MCP alone (REQ-MCP-002).
"""

from __future__ import annotations

import contextvars
import json
import logging
import sys
from collections.abc import Callable
from json import encoder as _json_encoder
from typing import Any

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
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            line.update(fields)
        if record.exc_info and record.exc_info[0] is not None:
            # The class only: exception text may carry external data.
            line["exception"] = record.exc_info[0].__name__
        return _encode_line(line)


def configure(level: int = logging.INFO) -> None:
    """Send rypsok's and the SDK's records to stderr as JSON lines.

    No line names a thread or a process, so records are made without looking
    them up (`logging`'s documented switches for that; half the cost of making
    a record, docs/performance.md §20.3).
    """
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLineFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    logging.getLogger(ROOT).setLevel(level)


def enable_query_log() -> None:
    """Let the debug lines of the query logger through; everything else keeps its level."""
    logging.getLogger(QUERIES).setLevel(logging.DEBUG)


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
        record = logger.makeRecord(
            logger.name, level, _NO_FILE, 0, name, (), error, _NO_FUNCTION, {"fields": stamped}
        )
        logger.handle(record)
