"""Run the fuzz targets: atheris where it installs, Hypothesis otherwise (REQ-SEC-023).

    python -m fuzz.run [--seconds N] [--engine auto|atheris|hypothesis] [TARGET ...]

Every target of fuzz.targets runs for N seconds (default 30), one process
each, starting from its seed corpus fuzz/corpus/<target>/. With atheris the
run is coverage-guided (libFuzzer); new inputs go to a scratch folder, never
into the committed corpus, and a crash is written to fuzz/crashes/. Without
atheris the run says so plainly and replays the corpus, then feeds Hypothesis
inputs for the same time: never a silent pass. Crashes already found and kept
open by a strict-xfail test (fuzz/known_crashes.py) are reported and fuzzing
goes on past them, except with --strict (the release checks), where they fail.

Exit status: 0 when every target ran its budget without a crash, 1 when a
target crashed, 2 when a target could not run at all.
"""

from __future__ import annotations

import argparse
import importlib.util
import pathlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

ROOT = pathlib.Path(__file__).resolve().parents[1]
CORPUS = ROOT / "fuzz" / "corpus"
CRASHES = ROOT / "fuzz" / "crashes"
PER_INPUT_TIMEOUT_S = 20  # one input that takes longer is a hang: a crash
RSS_LIMIT_MB = 2048


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def atheris_available() -> bool:
    """Whether atheris imports here: a wheel exists for this Python and platform."""
    try:
        importlib.import_module("atheris")
    except ImportError:
        return False
    return True


def _target(name: str, *, strict: bool) -> Callable[[bytes], None]:
    from fuzz.known_crashes import tolerating  # noqa: PLC0415
    from fuzz.targets import TARGETS  # noqa: PLC0415 - imported after instrumentation

    return TARGETS[name] if strict else tolerating(name, TARGETS[name])


def _atheris_child(target: str, seconds: int, strict: bool, scratch: str) -> int:
    """Runs inside the child: libFuzzer owns the process and exits with its verdict."""
    import atheris  # type: ignore[import-untyped]  # noqa: PLC0415 - optional, no stubs

    with atheris.instrument_imports(include=["rypsok", "fuzz"]):
        run = _target(target, strict=strict)

    CRASHES.mkdir(exist_ok=True)
    argv = [
        sys.argv[0], scratch, str(CORPUS / target),
        f"-max_total_time={seconds}", f"-timeout={PER_INPUT_TIMEOUT_S}",
        f"-rss_limit_mb={RSS_LIMIT_MB}", f"-artifact_prefix={CRASHES}/{target}-",
        "-print_final_stats=1",
    ]  # fmt: skip
    atheris.Setup(argv, run)
    atheris.Fuzz()
    return 0


def _hypothesis_child(target: str, seconds: int, strict: bool, scratch: str) -> int:
    """The fallback: replay the corpus, then Hypothesis bytes until the budget is spent.

    `scratch` is unused: Hypothesis keeps no inputs (no example database).
    """
    from hypothesis import HealthCheck, given, settings  # noqa: PLC0415
    from hypothesis import strategies as st  # noqa: PLC0415

    run = _target(target, strict=strict)
    seeds = sorted((CORPUS / target).glob("*"))
    for seed in seeds:
        run(seed.read_bytes())
    examples = 0
    deadline = time.monotonic() + seconds

    @settings(
        max_examples=200, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(st.binary(max_size=4096) | st.sampled_from([s.read_bytes() for s in seeds] or [b""]))
    def once(data: bytes) -> None:
        nonlocal examples
        examples += 1
        run(data)

    while time.monotonic() < deadline:
        once()
    _say(f"fuzz: {target}: hypothesis ran {len(seeds)} seeds and {examples} inputs")
    return 0


def _run_target(target: str, seconds: int, engine: str, strict: bool) -> int:
    command = [sys.executable, "-m", "fuzz.run", "--child", target, "--seconds", str(seconds)]
    command += ["--engine", engine, *(["--strict"] if strict else [])]
    started = time.monotonic()
    # The child's budget plus start-up and the final stats; past that it hangs.
    limit = seconds + PER_INPUT_TIMEOUT_S + 120
    # libFuzzer writes the inputs it finds there; the child cannot clean up (libFuzzer
    # ends the process itself), so the parent owns the folder.
    try:
        with tempfile.TemporaryDirectory(prefix=f"rypsok-fuzz-{target}-") as scratch:
            done = subprocess.run(
                [*command, "--scratch", scratch],
                cwd=ROOT, timeout=limit, check=False, capture_output=True, text=True,
            )  # fmt: skip
    except subprocess.TimeoutExpired:
        _say(f"fuzz: {target}: CRASH (no verdict after {limit} s)")
        return 1
    took = time.monotonic() - started
    if done.returncode == 0:
        execs = _stat(done.stderr, "stat::number_of_executed_units")
        detail = f", {execs} executions" if execs else ""
        _say(f"fuzz: {target}: ok ({engine}, {took:.0f} s{detail})")
        for line in done.stderr.splitlines():
            if line.startswith("fuzz-known-crash: "):
                test = line.removeprefix("fuzz-known-crash: ")
                _say(f"fuzz: {target}: hit a KNOWN OPEN crash, kept open by {test}")
        return 0
    sys.stderr.write(done.stdout[-4000:] + done.stderr[-8000:])
    _say(f"fuzz: {target}: CRASH (exit {done.returncode}; input in fuzz/crashes/ for atheris)")
    return 1


def _stat(stderr: str, name: str) -> str | None:
    for line in stderr.splitlines():
        if line.startswith(name):
            return line.split(":")[-1].strip()
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*")
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--engine", choices=("auto", "atheris", "hypothesis"), default="auto")
    parser.add_argument(
        "--strict", action="store_true", help="a known open crash is a crash (release checks)"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--scratch", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child = _atheris_child if args.engine == "atheris" else _hypothesis_child
        return child(args.child, args.seconds, args.strict, args.scratch or tempfile.mkdtemp())
    from fuzz.targets import TARGETS  # noqa: PLC0415 - the parent only lists them

    unknown = [t for t in args.targets if t not in TARGETS]
    if unknown:
        _say(f"fuzz: no such target: {', '.join(unknown)} (known: {', '.join(TARGETS)})")
        return 2
    engine = args.engine
    if engine == "auto":
        engine = "atheris" if atheris_available() else "hypothesis"
        if engine == "hypothesis":
            _say(
                "fuzz: atheris is NOT installed on this platform (no wheel for this Python or "
                "no compiler): this is not coverage-guided fuzzing. Running the Hypothesis "
                f"targets instead, {args.seconds} s each."
            )
    elif engine == "atheris" and not atheris_available():
        _say("fuzz: atheris was asked for and is not installed")
        return 2
    targets = args.targets or list(TARGETS)
    _say(f"fuzz: {len(targets)} targets, {args.seconds} s each, engine {engine}")
    crashed = [t for t in targets if _run_target(t, args.seconds, engine, args.strict) != 0]
    verdict = f"{len(crashed)} crashed: {', '.join(crashed)}" if crashed else "no crash"
    from fuzz.known_crashes import KNOWN  # noqa: PLC0415

    if args.strict and KNOWN:
        # A crash found earlier is a No-Go until fixed, whether or not this run met it again.
        _say(f"fuzz: {len(targets)} targets run, {verdict}; {len(KNOWN)} known crashes still open")
        return 1
    _say(f"fuzz: {len(targets)} targets run, {verdict}")
    if KNOWN:
        _say(f"fuzz: {len(KNOWN)} known open crashes tolerated (fuzz/known_crashes.py)")
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(main())
