"""The HTTP mode's start-up policy: what a listener needs before it may serve.

Pure decisions over the validated configuration: which keys are usable and
what each admits, whether the bind is loopback, whether TLS is served here
or by a proxy in front, which Host and Origin values are accepted, and the
words the start-up log uses for who can check the certificate (REQ-SEC-018,
decision 5 of the specification). `check_http` lists every problem, each
naming its key; `plan_http` turns a configuration without problems into the
frozen `HttpPlan` the adapter serves. It lives in the adapter (its only
users are the adapter and the CLI) but imports no protocol package, so
`rypsok check` stays light (an import-linter contract).

Keys are never part of a message: a problem names the key's index and caller.
"""

from __future__ import annotations

import ipaddress
import pathlib
import re
import ssl
from dataclasses import dataclass
from typing import Literal

from rypsok.core import limits
from rypsok.core.config import Config, ConfigError, HttpConfig, Secret, SecretRef
from rypsok.mcp.http import certificate
from rypsok.mcp.http.certificate import CertificateFacts
from rypsok.mcp.http.oauth_plan import OAuthPlan, oauth_problems

Mode = Literal["tls", "behind_tls_proxy", "loopback_plain"]

# A caller name ends up in log lines and limit keys: short and plain.
_CALLER = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
# Bearer keys travel in a header: printable ASCII, no spaces (RFC 6750 b64token is stricter).
MIN_KEY_CHARS = 16
MAX_KEY_CHARS = 512
_PATH = re.compile(r"/[A-Za-z0-9._~/-]{0,199}")
_HOST_ENTRY = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:(\d{1,5}|\*))?")
_ORIGIN_ENTRY = re.compile(r"https?://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:(\d{1,5}|\*))?")

_CERTIFICATE_WORDS: dict[Mode, str] = {
    "tls": (
        "rypsok serves TLS with the configured certificate; each client verifies it against "
        "its own trust store, so an assistant whose provider makes the connection reaches "
        "rypsok only with a publicly trusted certificate"
    ),
    "behind_tls_proxy": (
        "the TLS-terminating proxy in front holds the certificate and clients verify the "
        "proxy's certificate against their own trust store (an assistant whose provider makes "
        "the connection needs a publicly trusted one there); rypsok itself speaks plain HTTP "
        "to the proxy"
    ),
    "loopback_plain": (
        "no certificate: plain HTTP on loopback, reachable from this host only, so nobody "
        "verifies a certificate and an assistant whose provider makes the connection cannot "
        "reach it"
    ),
}


@dataclass(frozen=True, slots=True)
class HttpPlan:
    """Everything the HTTP adapter needs, checked. Secrets stay in `Secret` (redacting repr)."""

    host: str
    port: int
    path: str
    mode: Mode
    tls_cert_file: str | None
    tls_key_file: str | None
    allowed_hosts: tuple[str, ...]
    allowed_origins: tuple[str, ...]
    keys: tuple[tuple[str, Secret], ...]  # (caller name, key)
    scopes: tuple[tuple[str, tuple[str, ...]], ...]  # (caller name, what its key admits)
    request_ms: int
    sessions: int
    handshake_revisions: bool
    certificate_words: str  # who can verify the certificate, from the certificate itself
    warnings: tuple[str, ...]  # logged at start and printed by check
    oauth: OAuthPlan | None
    metrics_path: str
    sessions_per_caller: int  # LIM-H10
    session_idle_s: int  # LIM-H11
    stream_ms: int  # LIM-H7
    head_ms: int  # LIM-H8, never longer than LIM-H5
    pending_connections: int  # LIM-H9

    @property
    def url(self) -> str:
        scheme = "https" if self.mode == "tls" else "http"
        return f"{scheme}://{_host_in_url(self.host)}:{self.port}{self.path}"


def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback addresses; any other name counts as reachable."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _is_wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False


