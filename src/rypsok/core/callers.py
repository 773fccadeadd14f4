"""The caller a call is made for, as the tasks of that call see it (REQ-SEC-019).

`Services.call` sets it; the engine queues read it to serve waiting callers
in turn. A context variable, because the caller is a property of the call,
and the tasks a search spawns per engine inherit it without every layer
between passing it on.
"""

from __future__ import annotations

from contextvars import ContextVar

# stdio has one caller, the process's operator.
LOCAL = "local"
current_caller: ContextVar[str] = ContextVar("rypsok_caller", default=LOCAL)
