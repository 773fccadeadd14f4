"""Mutation testing of the security modules against a committed exclusion list (REQ-TEST-019).

    python -m mutation.run [--module NAME ...] [--max-children N]
    python -m mutation.run --check RESULTS     # judge a saved `mutmut results --all` output

For each module of MODULES, mutmut mutates it in a scratch copy of the tree
(this tree's pyproject.toml is never touched) and runs the tests that guard
it. Every mutant that survives (or that no test reaches) must be listed in
mutation/exclusions.txt as `mutant-name  # reason`; the run fails on any
other survivor, and prints the score per module: killed / (mutants - excluded).
"""

from __future__ import annotations

import argparse
import dataclasses
import fnmatch
import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXCLUSIONS = ROOT / "mutation" / "exclusions.txt"
RESULTS = ROOT / "mutation" / "results"


@dataclasses.dataclass(frozen=True)
class Module:
    source: str  # path of the module under src/
    tests: tuple[str, ...]  # the tests that guard it
    only: tuple[str, ...] = ()  # mutant-name globs, when only some functions are controls
    deselect: tuple[str, ...] = ()  # test ids that measure time, not behaviour (see below)
    # The module runs code at import (a table of rules built by factory functions): each
    # mutant needs a fresh import, or its mutation of that code is never active.
    fresh_imports: bool = False


MODULES: dict[str, Module] = {
    "egress.ranges": Module(
        "src/rypsok/core/egress/ranges.py",
        (
            "tests/core/egress/test_ranges.py",
            "tests/core/egress/test_ranges_mutants.py",
            "tests/core/egress/test_policy.py",
        ),
    ),
    "egress.policy": Module(
        "src/rypsok/core/egress/policy.py",
        (
            "tests/core/egress/test_policy.py",
            "tests/core/egress/test_policy_properties.py",
            "tests/core/egress/test_policy_mutants.py",
        ),
    ),
    "privacy.values": Module(
        "src/rypsok/core/privacy/values.py",
        ("tests/core/test_privacy.py", "tests/core/test_privacy_values.py"),
    ),
    "privacy.extractors": Module(
        "src/rypsok/core/privacy/extractors.py",
        ("tests/core/test_privacy.py", "tests/core/test_privacy_extractors.py"),
        fresh_imports=True,
    ),
    # Its one function builds the table at import; a case calls it at test time too.
    "privacy.rules": Module(
        "src/rypsok/core/privacy/rules.py",
        (
            "tests/core/test_privacy.py",
            "tests/core/test_privacy_extractors.py",
            "tests/assurance/test_mutants_privacy_rules.py",
        ),
        fresh_imports=True,
    ),
    "privacy.scan": Module(
        "src/rypsok/core/privacy/scan.py",
        ("tests/core/test_privacy.py", "tests/core/test_privacy_scan.py"),
    ),
    "boundary.text": Module(
        "src/rypsok/core/boundary/text.py",
        ("tests/core/boundary",),
        deselect=(
            "tests/core/boundary/test_text.py::test_hostile_64_kib_input_is_cleaned_in_linear_time",
        ),
    ),
    # Its table of removed code points is built at import (_always_removed_code_points).
    # The timed cleaner test is left out as for boundary.text: with the machine loaded,
    # mutmut's stats run failed here (its log names no test), and it is the one test of
    # the selection that measures time; when the stats run fails, no mutant is checked.
    "boundary.invisible": Module(
        "src/rypsok/core/boundary/invisible.py",
        ("tests/core/boundary", "tests/assurance/test_mutants_invisible.py"),
        deselect=(
            "tests/core/boundary/test_text.py::test_hostile_64_kib_input_is_cleaned_in_linear_time",
        ),
        fresh_imports=True,
    ),
    # Its literal index is built at import (_literal_index of _PATTERNS): without a fresh
    # import per mutant, the mutants of the index's functions were never active.
    "boundary.instructions": Module(
        "src/rypsok/core/boundary/instructions.py", ("tests/core/boundary",), fresh_imports=True
    ),
    "fetch.robots": Module(
        "src/rypsok/core/fetch/robots.py",
        ("tests/core/fetch/test_robots.py", "tests/core/fetch/test_robots_mutants.py"),
    ),
    # Of the HTTP mode's start-up plan, the check of its keys (issue 15 item 3: "the HTTP
    # keys ... checks"); its other rules (bind, Host and Origin lists, TLS) are REQ-SEC-018's
    # listener protections, tested by running servers (tests/mcp/test_http.py).
    "http.plan": Module(
        "src/rypsok/mcp/http/plan.py",
        ("tests/assurance/test_mutants_http_plan_keys.py",),
        only=("*_key_problems*",),
    ),
    # The whole key gate, with the tests that drive it in one process: mutmut cannot map
    # the tests that run a server (tests/mcp/test_http.py) to functions (docs/assurance.md).
    "mcp.http.keys": Module("src/rypsok/mcp/http/auth.py", ("tests/mcp/test_http_keys.py",)),
    # The start-up check of [http.oauth] and its scope map (issue 15 item 3: "OAuth checks").
    "http.oauth_plan": Module(
        "src/rypsok/mcp/http/oauth_plan.py",
        ("tests/assurance/test_mutants_oauth_plan.py",),
        only=("*oauth_problems*", "*OAuthPlanǁof*"),
    ),
    "mcp.http.oauth": Module(
        "src/rypsok/mcp/http/oauth.py",
        ("tests/mcp/test_http_oauth.py", "tests/mcp/test_http_oauth_verifier.py"),
    ),
    "fetch.returned": Module(
        "src/rypsok/core/fetch/returned.py",
        (
            "tests/core/fetch/test_strict_mode_mutants.py",
            "tests/assurance/test_mutants_returned.py",
        ),
    ),
    "fetch.strict_mode": Module(
        "src/rypsok/core/fetch/pipeline.py",
        ("tests/core/fetch/test_pipeline.py", "tests/core/fetch/test_strict_mode_mutants.py"),
        only=("*remember_returned*", "*_check_strict*"),
    ),
}

