"""Every default of the limits table (shared/spec/LIMITS.md), in one place.

Code reads limits from here or from the validated configuration, never from
literals of its own. Each constant carries its LIM id in its name's comment;
`docs/limits.md` is the project's copy of the table and a test keeps the two
in step. A default changes only with a recorded reason in that document.
"""

from __future__ import annotations

from typing import Final

# Operation
SHUTDOWN_MS: Final = 2_000  # LIM-O1: exit after stdin EOF or SIGTERM
CANCEL_MS: Final = 100  # LIM-O2: after a cancellation, nothing new and in-flight aborted

# Interface
TOOL_DEFINITIONS_MAX_CHARS: Final = 4_000  # LIM-I1
PARAMETERS_PER_TOOL: Final = 6  # LIM-I2
INPUT_SCHEMA_TYPES: Final = ("string", "integer", "boolean")  # LIM-I3: flat, enums allowed
MESSAGE_MAX_CHARS: Final = 300  # LIM-I4: one notice or error message

# Concurrency and invocation
ENGINE_REQUESTS_IN_FLIGHT: Final = 32  # LIM-C1 (operator 1-256)
ENGINE_REQUESTS_IN_FLIGHT_RANGE: Final = (1, 256)
REQUESTS_PER_ENGINE_IN_FLIGHT: Final = 2  # LIM-C2 (or lower per admission record)
FETCHES_IN_FLIGHT: Final = 8  # LIM-C3 (operator 1-64)
FETCHES_IN_FLIGHT_RANGE: Final = (1, 64)
FETCHES_PER_HOST: Final = 2  # LIM-C4 (operator 1-8)
FETCHES_PER_HOST_RANGE: Final = (1, 8)
# LIM-C5 (operator 1-64). Default 1, not the number of CPUs: extraction holds
# the GIL, so more threads give no speed and multiply the memory of parse trees
# (docs/limits.md, recorded change).
PARSE_TASKS: Final = 1
PARSE_TASKS_RANGE: Final = (1, 64)
# LIM-C9 (request rate per engine) is each driver's Admission.min_interval_ms.
WEB_SEARCH_PER_MINUTE: Final = 60  # LIM-C6
WEB_FETCH_PER_MINUTE: Final = 60  # LIM-C7
ENGINE_STATUS_PER_MINUTE: Final = 120  # LIM-C8
CALLS_PER_MINUTE_RANGE: Final = (1, 6_000)  # LIM-C6..C8 operator bounds
# Per-caller caps in HTTP mode (rypsok's own ids, REQ-SEC-019; docs/http-mode.md): one
# caller holds at most a share of LIM-C3 (C10), LIM-C1 (C11) and each host's LIM-C4 (C12).
# Unset, a caller alone may use the whole pool; competing callers are served fewest-held first.
FETCHES_PER_CALLER: Final = (
    FETCHES_IN_FLIGHT  # LIM-C10 default: the whole LIM-C3 (operator 1-LIM-C3)
)
ENGINE_REQUESTS_PER_CALLER: Final = ENGINE_REQUESTS_IN_FLIGHT  # LIM-C11 default: whole LIM-C1
HOST_FETCHES_PER_CALLER: Final = FETCHES_PER_HOST  # LIM-C12: LIM-C4 x C10 / C3 (derived)

# LIM-U1: every text budget counts Unicode scalar values, i.e. len() of a str.

# Search
QUERY_MAX_CHARS: Final = 400  # LIM-S1 (after trimming, at least 1)
MAX_RESULTS_DEFAULT: Final = 10  # LIM-S2
MAX_RESULTS_RANGE: Final = (1, 20)  # LIM-S2
RESULTS_PER_ENGINE: Final = 10  # LIM-S3
SEARCH_DEADLINE_MS: Final = 6_000  # LIM-S4
SEARCH_DEADLINE_RANGE: Final = (1_000, 30_000)
ENGINE_TIMEOUT_MS: Final = 5_000  # LIM-S5 (S5 + S6 <= S4)
SEARCH_RESERVE_MS: Final = 500  # LIM-S6: set from docs/performance.md
SEARCH_CEILING_MS: Final = 10_000  # LIM-S7 (>= S4)
ENGINES_PER_SEARCH: Final = 6  # LIM-S8
ENGINES_PER_SEARCH_RANGE: Final = (1, 16)
TITLE_MAX_CHARS: Final = 200  # LIM-S9
SNIPPET_MAX_CHARS: Final = 500  # LIM-S10
LATENCY_WINDOW: Final = 20  # LIM-S11
ENGINE_CONNECT_TIMEOUT_MS: Final = 2_000  # LIM-S12 (<= S5)

