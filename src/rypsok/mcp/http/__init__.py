"""MCP over Streamable HTTP with keys, TLS and listener protections (a package).

The SDK's Streamable HTTP app serves the protocol (REQ-MCP-003): the
handshake-based revisions in stateful sessions and the handshake-free
revision on the same endpoint, never the old HTTP+SSE transport. The modes
are chosen for cancellation (REQ-MCP-007): responses are SSE streams
(`json_response=False`) and sessions are stateful, so a handshake-era
`notifications/cancelled` reaches its call and a handshake-free call is
cancelled by the SDK when its response stream closes. The SDK does not treat
a closed stream as a cancellation on the handshake revisions; without an
event store such a stream can never be resumed, so `_ClosedStreamCancels`
hands the session the cancellation the client can no longer send.

Around that app, outermost first, each layer one concern:

- `_AccessLog`: one line per request (method, endpoint or "(other)", status,
  caller, duration); never a query string, header or key. uvicorn's own access
  log is off.
- `_TimeBound` (LIM-H5, REQ-SEC-022): ends any request after `request_ms`,
  with 408 when no response has started, else by ending the started stream.
  `_head_bound_protocol` does the same for a request head that never completes.
- `_HostOrigin` (REQ-SEC-018): the SDK's Host and Origin validation on every
  request, on every bind, before any key is looked at.
- `auth.KeyGate` (decision 5): a bearer key on every request; one 401 that says a
  new key is needed otherwise. The caller name becomes the SDK's access token
  `client_id`, the identity for per-caller limits (REQ-SEC-019).
- `_ModernOnly` (REQ-MCP-006): only when the operator disabled the handshake
  revisions.
- `_SessionBound` (LIM-H6, REQ-SEC-024): the SDK refuses a handshake beyond
  `max_sessions` with a bare 503; this adds Retry-After, logs and counts it.

uvicorn serves HTTP/1.1 only (h11, ALPN `http/1.1`): HTTP/2 is not served, so
LIM-H4 (streams per HTTP/2 connection) has no connection to bound.

The modules, each one concern: `plan` (the start-up policy over the
configuration: keys, binds, TLS, Host and Origin; no protocol imports, so
`check` stays light), `wire` (small ASGI helpers and the listener's
counters), `auth` (keys, the key gate), `layers` (the ASGI layers and the
application), `serve` (uvicorn, TLS, signals).
"""