_RESULT_LINE = re.compile(r"^\s*(\S+): (.+)$")
# What mutmut prints when it stops before checking a mutant, and what that step was.
_STOPS: tuple[tuple[str, str], ...] = (
    (
        "failed to collect stats. runner returned",
        "its stats run (the tests under trampolines) failed",
    ),
    (
        "Stopping early, because we could not find any test case",
        "no selected test reaches the code",
    ),
    ("failed to collect stats, no active tests found", "its stats run collected no test"),
    ("Failed to run clean test", "its clean run of the tests (no mutant active) failed"),
    (
        "Failed to run pytest with args",
        "pytest refused the arguments (a test id that does not exist?)",
    ),
)
# pytest's short summary (-q keeps it) names the test that failed, or errored in set-up.
_FAILED_TEST = re.compile(r"^(?:FAILED|ERROR) (\S+)(?: - (.*))?$", re.MULTILINE)
# pytest-timeout's thread method ends the process after printing the stacks of the test.
_TIMEOUT_BANNER = "+++++ Timeout +++++"
_KILLED = frozenset({"killed", "timeout"})  # a mutant that hangs the tests is caught too
_NOT_CHECKED = "not checked"


def load_exclusions(path: pathlib.Path = EXCLUSIONS) -> tuple[dict[str, str], list[str]]:
    """Mutant name -> reason, and the lines that lack a reason."""
    excluded: dict[str, str] = {}
    problems: list[str] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, _, reason = line.partition("#")
        if not reason.strip():
            problems.append(f"{path.name}:{number}: '{name.strip()}' has no reason")
        excluded[name.strip()] = reason.strip()
    return excluded, problems


def parse_results(text: str) -> dict[str, str]:
    """`mutmut results --all=true` output: mutant name -> status."""
    found = (_RESULT_LINE.match(line) for line in text.splitlines())
    return {m.group(1): m.group(2).strip() for m in found if m}


@dataclasses.dataclass(frozen=True)
class Verdict:
    total: int
    killed: int
    excluded: int
    unlisted: tuple[str, ...]  # survivors not in the exclusion list: the failures

    @property
    def score(self) -> float:
        judged = self.total - self.excluded
        return 100.0 if judged == 0 else 100.0 * self.killed / judged


def judge(statuses: dict[str, str], excluded: dict[str, str]) -> Verdict:
    survivors = [name for name, status in statuses.items() if status not in _KILLED]
    unlisted = tuple(sorted(name for name in survivors if name not in excluded))
    killed = sum(status in _KILLED for status in statuses.values())
    listed = sum(name in excluded for name in survivors)
    return Verdict(len(statuses), killed, listed, unlisted)


