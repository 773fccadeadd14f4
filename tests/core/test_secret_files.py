"""Secret files others may read or replace stop `check` and `serve` (REQ-CFG-004, REQ-CFG-005).

The commands run as real processes on a file made per case; the rules are in
rypsok.core.secret_files and docs/configuration.md. The cases that need a file
owned by root can only be made by root and are skipped otherwise; the cases of
a file owned by someone else chown it when the tests run as root, and use the
tests' own user otherwise (who is not root).
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from rypsok.core.secret_files import judge_secret_files
from tests.support import SERVE, child_env, config_from, write_config

CHECK = [sys.executable, "-m", "rypsok", "check"]
SECRET = "brave-canary-0123456789abcdef"
KEY = "engines.brave.api_key"
NOBODY = 65534
AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
posix_only = pytest.mark.skipif(os.name == "nt", reason="POSIX permission bits")
root_only = pytest.mark.skipif(not AS_ROOT, reason="only root can make a root-owned file")


def _secret_file(tmp_path: pathlib.Path, mode: int, *, owner: int | None = None) -> pathlib.Path:
    path = tmp_path / "brave.key"
    path.write_text(SECRET + "\n", encoding="utf-8")
    path.chmod(mode)
    if owner is not None:
        os.chown(path, owner, -1)
    return path


def _config(tmp_path: pathlib.Path, secret: pathlib.Path) -> pathlib.Path:
    return write_config(
        tmp_path, f'schema_version = 1\n[engines.brave]\napi_key = {{ file = "{secret}" }}\n'
    )


def _run(command: list[str], config: pathlib.Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*command, "--config", str(config)],
        capture_output=True, text=True, env=child_env(), stdin=subprocess.DEVNULL,
        timeout=60, check=False,
    )  # fmt: skip


def _events(stderr: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]


def _assert_refused(config: pathlib.Path, *words: str) -> None:
    for command in (CHECK, SERVE):
        run = _run(command, config)
        assert run.returncode == 1, run.stderr[-2000:]
        (refusal,) = [e for e in _events(run.stderr) if e["event"] == "configuration_refused"]
        problem = str(refusal["problem"])
        assert f"key '{KEY}'" in problem and all(word in problem for word in words), problem
        assert SECRET not in run.stderr and "Traceback" not in run.stderr


def _judged(tmp_path: pathlib.Path, mode: int, owner: int | None = None) -> tuple[str, ...]:
    """The refusals and then the warnings for the brave key in a file of this mode."""
    config = config_from({"engines": {"brave": {"api_key": {"file": str(_secret_file(
        tmp_path, mode, owner=owner))}}}})  # fmt: skip
    verdicts = judge_secret_files(config)
    return (*verdicts.refusals, *(f"warning: {w}" for w in verdicts.warnings))


@posix_only
@pytest.mark.req("REQ-CFG-004", "REQ-CFG-005", "REQ-RUST-002")
def test_a_secret_file_others_can_change_is_refused_naming_the_key(
    tmp_path: pathlib.Path,
) -> None:
    """REQ-CFG-004, REQ-CFG-005: a secret file writable by its group or others stops check
    and serve with exit 1, naming the key, the mode and the fix, never the secret; root's
    ownership does not excuse it."""
    secret = _secret_file(tmp_path, 0o666)
    _assert_refused(_config(tmp_path, secret), "mode 0666", "chmod go-w")
    for mode in (0o620, 0o602, 0o660):
        (problem,) = _judged(tmp_path, mode, owner=0 if AS_ROOT else None)
        assert problem.startswith(f"key '{KEY}'") and "can be changed" in problem, mode


@posix_only
@pytest.mark.req("REQ-CFG-004", "REQ-CFG-005", "REQ-RUST-002")
def test_a_secret_file_of_a_user_readable_by_others_is_refused(tmp_path: pathlib.Path) -> None:
    """REQ-CFG-004, REQ-CFG-005: a user's secret file that its group or others can read stops
    check and serve; the message asks for chmod 600 (as ssh does)."""
    owner = NOBODY if AS_ROOT else None
    secret = _secret_file(tmp_path, 0o640, owner=owner)
    _assert_refused(_config(tmp_path, secret), "mode 0640", f"chmod 600 {secret}")
    for mode in (0o604, 0o644, 0o440, 0o404):
        (problem,) = _judged(tmp_path, mode, owner=owner)
        assert "can be read by other users" in problem and f"mode {mode:04o}" in problem


@posix_only
@pytest.mark.req("REQ-CFG-004", "REQ-CFG-005")
def test_an_owner_only_secret_file_is_accepted_without_a_word(tmp_path: pathlib.Path) -> None:
    """REQ-CFG-004: mode 0600 passes check with no warning about the file; so does 0400."""
    run = _run(CHECK, _config(tmp_path, _secret_file(tmp_path, 0o600)))
    assert run.returncode == 0, run.stderr[-2000:]
    assert "secret_file_readable" not in run.stderr
    assert _judged(tmp_path, 0o400) == () and _judged(tmp_path, 0o600) == ()


@posix_only
@root_only
@pytest.mark.req("REQ-CFG-004", "REQ-CFG-005")
def test_a_root_owned_secret_for_a_group_is_accepted_and_one_for_all_is_warned(
    tmp_path: pathlib.Path,
) -> None:
    """REQ-CFG-004: root-owned and group-readable (0640, 0440) passes, as PostgreSQL accepts its
    key; root-owned and readable by all (0644, as container runtimes mount secrets) passes
    with a warning that names the key and never the secret."""
    assert _judged(tmp_path, 0o640, owner=0) == () and _judged(tmp_path, 0o440, owner=0) == ()
    (judged,) = _judged(tmp_path, 0o444, owner=0)
    assert judged.startswith(f"warning: key '{KEY}'")
    everyone = _run(CHECK, _config(tmp_path, _secret_file(tmp_path, 0o644, owner=0)))
    assert everyone.returncode == 0, everyone.stderr[-2000:]
    (warning,) = [e for e in _events(everyone.stderr) if e["event"] == "secret_file_readable"]
    assert warning["level"] == "warning" and f"key '{KEY}'" in str(warning["problem"])
    assert "every user" in str(warning["problem"]) and SECRET not in everyone.stderr


@posix_only
@pytest.mark.req("REQ-CFG-004", "REQ-RUST-002")
def test_every_secret_reference_is_judged_but_the_certificate_and_nothing_on_windows(
    tmp_path: pathlib.Path,
) -> None:
    """REQ-CFG-004, REQ-RUST-002: engine keys, HTTP keys, the TLS key and the cache's secrets
    are judged by their key; the public certificate is not; on Windows (no POSIX mode bits)
    nothing is, as documented."""
    shared = _secret_file(tmp_path, 0o666)
    ref = {"file": str(shared)}
    config = config_from(
        {
            "engines": {"brave": {"api_key": ref}},
            "http": {"keys": [{"caller": "a", "key": ref}], "tls_cert": ref, "tls_key": ref},
            "cache": {"redis_url": ref, "hmac_key": ref},
        }
    )
    verdicts = judge_secret_files(config)
    named = sorted(problem.split("'")[1] for problem in verdicts.refusals)
    assert named == [
        "cache.hmac_key",
        "cache.redis_url",
        "engines.brave.api_key",
        "http.keys[0].key",
        "http.tls_key",
    ]
    assert verdicts.warnings == ()
    assert judge_secret_files(config, platform="nt").refusals == ()
    missing = config_from({"engines": {"brave": {"api_key": {"file": str(tmp_path / "no")}}}})
    assert judge_secret_files(missing).refusals == ()  # the resolver reports a missing file
