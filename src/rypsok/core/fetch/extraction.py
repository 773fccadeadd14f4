"""The pipeline's extraction step: decode, parse and extract off the event loop.

At most LIM-C5 extractions run at a time, in worker threads (REQ-PAGE-008).
A thread is never abandoned: when the call ends (LIM-F5 or a caller's
cancellation) its flag is set and it stops at the next parse slice (a flag
the parser checks before each slice, `parse.cancellable`); the call waits
for it, so the LIM-C5 permit and the call's LIM-C3 slot are released only
once the thread has returned, and neither limit is exceeded by threads
still running for calls that already ended (REQ-SEC-012).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import anyio

from rypsok.core.boundary.instructions import looks_like_instruction
from rypsok.core.contract import ErrorKind, ToolError
from rypsok.core.egress.messages import AgentResponse
from rypsok.core.fetch import parse
from rypsok.core.fetch.decode import Kind, decode_body
from rypsok.core.fetch.extract import Extracted, ExtractionFailed, extract_html, extract_text
from rypsok.core.fetch.refusals import deadline_passed


@dataclass(frozen=True, slots=True)
class Extraction:
    extracted: Extracted
    instruction_like: bool  # in the window returned by this call


class Extractor:
    """Extractions of the process, bounded by LIM-F10, LIM-F11 and the LIM-C5 limiter."""

    def __init__(
        self,
        parse_slots: anyio.CapacityLimiter,
        clock: Callable[[], float],
        *,
        max_nodes: int,
        max_depth: int,
    ) -> None:
        self._parse_slots = parse_slots
        self._clock = clock
        self._max_nodes = max_nodes
        self._max_depth = max_depth

    async def extract(
        self, kind: Kind, response: AgentResponse, deadline: float, window: slice
    ) -> Extraction:
        """The page's extraction, or the error that ends the call; stopped at `deadline`."""
        remaining = deadline - self._clock()
        if remaining <= 0:
            raise deadline_passed()
        cancel = threading.Event()
        outcome: list[Extraction | ToolError | None] = []
        async with anyio.create_task_group() as group:
            group.start_soon(_set_after, cancel, remaining)
            try:
                extraction = await anyio.to_thread.run_sync(
                    self.extract_sync,
                    kind,
                    response,
                    window,
                    cancel,
                    limiter=self._parse_slots,
                    abandon_on_cancel=False,
                )
                outcome.append(extraction)
            finally:
                group.cancel_scope.cancel()
        result = outcome[0]
        if isinstance(result, ToolError):
            raise result
        if result is None:
            raise deadline_passed()  # stopped at LIM-F5
        return result

    def extract_sync(
        self, kind: Kind, response: AgentResponse, window: slice, cancel: threading.Event
    ) -> Extraction | ToolError | None:
        """In the worker thread: the extraction, its refusal, or None once cancelled."""
        try:
            with parse.cancellable(cancel):
                text, _ = decode_body(response.body, response.headers.get("content-type"))
                parse.check_cancelled()
                extracted = self._parse(kind, text, response.url)
                parse.check_cancelled()
        except parse.ParseCancelled:
            return None
        except ToolError as refusal:
            return refusal
        # Only the returned window is checked: the check scales with its length,
        # and text outside the window is not shown to the caller in this call.
        return Extraction(extracted, looks_like_instruction(extracted.markdown[window]))

    def _parse(self, kind: str, text: str, url: str) -> Extracted:
        try:
            if kind == "html":
                return extract_html(
                    text, base_url=url, max_nodes=self._max_nodes, max_depth=self._max_depth
                )
            return extract_text(text, kind="markdown" if kind == "markdown" else "text")
        except ExtractionFailed:
            raise ToolError(
                ErrorKind.UNSUPPORTED_CONTENT,
                "No readable content could be extracted from this page; use another source.",
                reason="extraction_failed",
            ) from None


async def _set_after(flag: threading.Event, seconds: float) -> None:
    """Set `flag` after `seconds`, or as soon as this task is cancelled."""
    try:
        await anyio.sleep(seconds)
    finally:
        flag.set()