def stop_cause(log: str, returncode: int | None) -> str:
    """Why mutmut checked no mutant, from its output: the step that stopped it and the test.

    A mutmut run that stops early leaves every mutant "not checked"; without this
    the report could only say that, and the failing test was buried in the log.
    """
    step = next((what for marker, what in _STOPS if marker in log), None)
    failures = [
        f"{test} ({reason.strip()})" if reason else test
        for test, reason in _FAILED_TEST.findall(log)
    ]
    if _TIMEOUT_BANNER in log and not failures:
        failures = ["a test hit pytest-timeout's bound, which ended the process"]
    if step is None:
        if returncode is not None and returncode < 0:
            step = f"mutmut was ended by signal {-returncode}"
        elif returncode:
            lines = [line for line in log.splitlines() if line.strip()]
            step = f"mutmut exited with status {returncode}" + (
                f", its last line: {lines[-1].strip()[:200]}" if lines else ""
            )
        else:
            step = "mutmut mapped no test to them"
    return step + (f"; failing: {', '.join(failures[:3])}" if failures else "")


def _module_of(mutant: str) -> str:
    return mutant.rsplit(".", 1)[0]  # mutant names hold no dot after the module's path


def stale_exclusions(
    statuses: dict[str, str], excluded: dict[str, str], only: tuple[str, ...] = ()
) -> list[str]:
    """Listed mutants of the modules run that this run did not make (within `only`).

    mutmut numbers a function's mutants in order, so a changed function renumbers
    them: a listing whose mutant is gone is dropped before its number is reused.
    """
    modules = {_module_of(name) for name in statuses}
    return sorted(
        name
        for name in excluded
        if _module_of(name) in modules
        and name not in statuses
        and (not only or any(fnmatch.fnmatch(name, glob) for glob in only))
    )


def _report(
    label: str,
    statuses: dict[str, str],
    excluded: dict[str, str],
    cause: str,
    only: tuple[str, ...] = (),
) -> bool:
    unrun = sorted(name for name, status in statuses.items() if status == _NOT_CHECKED)
    if unrun:
        # Not a survivor and not a kill: mutmut stopped early, or no test reaches these.
        sys.stdout.write(
            f"mutation: {label}: NOT RUN: {len(unrun)} of {len(statuses)} mutants not checked: "
            f"{cause} (log in mutation/results/{label}.log)\n"
        )
        return False
    verdict = judge(statuses, excluded)
    for name in verdict.unlisted:
        sys.stdout.write(f"mutation: {label}: SURVIVED {name} ({statuses[name]}), not excluded\n")
    # A listed mutant that a test now kills: its reason ("equivalent") no longer holds.
    for name in sorted(n for n, s in statuses.items() if n in excluded and s in _KILLED):
        sys.stdout.write(f"mutation: {label}: KILLED {name}, but listed: drop its exclusion\n")
    # A listed mutant of this module that the run did not make: the code changed under it.
    for name in stale_exclusions(statuses, excluded, only):
        sys.stdout.write(f"mutation: {label}: LISTED {name}, but no such mutant: drop it\n")
    sys.stdout.write(
        f"mutation: {label}: {verdict.killed} killed of {verdict.total}, "
        f"{verdict.excluded} excluded, score {verdict.score:.1f}%"
        f"{'' if not verdict.unlisted else f', {len(verdict.unlisted)} unlisted survivors'}\n"
    )
    return not verdict.unlisted and verdict.total > 0


def _pytest_arguments(module: Module) -> list[str]:
    """What every pytest run of mutmut gets, on top of the tests it selects.

    mutmut first runs the selected tests under its trampolines to map tests to
    functions, and one failing test makes it map none ("not checked"). Under the
    trampolines every call costs several times more, so the tests that bound the
    work of a parser by a wall-clock timeout (`@pytest.mark.timeout`, a few
    timed ones by id) fail for time alone: they are left out here. They measure
    speed, not behaviour; a mutant that makes a function hang is still caught,
    by mutmut's own per-mutant timeout (counted as killed).
    """
    arguments = ["-p", "no:cacheprovider", "-q", "-m", "not timeout"]
    # The gate's 60 s bound per test (pytest-timeout) is for plain runs; under the
    # trampolines on a loaded machine a slow test could pass it and fail the stats run.
    arguments += ["-o", "timeout=600"]
    # mutmut's trampolines leave an un-awaited coroutine in async tests' teardown;
    # the gate's filterwarnings=error would make that end the whole run.
    arguments += ["-W", "ignore::pytest.PytestUnraisableExceptionWarning"]
    for test in module.deselect:
        arguments += ["--deselect", test]
    return arguments


