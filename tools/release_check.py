"""The release checks, in parallel, with one verdict line per job (REQ-TEST-019).

    python tools/release_check.py [--fuzz-seconds N] [--only JOB ...] [--job NAME=COMMAND ...]

Jobs: reproducibility (wheel and sdist built twice by tools/dist.py from an
export of the commit with SOURCE_DATE_EPOCH are byte-identical), image (the
OCI image archive built twice, where it can be built: root, mmdebstrap and
umoci on Linux, and an image reproducibility check on the commit; SKIPPED
otherwise, which fails the run), fuzz (every target), mutation (the
security modules against mutation/exclusions.txt), live (one query per
engine), audit (the vulnerability audit). Each job's output goes to
build/release-check/<job>.log. A job passes only when it ran and succeeded:
a failure, a timeout, or a job that reports SKIPPED (the audit where the
advisory service cannot be reached) fails the release check, because
REQ-TEST-019 allows no ignored job. Exit status 0 only when every job passed.
"""

from __future__ import annotations

import argparse
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
        "image": [PY, str(ROOT / "tools" / "release_check.py"), "--image-reproducibility"],
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


# -- the reproducibility jobs -------------------------------------------------------------


def _commit_time() -> str:
    return subprocess.run(
        ["git", "log", "-1", "--format=%ct"],  # noqa: S607
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip


def _export_head(into: pathlib.Path) -> pathlib.Path:
    """A clean tree of the commit (what is tagged), without the working tree's changes."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", "HEAD"],  # noqa: S607
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    source = into / "source"
    source.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive, check=True)  # noqa: S603, S607
    return source


def reproducibility(source: pathlib.Path | None = None) -> int:
    """Wheel and sdist built twice by the release build (`tools/dist.py`, as `make dist`).

    The builds run in an export of HEAD (or in `source`), with SOURCE_DATE_EPOCH
    set to the commit time: the files compared are the ones the release ships.
    """
    epoch = _commit_time()
    with tempfile.TemporaryDirectory(prefix="rypsok-repro-") as scratch:
        tree = source if source is not None else _export_head(pathlib.Path(scratch))
        env = {**os.environ, "SOURCE_DATE_EPOCH": epoch, "PYTHONHASHSEED": "0"}
        done = subprocess.run(  # noqa: S603 - our own interpreter and tool
            [PY, str(tree / "tools" / "dist.py"), "--check-reproducible"],
            cwd=tree, env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
    sys.stdout.write(done.stdout + done.stderr)
    verdict = "byte-identical" if done.returncode == 0 else "NOT reproducible"
    sys.stdout.write(f"reproducibility: wheel and sdist {verdict} (SOURCE_DATE_EPOCH={epoch})\n")
    return 0 if done.returncode == 0 else 1


# What builds the image archive twice and compares it, once the image tool has it.
IMAGE_TARGET = "image-repro"
IMAGE_FLAG = "--check-reproducible"


def image_command(root: pathlib.Path = ROOT) -> list[str] | None:
    """The image's reproducibility check of this tree: a make target, else the tool's flag."""
    makefile = (root / "Makefile").read_text(encoding="utf-8")
    if f"\n{IMAGE_TARGET}:" in makefile:
        return ["make", IMAGE_TARGET]
    image_tool = root / "tools" / "image.py"
    if image_tool.is_file() and IMAGE_FLAG in image_tool.read_text(encoding="utf-8"):
        return [PY, str(image_tool), IMAGE_FLAG]
    return None


def image_reproducibility(root: pathlib.Path = ROOT) -> int:
    """The OCI image built twice, where it can be built; otherwise SKIPPED, saying why.

    SKIPPED is never a pass: the release check counts it as a failure.
    """
    command = image_command(root)
    if command is None:
        sys.stdout.write(
            f"image: SKIPPED: this commit has no image reproducibility check (no make target "
            f"'{IMAGE_TARGET}', no '{IMAGE_FLAG}' in tools/image.py)\n"
        )
        return 0
    as_root = hasattr(os, "geteuid") and os.geteuid() == 0
    missing = [tool for tool in ("mmdebstrap", "umoci") if shutil.which(tool) is None]
    if not as_root or missing:
        needs = ", ".join([*([] if as_root else ["root"]), *missing])
        sys.stdout.write(f"image: SKIPPED: the image build needs {needs} on Linux\n")
        return 0
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)  # noqa: S603
    sys.stdout.write(done.stdout + done.stderr)
    verdict = "byte-identical" if done.returncode == 0 else "NOT reproducible"
    sys.stdout.write(f"image: {verdict} ({' '.join(command[-2:])})\n")
    return 0 if done.returncode == 0 else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fuzz-seconds", type=int, default=60)
    parser.add_argument("--only", nargs="+", metavar="JOB")
    parser.add_argument("--job", action="append", default=[], metavar="NAME=COMMAND")
    parser.add_argument("--logs", type=pathlib.Path, default=LOGS, help="where job logs go")
    parser.add_argument("--reproducibility", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--image-reproducibility", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.reproducibility:
        return reproducibility()
    if args.image_reproducibility:
        return image_reproducibility()
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
