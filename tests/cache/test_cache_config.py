"""The [cache] and [cluster] keys: defaults, references, refusals that name the key."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

from rypsok.core import limits
from rypsok.core.config import ConfigError, cache_secret_problems
from rypsok.core.config_reference import reference_rows
from tests.support import child_env, config_from


@pytest.mark.req("REQ-CACHE-001", "REQ-CFG-005")
def test_the_cache_is_off_by_default_and_every_key_is_documented() -> None:
    """REQ-CACHE-001: LIM-K1 off; the reference lists every new key."""
    config = config_from({})
    assert config.cache.enabled is limits.CACHE_ENABLED is False
    assert config.cache.backend == "memory" and config.cluster.instances == 1
    keys = {row[0] for row in reference_rows()}
    for key in ("enabled", "backend", "ttl_s", "entries", "redis_url", "hmac_key",
                "key_prefix", "operation_ms"):  # fmt: skip
        assert f"cache.{key}" in keys
    assert "cluster.instances" in keys


@pytest.mark.req("REQ-CFG-004", "REQ-CFG-005", "REQ-OPS-001")
def test_the_redis_backend_needs_its_url_and_key_by_reference(tmp_path: pathlib.Path) -> None:
    """REQ-CFG-004: inline secrets refused; missing or short ones named, never echoed."""
    with pytest.raises(ConfigError, match=r"cache\.redis_url is required"):
        config_from({"cache": {"backend": "redis"}})
    with pytest.raises(ConfigError, match="inline secrets are refused"):
        config_from({"cache": {"backend": "redis", "redis_url": "redis://127.0.0.1:1"}})
    url, short = tmp_path / "url", tmp_path / "short"
    url.write_text("unix:///nonexistent.sock\n", encoding="utf-8")
    short.write_text("tooshort\n", encoding="utf-8")
    url.chmod(0o600)
    short.chmod(0o600)
    refs = {"redis_url": {"file": str(url)}}
    with pytest.raises(ConfigError, match=r"cache\.hmac_key is required"):
        config_from({"cache": {"backend": "redis", **refs}})
    # Secrets are read when checking or serving, never while parsing.
    short_key = config_from({"cache": {"backend": "redis", **refs,
                                       "hmac_key": {"file": str(short)}}})  # fmt: skip
    (problem,) = cache_secret_problems(short_key)
    assert "at least 16 characters" in problem and "tooshort" not in problem
    unset = config_from({"cache": {"backend": "redis", **refs,
                                   "hmac_key": {"env": "RYPSOK_TEST_UNSET_HMAC"}}})  # fmt: skip
    assert cache_secret_problems(unset) == [
        "cache.hmac_key: the referenced secret is not set or the file is missing"
    ]
    config = tmp_path / "rypsok.toml"
    config.write_text(
        f'schema_version = 1\n[cache]\nbackend = "redis"\nredis_url = {{ file = "{url}" }}\n'
        'hmac_key = { env = "RYPSOK_TEST_UNSET_HMAC" }\n',
        encoding="utf-8",
    )
    for command in (["check"], ["serve"]):
        run = subprocess.run(
            [sys.executable, "-m", "rypsok", *command, "--config", str(config)],
            capture_output=True, text=True, timeout=60, check=False, env=child_env(),
        )  # fmt: skip
        assert run.returncode == 1 and "cache.hmac_key" in run.stderr, run.stderr
    url.write_text("http://user:pw@127.0.0.1:1\n", encoding="utf-8")
    (tmp_path / "hmac").write_text("a-long-enough-hmac-key\n", encoding="utf-8")
    (tmp_path / "hmac").chmod(0o600)
    config.write_text(config.read_text(encoding="utf-8").replace(
        '{ env = "RYPSOK_TEST_UNSET_HMAC" }', f'{{ file = "{tmp_path / "hmac"}" }}'
    ), encoding="utf-8")  # fmt: skip
    served = subprocess.run(
        [sys.executable, "-m", "rypsok", "serve", "--config", str(config)],
        capture_output=True, text=True, timeout=60, check=False, env=child_env(),
    )  # fmt: skip
    assert served.returncode == 1 and "cache.redis_url must be a redis://" in served.stderr
    assert "pw@" not in served.stderr
    with pytest.raises(ConfigError, match=r"cache\.operation_ms"):
        config_from({"cache": {"operation_ms": 0}})