# Fetch
MAX_CHARS_DEFAULT: Final = 20_000  # LIM-F1 (<= F2)
MAX_CHARS_CEILING: Final = 100_000  # LIM-F2
MAX_CHARS_CEILING_RANGE: Final = (1_000, 1_000_000)
FETCH_MAX_BYTES: Final = 5 * 1024 * 1024  # LIM-F3
FETCH_MAX_BYTES_RANGE: Final = (64 * 1024, 50 * 1024 * 1024)
FETCH_TIMEOUT_MS: Final = 15_000  # LIM-F4 (per hop, <= F5)
FETCH_CEILING_MS: Final = 20_000  # LIM-F5
FETCH_CEILING_RANGE: Final = (2_000, 60_000)
FETCH_CONNECT_TIMEOUT_MS: Final = 3_000  # LIM-F6 (<= F4)
SAME_HOST_REDIRECTS: Final = 5  # LIM-F7
SAME_HOST_REDIRECTS_RANGE: Final = (0, 10)
FETCH_PORTS: Final = (443,)  # LIM-F8 (80 added where http is allowed)
URL_MAX_CHARS: Final = 2_048  # LIM-F9
PARSED_NODES: Final = 200_000  # LIM-F10
PARSED_NODES_RANGE: Final = (1_000, 2_000_000)
NESTING_DEPTH: Final = 256  # LIM-F11
NESTING_DEPTH_RANGE: Final = (16, 1_024)
ROBOTS_CACHE_S: Final = 24 * 3600  # LIM-F12 (at most 24 h)
ROBOTS_MAX_BYTES: Final = 500 * 1024  # LIM-F13 (at least 500 KiB)

# Hidden text (the core/fetch/css_visibility package, docs/hidden-text.md): what one page's
# CSS may make the visibility check read and match. Past a bound the check is
# partial and the caller says so.
STYLE_SHEET_MAX_BYTES: Final = 1024 * 1024  # LIM-V1: `<style>` sheet text read per page
STYLE_ATTRIBUTE_MAX_BYTES: Final = 128 * 1024  # LIM-V2: distinct style attribute text parsed
STYLE_RULES: Final = 2_000  # LIM-V3: style rules parsed per page
SELECTOR_MATCHES: Final = 10_000  # LIM-V4: elements matched by hiding and re-showing rules
SELECTOR_VISITS: Final = 500_000  # LIM-V5: element visits by selector evaluations

# Privacy
CREDENTIAL_CHECK_DEFAULT: Final = "deny"  # LIM-P1
CREDENTIAL_CHECK_MODES: Final = ("deny", "warn", "mask", "off")
LOG_QUERIES_DEFAULT: Final = False  # LIM-P3

# Circuit breaker
BREAKER_FAILURES: Final = 3  # LIM-B1
BREAKER_FAILURES_RANGE: Final = (1, 20)
BREAKER_COOLDOWN_MS: Final = 30_000  # LIM-B2
BREAKER_COOLDOWN_RANGE: Final = (1_000, 3_600_000)
BREAKER_GROWTH: Final = 2  # LIM-B3 factor
BREAKER_GROWTH_RANGE: Final = (1, 10)
BREAKER_MAX_COOLDOWN_MS: Final = 15 * 60_000  # LIM-B3 cap
RETRY_AFTER_MAX_MS: Final = 3_600_000  # LIM-B4
PROBE_REQUESTS: Final = 1  # LIM-B5

# Cache
CACHE_ENABLED: Final = False  # LIM-K1
CACHE_TTL_S: Final = 300  # LIM-K2
CACHE_TTL_RANGE: Final = (1, 24 * 3600)
CACHE_ENTRIES: Final = 1_000  # LIM-K3
CACHE_ENTRIES_RANGE: Final = (1, 1_000_000)
# LIM-K4: the deadline of one Redis operation; past it the call goes on with local
# state (REQ-CACHE-006). Tens of ms: a loopback or same-rack Redis answers in well under 1.
REDIS_OPERATION_MS: Final = 50  # LIM-K4 (rypsok's own id; operator 5-1000)
REDIS_OPERATION_RANGE: Final = (5, 1_000)
# [cluster] instances: without Redis each process spaces requests by the record's
# spacing times this, so N processes together stay within the record.
CLUSTER_INSTANCES: Final = 1
CLUSTER_INSTANCES_RANGE: Final = (1, 64)

# HTTP mode
HTTP2_STREAMS: Final = 100  # LIM-H4
HTTP2_STREAMS_RANGE: Final = (1, 1_000)
HTTP_REQUEST_MS: Final = 60_000  # LIM-H5 (>= S7 and >= F5)
HTTP_SESSIONS: Final = 1_000  # LIM-H6
HTTP_SESSIONS_RANGE: Final = (1, 100_000)
HTTP_STREAM_MS: Final = 600_000  # LIM-H7 lifetime of an open GET event stream; ends quietly
HTTP_STREAM_RANGE: Final = (1_000, 86_400_000)
HTTP_HEAD_MS: Final = 10_000  # LIM-H8 a request head must arrive within this (<= H5)
HTTP_HEAD_RANGE: Final = (1_000, 60_000)
HTTP_PENDING_CONNECTIONS: Final = 256  # LIM-H9 connections without a complete head; oldest dropped
HTTP_PENDING_RANGE: Final = (1, 65_536)
HTTP_SESSIONS_PER_CALLER_MIN: Final = 2  # LIM-H10 per caller: a quarter of LIM-H6, at least this
HTTP_SESSION_IDLE_S: Final = 300  # LIM-H11 a session without a request is closed quietly
HTTP_SESSION_IDLE_RANGE: Final = (1, 86_400)
OAUTH_SKEW_S: Final = 60  # LIM-H12 clock skew allowed on exp and nbf of a bearer token
OAUTH_SKEW_RANGE: Final = (0, 300)
OAUTH_JWKS_REFRESH_S: Final = 60  # LIM-H13 at most one JWKS refetch (unknown kid) per this
OAUTH_JWKS_REFRESH_RANGE: Final = (1, 86_400)
OAUTH_JWKS_MAX_BYTES: Final = 256 * 1024  # LIM-H14 largest JWKS document read
