"""Live checks: ask each enabled engine one query and see its format still parses (REQ-TEST-003).

    python tools/live.py [--config PATH] [--query TEXT]

Never part of `make test` and never on a timer: run by hand (`make live`) and
by the release checks. Each enabled, active engine gets exactly one request,
through the production egress client that `rypsok serve` builds (the same
User-Agent, egress rules, proxy, body bound and timeouts), so a run stays
within every provider's terms: one request is below every recorded rate, and
the engines are asked concurrently because each has its own provider.

One line per engine:
  ok (N hits)                 the driver parsed a non-empty answer with the fields it promises
  drifted (FIELD)             the answer no longer parses, a promised field is empty, or
                              a 4xx other than auth and throttling (the interface moved)
  refused (CLASS)             auth_failure, rate_limited or blocked, or the egress policy
  unreachable (CLASS)         no answer: DNS, connection, timeout, or a 5xx server error
Engines that are disabled or lack their key are listed as skipped.

Exit status: 0 every engine ok; 1 some engine drifted; 2 some refused (none
drifted); 3 some unreachable (none drifted or refused) — so a machine without
internet, where every engine is unreachable, exits 3; 4 no engine to check.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

import anyio

from rypsok.core.egress.errors import EgressDenied
from rypsok.core.engines.base import (
    Driver,
    EngineFailure,
    FailureClass,
    FollowUp,
    RawHit,
    SearchParams,
)
from rypsok.core.engines.registry import configured_engines
from rypsok.core.engines.transport import EngineEgress
from rypsok.core.search.urls import UrlRejection, normalize_result_url
from rypsok.core.services import Services, load_configuration

DEFAULT_QUERY = "python"  # ordinary, in every index, no personal data
EXIT_BY_VERDICT = {"drifted": 1, "refused": 2, "unreachable": 3}
_REFUSALS = (FailureClass.AUTH_FAILURE, FailureClass.RATE_LIMITED, FailureClass.BLOCKED)


@dataclass(frozen=True, slots=True)
class Verdict:
    engine: str
    verdict: str  # ok, drifted, refused, unreachable, skipped
    detail: str

    def line(self) -> str:
        return f"live: {self.engine}: {self.verdict} ({self.detail})"


def _drifted_field(hits: list[RawHit]) -> str | None:
    """The first promised field a hit lacks: every hit has a usable URL and a title."""
    if not hits:
        return "no results"
    for hit in hits:
        if isinstance(normalize_result_url(hit.url), UrlRejection):
            return "url"
        if not hit.title.strip():
            return "title"
    return None


def _failure_verdict(engine: str, failure: EngineFailure, status: int | None) -> Verdict:
    """`status` is None when no answer came (the request itself failed)."""
    if isinstance(failure.__cause__, EgressDenied):
        return Verdict(engine, "refused", f"egress policy: {failure.__cause__.reason}")
    if failure.failure_class in _REFUSALS:
        return Verdict(engine, "refused", failure.failure_class.value)
    if status is None or status >= 500 or failure.failure_class is FailureClass.TIMEOUT:
        return Verdict(engine, "unreachable", failure.failure_class.value)
    if failure.failure_class is FailureClass.PARSE_FAILURE:
        return Verdict(engine, "drifted", "parse_failure: the answer no longer fits the driver")
    # A 4xx that is neither auth nor a throttle: the provider changed its interface.
    return Verdict(engine, "drifted", f"status {status}")


async def check_engine(services: Services, driver: Driver, query: str) -> Verdict:
    """One request to one engine, judged."""
    category = sorted(driver.categories)[0]
    params = SearchParams(query=query, category=category, contact=services.config.operator.contact)
    search = services.config.search
    try:
        response = await EngineEgress(services.egress).engine_get(
            driver.build_request(params),
            explicit_endpoint=driver.settings.endpoint is not None,
            max_body_bytes=driver.admission.max_body_bytes,
            connect_timeout_ms=search.connect_timeout_ms,
            total_timeout_ms=search.engine_timeout_ms,
        )
    except EngineFailure as failure:
        return _failure_verdict(driver.id, failure, None)
    try:
        hits = driver.parse(response)
    except EngineFailure as failure:
        return _failure_verdict(driver.id, failure, response.status)
    if isinstance(hits, FollowUp):
        # A two-step engine (PubMed): its first answer parsed and named the second
        # request, which is not sent: one request per engine per run.
        return Verdict(driver.id, "ok", "first of two requests answered")
    missing = _drifted_field(list(hits))
    if missing is not None:
        return Verdict(driver.id, "drifted", missing)
    return Verdict(driver.id, "ok", f"{len(hits)} hits")


async def run(config_path: str | None, query: str) -> list[Verdict]:
    services = Services(load_configuration(config_path))
    # Every registered engine, the disabled and keyless ones too (they are reported
    # skipped); the services hold drivers for the engines that can run only.
    engines = configured_engines(services.config)
    verdicts: list[Verdict] = []
    try:
        async with anyio.create_task_group() as group:
            for driver, enabled in engines:
                if not enabled or not driver.active:
                    why = "disabled" if not enabled else "no key or endpoint configured"
                    verdicts.append(Verdict(driver.id, "skipped", why))
                    continue

                async def one(driver: Driver = driver) -> None:
                    verdicts.append(await check_engine(services, driver, query))

                group.start_soon(one)
    finally:
        await services.aclose()
    order = [driver.id for driver, _ in engines]
    return sorted(verdicts, key=lambda v: order.index(v.engine))


def exit_status(verdicts: list[Verdict]) -> int:
    checked = {v.verdict for v in verdicts if v.verdict != "skipped"}
    if not checked:
        return 4
    for verdict, status in EXIT_BY_VERDICT.items():
        if verdict in checked:
            return status
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", help="configuration file (default: $RYPSOK_CONFIG)")
    parser.add_argument("--query", default=DEFAULT_QUERY)
    args = parser.parse_args(argv)
    verdicts = anyio.run(run, args.config, args.query)
    for verdict in verdicts:
        sys.stdout.write(verdict.line() + "\n")
    status = exit_status(verdicts)
    counts = {name: sum(v.verdict == name for v in verdicts) for name in ("ok", *EXIT_BY_VERDICT)}
    summary = ", ".join(f"{count} {name}" for name, count in counts.items())
    sys.stdout.write(f"live: {summary}; exit {status}\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