def _scratch_tree(module: Module, into: pathlib.Path) -> None:
    # docs: tests check the documentation against the code (the credential kinds, say).
    for part in ("src", "tests", "fuzz", "docs"):
        shutil.copytree(ROOT / part, into / part, ignore=shutil.ignore_patterns("__pycache__"))
    config = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    tests = ", ".join(f'"{t}"' for t in module.tests)
    config += (
        "\n[tool.mutmut]\n"
        'source_paths = ["src"]\n'
        f'only_mutate = ["{module.source}"]\n'
        # mutmut runs the tests in its own copy; what they read beside the code goes too.
        'also_copy = ["fuzz", "docs"]\n'
        f"pytest_add_cli_args_test_selection = [{tests}]\n"
        f"pytest_add_cli_args = {json.dumps(_pytest_arguments(module))}\n"
    )
    if module.fresh_imports:
        # By default each mutant's worker is forked from a process that imported the code
        # already; a fork server that preloads nothing imports it again under the mutant.
        config += 'process_isolation = "forkserver"\nforkserver_warmup = "none"\n'
    (into / "pyproject.toml").write_text(config, encoding="utf-8")


def run_module(label: str, module: Module, max_children: int) -> tuple[dict[str, str], str]:
    """Each mutant's status, and why mutmut stopped if it checked none (`stop_cause`)."""
    with tempfile.TemporaryDirectory(prefix=f"rypsok-mutation-{label}-") as scratch:
        tree = pathlib.Path(scratch)
        _scratch_tree(module, tree)
        mutmut = [sys.executable, "-m", "mutmut"]
        # mutmut takes mutant-name globs: only the control functions are mutated.
        command = [*mutmut, "run", f"--max-children={max_children}", *module.only]
        run = subprocess.run(command, cwd=tree, capture_output=True, text=True, check=False)  # noqa: S603
        listing = subprocess.run(  # noqa: S603
            [*mutmut, "results", "--all=true"],
            cwd=tree,
            capture_output=True,
            text=True,
            check=False,
        )
        statuses = parse_results(listing.stdout)
        if module.only:  # the other functions were not mutated ("not checked")
            statuses = {
                name: status
                for name, status in statuses.items()
                if any(fnmatch.fnmatch(name, glob) for glob in module.only)
            }
        # The diff of each survivor, so a reviewer can judge it without rerunning.
        diffs = [
            subprocess.run(  # noqa: S603
                [*mutmut, "show", name], cwd=tree, capture_output=True, text=True, check=False
            ).stdout
            for name, status in statuses.items()
            if status not in _KILLED and status != _NOT_CHECKED
        ]
    if not statuses:
        sys.stderr.write(run.stdout[-3000:] + run.stderr[-3000:])
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{label}.txt").write_text(listing.stdout, encoding="utf-8")
    (RESULTS / f"{label}.survivors.diff").write_text("\n".join(diffs), encoding="utf-8")
    log = run.stdout + run.stderr
    (RESULTS / f"{label}.log").write_text(log, encoding="utf-8")
    return statuses, stop_cause(log, run.returncode)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--module", action="append", choices=sorted(MODULES))
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--check", type=pathlib.Path, help="judge a saved results file")
    parser.add_argument("--exclusions", type=pathlib.Path, default=EXCLUSIONS)
    parser.add_argument("--log", type=pathlib.Path, help="with --check: mutmut's saved output")
    args = parser.parse_args(argv)
    excluded, problems = load_exclusions(args.exclusions)
    for problem in problems:
        sys.stdout.write(f"mutation: {problem}\n")
    if args.check:
        statuses = parse_results(args.check.read_text(encoding="utf-8"))
        log = args.log.read_text(encoding="utf-8") if args.log else ""
        passed = _report(args.check.name, statuses, excluded, stop_cause(log, None))
        return 0 if passed and not problems else 1
    passed = True
    for label in args.module or list(MODULES):
        statuses, cause = run_module(label, MODULES[label], args.max_children)
        if not statuses:
            sys.stdout.write(f"mutation: {label}: NO RESULT (mutmut made no mutant): {cause}\n")
            passed = False
            continue
        passed = _report(label, statuses, excluded, cause, MODULES[label].only) and passed
    return 0 if passed and not problems else 1


if __name__ == "__main__":
    sys.exit(main())
