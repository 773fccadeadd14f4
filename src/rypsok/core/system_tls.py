"""The egress TLS context: the system CA store, loaded once per process.

Loading the store costs about 60 ms of OpenSSL work (performance §20.5), most
of it with the GIL released. `serve` starts that load in a daemon thread before
it imports the protocol stack, so it runs on the second CPU while the imports
run on the first; everything else (check, tests, the library) builds the
context synchronously with `build_system_context`, as it always did.

Not in `rypsok.core.egress`: the command line may not import egress
(import-linter), and this module must stay light for `rypsok.cli` to import.
"""

from __future__ import annotations

import ssl
import threading


def build_system_context() -> ssl.SSLContext:
    """The system store (truststore's or OpenSSL's default paths), never a bundle
    of our own, and never SSL_CERT_FILE/SSL_CERT_DIR (REQ-SEC-017)."""
    import httpx2  # noqa: PLC0415 (this module must stay light for the command line)

    return httpx2.create_ssl_context(verify=True, trust_env=False)


class PendingSystemContext:
    """A `build_system_context` running in a daemon thread; `result` joins it."""

    def __init__(self) -> None:
        self._context: ssl.SSLContext | None = None
        self._error: BaseException | None = None
        # What the load imports (httpx2, and httpcore2 which httpx2 imports only
        # inside the call) is imported here, on the caller's thread: two threads
        # importing the same modules at once can meet a half-initialised module.
        # The imports are GIL-bound anyway; only the store load overlaps.
        import httpcore2  # noqa: F401, PLC0415
        import httpx2  # noqa: F401, PLC0415

        self._thread = threading.Thread(target=self._build, name="rypsok-ca-store", daemon=True)
        self._thread.start()

    def _build(self) -> None:
        try:
            self._context = build_system_context()
        except BaseException as exc:  # handed to the joining thread as it was raised
            self._error = exc

    def result(self) -> ssl.SSLContext:
        """The context, or the exception the load raised (the same one each call)."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._context is not None  # noqa: S101 (the thread set one of the two)
        return self._context


def start_system_context() -> PendingSystemContext:
    """Start loading the system store in the background (`serve` only)."""
    return PendingSystemContext()