def _host_in_url(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def mode_of(http: HttpConfig) -> Mode:
    """TLS here when both files are configured, else a proxy when declared, else plain loopback."""
    if http.tls_cert is not None and http.tls_key is not None:
        return "tls"
    if http.behind_tls_proxy:
        return "behind_tls_proxy"
    return "loopback_plain"


def certificate_statement(mode: Mode) -> str:
    """Who can check the certificate in this mode: the start-up log and `check` say it."""
    return _CERTIFICATE_WORDS[mode]


def default_allowed_hosts(host: str, port: int, tls: bool) -> tuple[str, ...]:
    """Host values a client of this bind sends; none for a wildcard bind (names are unknown)."""
    if _is_wildcard(host):
        return ()
    names = ["127.0.0.1", "localhost", "[::1]"] if is_loopback(host) else [_host_in_url(host)]
    default_port = 443 if tls else 80
    # A client omits the port from Host when it is the scheme's default.
    bare = names if port == default_port else []
    return tuple([f"{name}:{port}" for name in names] + bare)


def default_allowed_origins(hosts: tuple[str, ...], tls: bool) -> tuple[str, ...]:
    """rypsok's own origins only: it serves no page, so no other page may drive it."""
    scheme = "https" if tls else "http"
    return tuple(f"{scheme}://{host}" for host in hosts)


def _tls_problems(http: HttpConfig) -> list[str]:
    problems = []
    refs = {"http.tls_cert": http.tls_cert, "http.tls_key": http.tls_key}
    given = [name for name, ref in refs.items() if ref is not None]
    if len(given) == 1:
        missing = "http.tls_key" if given == ["http.tls_cert"] else "http.tls_cert"
        problems.append(f"{given[0]} is set but {missing} is not: TLS needs both files")
    for name, ref in refs.items():
        if ref is None:
            continue
        if ref.file is None:
            problems.append(f'{name}: TLS material is read from a file; give {{ file = "path" }}')
        elif not pathlib.Path(ref.file).is_file():
            problems.append(f"{name}: the file it names cannot be read")
    if not problems and http.tls_cert is not None and http.tls_cert.file is not None:
        problems += list(_certificate_facts(http, http.tls_cert.file).problems)
    return problems


def recheck_certificate(plan: HttpPlan) -> list[str]:
    """The certificate's problems now, for a reload: the same rules as at start."""
    if plan.tls_cert_file is None:
        return []
    configured = plan.allowed_hosts != default_allowed_hosts(plan.host, plan.port, True)
    facts = certificate.inspect(plan.tls_cert_file, plan.allowed_hosts, configured)
    return list(facts.problems)


def _served_hosts(http: HttpConfig) -> tuple[str, ...]:
    tls = mode_of(http) == "tls"
    return http.allowed_hosts or default_allowed_hosts(http.host, http.port, tls)


def _certificate_facts(http: HttpConfig, cert_file: str) -> CertificateFacts:
    return certificate.inspect(cert_file, _served_hosts(http), bool(http.allowed_hosts))


def _plan_words(http: HttpConfig, mode: Mode) -> tuple[str, tuple[str, ...]]:
    """Who can verify the certificate, and the warnings `check` and the start-up log give."""
    warnings: list[str] = []
    words = certificate_statement(mode)
    if mode == "tls" and http.tls_cert is not None and http.tls_cert.file is not None:
        facts = _certificate_facts(http, http.tls_cert.file)
        words = facts.statement
        warnings += facts.warnings
    if mode == "behind_tls_proxy" and not is_loopback(http.host):
        warnings.append(
            f"http.behind_tls_proxy: plain HTTP is served on {http.host}, which is not a "
            "loopback address; anything on that network reaches rypsok unencrypted"
        )
    return words, tuple(warnings)


def _key_problems(http: HttpConfig) -> list[str]:
    if http.oauth is not None:
        oauth = oauth_problems(http.oauth)
        if not http.keys:
            return oauth
    else:
        oauth = []
    if not http.keys:
        return [
            "http.keys: the http transport needs at least one [[http.keys]] entry "
            "(caller and key) or an [http.oauth] table, on every bind, loopback included"
        ]
    problems = []
    seen_callers: set[str] = set()
    seen_keys: list[Secret] = []
    for index, entry in enumerate(http.keys):
        where = f"http.keys[{index}]"
        if not _CALLER.fullmatch(entry.caller):
            problems.append(
                f"{where}.caller: use 1-64 letters, digits, '.', '_' or '-', starting with "
                "a letter or digit"
            )
        elif entry.caller in seen_callers:
            problems.append(f"{where}.caller: the caller name '{entry.caller}' is used twice")
        seen_callers.add(entry.caller)
        if not entry.scopes:
            problems.append(
                f"{where}.scopes (caller '{entry.caller}'): a key without a scope admits "
                "nothing; name at least one of search, fetch, status, metrics"
            )
        problems += _one_key_problems(where, entry.caller, entry.key, seen_keys)
    return oauth + problems


def _one_key_problems(where: str, caller: str, ref: SecretRef, seen: list[Secret]) -> list[str]:
    secret = ref.resolve()
    if secret is None:
        return [f"{where}.key (caller '{caller}'): the referenced secret is unset or empty"]
    value = secret.reveal()
    if not MIN_KEY_CHARS <= len(value) <= MAX_KEY_CHARS:
        return [
            f"{where}.key (caller '{caller}'): a key must be {MIN_KEY_CHARS} to "
            f"{MAX_KEY_CHARS} characters long"
        ]
    if not (value.isascii() and value.isprintable()) or any(ch.isspace() for ch in value):
        return [f"{where}.key (caller '{caller}'): a key must be printable ASCII without spaces"]
    if secret in seen:
        return [f"{where}.key (caller '{caller}'): the same key is given to another caller"]
    seen.append(secret)
    return []


def _listener_problems(http: HttpConfig) -> list[str]:
    problems = []
    if not _PATH.fullmatch(http.path) or "//" in http.path:
        problems.append("http.path: must start with '/' and use only letters, digits and . _ ~ / -")
    if not _PATH.fullmatch(http.metrics_path) or "//" in http.metrics_path:
        problems.append(
            "http.metrics_path: must start with '/' and use only letters, digits and . _ ~ / -"
        )
    elif http.metrics_path == http.path:
        problems.append("http.metrics_path: must differ from http.path")
    loopback = is_loopback(http.host)
    if not loopback and mode_of(http) == "loopback_plain":
        problems.append(
            f"http.host = '{http.host}' is not a loopback address: serve TLS "
            "(http.tls_cert and http.tls_key) or declare a TLS-terminating proxy in front "
            "(http.behind_tls_proxy = true)"
        )
    if _is_wildcard(http.host) and not http.allowed_hosts:
        problems.append(
            f"http.allowed_hosts: http.host = '{http.host}' is a wildcard address; list the "
            "Host values clients use (name:port)"
        )
    for entry in http.allowed_hosts:
        if not _HOST_ENTRY.fullmatch(entry):
            problems.append("http.allowed_hosts: each entry is host, host:port or host:*")
            break
    for entry in http.allowed_origins:
        if not _ORIGIN_ENTRY.fullmatch(entry):
            problems.append(
                "http.allowed_origins: each entry is scheme://host, scheme://host:port or "
                "scheme://host:* with scheme http or https"
            )
            break
    return problems


def tls_server_context(cert_file: str, key_file: str) -> ssl.SSLContext:
    """The listener's TLS context; ConfigError when the files cannot be loaded or do not match.

    `check` builds it too, so a certificate that `serve` would fail to load
    (unreadable, not PEM, or a key of another certificate) is found before serving.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert_file, key_file)
    except (ssl.SSLError, OSError, ValueError):
        raise ConfigError(
            "http.tls_cert, http.tls_key: the certificate and key cannot be loaded as a "
            "matching PEM pair (an unencrypted key that belongs to the certificate)"
        ) from None
    # HTTP/1.1 only: HTTP/2 is not served, so no client may negotiate it (LIM-H4).
    context.set_alpn_protocols(["http/1.1"])
    return context


def share_of_sessions(http: HttpConfig) -> int:
    """LIM-H10's default: a quarter of LIM-H6, at least two sessions per caller."""
    return max(limits.HTTP_SESSIONS_PER_CALLER_MIN, http.sessions // 4)


def _unique(words: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(words))


def check_http(config: Config) -> list[str]:
    """Every reason the HTTP mode cannot start with this configuration; empty when it can."""
    http = config.http
    return _key_problems(http) + _tls_problems(http) + _listener_problems(http)


def http_configured(config: Config) -> bool:
    """Whether the file says anything about the HTTP mode (`check` is quiet otherwise)."""
    return config.http != HttpConfig()


def plan_http(config: Config) -> HttpPlan:
    """The checked plan of the listener; ConfigError naming the keys when it cannot start."""
    problems = check_http(config)
    if problems:
        raise ConfigError("; ".join(problems))
    http = config.http
    mode = mode_of(http)
    tls = mode == "tls"
    hosts = _served_hosts(http)
    words, warnings = _plan_words(http, mode)
    # Clients of a proxy that terminates TLS see rypsok's names under https.
    origins = http.allowed_origins or default_allowed_origins(hosts, mode != "loopback_plain")
    keys = []
    for entry in http.keys:
        secret = entry.key.resolve()
        if secret is None:  # the file or variable went away since check_http read it
            raise ConfigError(f"http.keys: the key of caller '{entry.caller}' is unset or empty")
        keys.append((entry.caller, secret))
    return HttpPlan(
        host=http.host,
        port=http.port,
        path=http.path,
        mode=mode,
        tls_cert_file=http.tls_cert.file if tls and http.tls_cert else None,
        tls_key_file=http.tls_key.file if tls and http.tls_key else None,
        allowed_hosts=tuple(hosts),
        allowed_origins=tuple(origins),
        keys=tuple(keys),
        scopes=tuple((entry.caller, _unique(entry.scopes)) for entry in http.keys),
        request_ms=http.request_ms,
        sessions=http.sessions,
        handshake_revisions=http.handshake_revisions,
        certificate_words=words,
        warnings=warnings,
        oauth=OAuthPlan.of(http.oauth) if http.oauth is not None else None,
        metrics_path=http.metrics_path,
        sessions_per_caller=min(http.sessions, http.sessions_per_caller or share_of_sessions(http)),
        session_idle_s=http.session_idle_s,
        stream_ms=http.stream_ms,
        head_ms=min(http.head_ms, http.request_ms),
        pending_connections=http.pending_connections,
    )
