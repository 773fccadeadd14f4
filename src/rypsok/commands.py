"""What the commands of `rypsok.cli` do: check, serve over stdio or HTTP.

`check` builds everything `serve` builds before it listens (the services with
their egress client, proxy and engines; with an `[http]` table the HTTP plan
and the TLS context), so a configuration `check` accepts starts, and one
`serve` refuses is refused by `check` with the same message. It reports to
standard output for a person. A configuration problem ends either command
with exit 1 and one `configuration_refused` line, never a traceback.
"""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING

from rypsok import __version__
from rypsok.core import logs
from rypsok.core.config import Config, ConfigError, cache_secret_problems
from rypsok.core.event_loop import backend_options, chosen_loop, running_loop
from rypsok.core.secret_files import judge_secret_files
from rypsok.core.services import engine_categories, engine_states, load_configuration

if TYPE_CHECKING:
    from rypsok.mcp.http.plan import HttpPlan

EXIT_OK = 0
EXIT_CONFIG = 1

log = logging.getLogger("rypsok.cli")


def run(command: str, *, config_path: str | None, transport: str) -> int:
    """Run a parsed command: `check`, or `serve` over `transport`; the exit code."""
    logs.configure()
    try:
        config = load_configuration(config_path)
        loop = chosen_loop(config.runtime.event_loop)  # before anything is built, as in `check`
    except ConfigError as exc:
        logs.event(log, "configuration_refused", logging.ERROR, problem=str(exc))
        return EXIT_CONFIG
    # Hook (issue 12): the Redis URL and HMAC key must resolve.
    secret_problems = cache_secret_problems(config, serving=command == "serve")
    # Secret files others may read or replace (rypsok.core.secret_files, POSIX only).
    files = judge_secret_files(config)
    secret_problems += files.refusals
    for warning in files.warnings:
        logs.event(log, "secret_file_readable", logging.WARNING, problem=warning)
    if secret_problems:
        logs.event(log, "configuration_refused", logging.ERROR, problem="; ".join(secret_problems))
        return EXIT_CONFIG
    if command == "check":
        return _check(config, loop)
    if transport == "http":
        return _serve_http(config, loop)
    return _serve_stdio(config, loop)


def _check(config: Config, loop: str) -> int:
    """Build what `serve` builds before it listens; any refusal is exit 1 naming the key."""
    from rypsok.mcp.http.plan import http_configured  # noqa: PLC0415 (see _http_plan)

    try:
        _build_and_close(config, loop)
        plan = _http_plan(config) if http_configured(config) else None
    except ConfigError as exc:
        logs.event(log, "configuration_refused", logging.ERROR, problem=str(exc))
        return EXIT_CONFIG
    lines = ["configuration OK"]
    categories = engine_categories(config)
    lines += [
        f"  engine {engine_id}: {state} ({', '.join(categories[engine_id])})"
        for engine_id, state in engine_states(config)
    ]
    if plan is not None:
        lines.append(f"  http: {plan.url} ({plan.mode}, {len(plan.keys)} caller(s))")
        lines += [f"  caller {caller}: {', '.join(scopes)}" for caller, scopes in plan.scopes]
        if plan.oauth is not None:
            lines.append(
                f"  oauth: tokens of {plan.oauth.issuer} for {plan.oauth.audience} "
                f"(metadata at {plan.oauth.metadata_url})"
            )
        lines.append(f"  certificate: {plan.certificate_words}")
        lines += [f"  warning: {warning}" for warning in plan.warnings]
    else:
        lines.append("  http: not configured ('serve --transport http' needs [[http.keys]])")
    sys.stdout.write("\n".join(lines) + "\n")
    return EXIT_OK


def _build_and_close(config: Config, loop: str) -> None:
    """The services exactly as `serve` builds them (egress, proxy, engines, pipelines)."""
    import anyio  # noqa: PLC0415

    from rypsok.core.services import Services  # noqa: PLC0415

    async def build() -> None:
        await Services(config).aclose()

    anyio.run(build, backend_options=backend_options(loop))


def _http_plan(config: Config) -> HttpPlan:
    """The HTTP plan with its TLS context loaded, as the listener will load it."""
    # Imported here: it loads `cryptography`, which stdio serving never needs.
    from rypsok.mcp.http.plan import plan_http, tls_server_context  # noqa: PLC0415

    plan = plan_http(config)
    if plan.tls_cert_file is not None and plan.tls_key_file is not None:
        tls_server_context(plan.tls_cert_file, plan.tls_key_file)
    return plan


def _log_engines(config: Config) -> None:
    for engine_id, state in engine_states(config):
        logs.event(log, "engine", engine=engine_id, state=state)


def _log_running_loop() -> None:
    """Which loop serves, from inside it: the class that runs, whatever was asked."""
    logs.event(log, "event_loop", loop=running_loop())


def _serve_stdio(config: Config, loop: str) -> int:
    # The protocol stack is imported only when serving: check and usage stay light.
    import anyio  # noqa: PLC0415

    from rypsok.core.services import Services  # noqa: PLC0415
    from rypsok.mcp.stdio import serve_stdio  # noqa: PLC0415

    try:
        services = Services(config)
    except ConfigError as exc:
        logs.event(log, "configuration_refused", logging.ERROR, problem=str(exc))
        return EXIT_CONFIG
    _log_engines(config)
    logs.event(log, "serving", transport="stdio", version=__version__)

    async def serve() -> None:
        _log_running_loop()
        await serve_stdio(services)

    anyio.run(serve, backend_options=backend_options(loop))
    return EXIT_OK


def _serve_http(config: Config, loop: str) -> int:
    try:
        plan = _http_plan(config)
    except ConfigError as exc:
        logs.event(log, "configuration_refused", logging.ERROR, problem=str(exc))
        return EXIT_CONFIG

    import anyio  # noqa: PLC0415

    from rypsok.core.services import Services  # noqa: PLC0415
    from rypsok.mcp.http.serve import serve_http  # noqa: PLC0415

    _log_engines(config)

    async def serve(services: Services) -> None:
        _log_running_loop()
        await serve_http(services, plan)

    try:
        anyio.run(serve, Services(config), backend_options=backend_options(loop))
    except ConfigError as exc:  # TLS material or the address, found only when serving
        logs.event(log, "configuration_refused", logging.ERROR, problem=str(exc))
        return EXIT_CONFIG
    return EXIT_OK
