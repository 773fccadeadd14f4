"""The release checks, in parallel, with one verdict line per job (REQ-TEST-019).

    python tools/release_check.py [--fuzz-seconds N] [--only JOB ...] [--job NAME=COMMAND ...]

Jobs: reproducibility (wheel and sdist built twice from the same commit with
SOURCE_DATE_EPOCH are byte-identical), fuzz (every target), mutation (the
security modules against mutation/exclusions.txt), live (one query per
engine), audit (the vulnerability audit). Each job's output goes to
build/release-check/<job>.log. A job passes only when it ran and succeeded:
a failure, a timeout, or a job that reports SKIPPED (the audit where the
advisory service cannot be reached) fails the release check, because
REQ-TEST-019 allows no ignored job. Exit status 0 only when every job passed.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import pathlib
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = pathlib.Path(__file__).resolve().parents[1]
LOGS = ROOT / "build" / "release-check"
JOB_TIMEOUT_S = 6 * 3600
PY = sys.executable


def default_jobs(fuzz_seconds: int) -> dict[str, list[str]]:
    return {
        "reproducibility": [PY, str(ROOT / "tools" / "release_check.py"), "--reproducibility"],
        "fuzz": [PY, "-m", "fuzz.run", "--strict", "--seconds", str(fuzz_seconds)],
        "mutation": [PY, "-m", "mutation.run"],
        "live": [PY, str(ROOT / "tools" / "live.py")],
        "audit": [PY, str(ROOT / "tools" / "audit.py")],
    }


def verdict(returncode: int | None, output: str) -> str:
    """PASS, FAIL or SKIPPED: a job that says it skipped is not a pass, whatever it exits."""
    if returncode is None:
        return "FAIL (timed out)"
    if "SKIPPED" in output:
        return "SKIPPED (counts as a failure: no job may be ignored)"
    return "PASS" if returncode == 0 else f"FAIL (exit {returncode})"


def _last_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    return lines[-1].strip() if lines else "no output"


def run_job(name: str, command: list[str], logs: pathlib.Path) -> tuple[str, str, float]:
    started = time.monotonic()
    logs.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run(  # noqa: S603 - our own commands
            command, cwd=ROOT, capture_output=True, text=True, timeout=JOB_TIMEOUT_S, check=False
        )
        output, status = done.stdout + done.stderr, done.returncode
    except subprocess.TimeoutExpired as expired:
        output, status = str(expired.stdout or ""), None
    (logs / f"{name}.log").write_text(output, encoding="utf-8")
    return verdict(status, output), _last_line(output), time.monotonic() - started


# -- the reproducibility job --------------------------------------------------------------


def _commit_time() -> str:
    return subprocess.run(
        ["git", "log", "-1", "--format=%ct"],  # noqa: S607
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip


def _build_once(into: pathlib.Path, epoch: str) -> dict[str, str]:
    """Build wheel and sdist from a clean export of HEAD; file name -> SHA-256."""
    source = into / "source"
    source.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "archive", "--format=tar", "HEAD"],  # noqa: S607
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive, check=True)  # noqa: S603, S607
    env = {**os.environ, "SOURCE_DATE_EPOCH": epoch, "PYTHONHASHSEED": "0"}
    out = into / "dist"
    subprocess.run(  # noqa: S603
        [PY, "-m", "build", "--sdist", "--wheel", "--outdir", str(out), str(source)],
        env=env, check=True, capture_output=True,
    )  # fmt: skip
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.iterdir())}


def reproducibility() -> int:
    epoch = _commit_time()
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="rypsok-repro-"))
    try:
        first, second = _build_once(scratch / "a", epoch), _build_once(scratch / "b", epoch)
    except subprocess.CalledProcessError as failed:
        sys.stdout.write(f"reproducibility: build failed: {failed.stderr!r:.2000}\n")
        return 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for name in sorted(first.keys() | second.keys()):
        same = first.get(name) == second.get(name)
        sys.stdout.write(f"reproducibility: {name}: {'identical' if same else 'DIFFERENT'}\n")
    identical = first == second and len(first) == 2
    sys.stdout.write(
        "reproducibility: image: no image definition on this commit; nothing to build\n"
    )
    sys.stdout.write(
        f"reproducibility: {'byte-identical' if identical else 'NOT reproducible'} "
        f"(SOURCE_DATE_EPOCH={epoch}, {len(first)} files)\n"
    )
    return 0 if identical else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fuzz-seconds", type=int, default=60)
    parser.add_argument("--only", nargs="+", metavar="JOB")
    parser.add_argument("--job", action="append", default=[], metavar="NAME=COMMAND")
    parser.add_argument("--logs", type=pathlib.Path, default=LOGS, help="where job logs go")
    parser.add_argument("--reproducibility", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.reproducibility:
        return reproducibility()
    jobs = default_jobs(args.fuzz_seconds)
    for spec in args.job:
        name, _, command = spec.partition("=")
        jobs[name] = shlex.split(command)
    if args.only:
        jobs = {name: jobs[name] for name in args.only}
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        futures = {
            name: pool.submit(run_job, name, command, args.logs) for name, command in jobs.items()
        }
        results = {name: future.result() for name, future in futures.items()}
    for name, (result, last, took) in results.items():
        sys.stdout.write(f"release-check: {name}: {result} [{took:.0f} s] {last}\n")
    failed = [name for name, (result, _, _) in results.items() if result != "PASS"]
    if failed:
        names = ", ".join(failed)
        sys.stdout.write(f"release-check: NO-GO: {names} did not pass (logs in {args.logs})\n")
    else:
        sys.stdout.write("release-check: GO: every job passed\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
