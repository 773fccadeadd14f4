"""The [cache] and [cluster] keys: defaults, references, refusals that name the key."""

from __future__ import annotations

import pathlib

import pytest

from rypsok.core import limits
from rypsok.core.config import ConfigError, reference_rows
from tests.support import config_from


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


@pytest.mark.req("REQ-CFG-004", "REQ-CFG-005")
def test_the_redis_backend_needs_its_url_and_key_by_reference(tmp_path: pathlib.Path) -> None:
    """REQ-CFG-004: inline secrets refused; missing or short ones named, never echoed."""
    with pytest.raises(ConfigError, match=r"cache\.redis_url is required"):
        config_from({"cache": {"backend": "redis"}})
    with pytest.raises(ConfigError, match="inline secrets are refused"):
        config_from({"cache": {"backend": "redis", "redis_url": "redis://127.0.0.1:1"}})
    url, short = tmp_path / "url", tmp_path / "short"
    url.write_text("unix:///nonexistent.sock\n", encoding="utf-8")
    short.write_text("tooshort\n", encoding="utf-8")
    refs = {"redis_url": {"file": str(url)}}
    with pytest.raises(ConfigError, match=r"cache\.hmac_key is required"):
        config_from({"cache": {"backend": "redis", **refs}})
    with pytest.raises(ConfigError, match="at least 16 characters") as refused:
        config_from({"cache": {"backend": "redis", **refs, "hmac_key": {"file": str(short)}}})
    assert "tooshort" not in str(refused.value)
    with pytest.raises(ConfigError, match="referenced secret is not set"):
        config_from({"cache": {"backend": "redis", **refs,
                               "hmac_key": {"env": "RYPSOK_TEST_UNSET_HMAC"}}})  # fmt: skip
    with pytest.raises(ConfigError, match=r"cache\.operation_ms"):
        config_from({"cache": {"operation_ms": 0}})
