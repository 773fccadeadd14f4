"""`rypsok check` proves that `serve` will start: every refusal of `serve` is a refusal of `check`.

Each case is a configuration file that `serve` cannot start with. Both commands
run as real processes: `check` must exit 1 naming the key, and `serve` must
exit 1 with the same words and no traceback (REQ-CFG-005, REQ-OPS-001).
"""

from __future__ import annotations

import pathlib
import subprocess
import sys
from dataclasses import dataclass

import pytest

from rypsok.core.engines.registry import driver_classes
from tests.mcp.http_support import make_test_ca
from tests.support import SERVE, child_env, write_config

CHECK = [sys.executable, "-m", "rypsok", "check"]
KEY_ENV = {
    "RYPSOK_TEST_CHECK_KEY": "check-test-key-0123456789",
    "RYPSOK_TEST_REDIS_SCHEME": "http://127.0.0.1:6379/0",
    "RYPSOK_TEST_REDIS_PORT": "redis://127.0.0.1:not-a-port/0",
    "RYPSOK_TEST_HMAC": "hmac-test-key-0123456789",
}
REDIS = (
    'schema_version = 1\n[cache]\nenabled = true\nbackend = "redis"\n'
    'hmac_key = { env = "RYPSOK_TEST_HMAC" }\nredis_url = { env = "%s" }\n'
)
HTTP_KEYS = '[[http.keys]]\ncaller = "agent"\nkey = { env = "RYPSOK_TEST_CHECK_KEY" }\n'
GITHUB = driver_classes()["github"].admission
WIKIPEDIA = driver_classes()["wikipedia"].admission


@dataclass(frozen=True)
class Refusal:
    text: str  # the configuration file; {cert} and {key} name test-made TLS files
    key: str  # what the message must name
    bound: str = ""  # the record's bound, stated where one applies
    transport: str = "stdio"
    secret: str = ""  # text that must never be echoed


REFUSALS = {
    "proxy-inline-credential": Refusal(
        'schema_version = 1\n[egress]\nproxy = "http://ops:hunter2-canary@proxy.example:3128"\n',
        "egress.proxy",
        secret="hunter2-canary",
    ),
    "proxy-not-http": Refusal(
        'schema_version = 1\n[egress]\nproxy = "socks5://proxy.example:1080"\n', "egress.proxy"
    ),
    "proxy-bad-port": Refusal(
        'schema_version = 1\n[egress]\nproxy = "http://proxy.example:99999"\n', "egress.proxy"
    ),
    # A token in the proxy's query is an inline credential as much as a password is.
    "proxy-token-in-query": Refusal(
        'schema_version = 1\n[egress]\nproxy = "http://proxy.example:3128/?token=canary-9f2k"\n',
        "egress.proxy",
        secret="canary-9f2k",
    ),
    # A path would be ignored (the proxy is reached at host and port): a key without effect.
    "proxy-with-a-path": Refusal(
        'schema_version = 1\n[egress]\nproxy = "http://proxy.example:3128/corp"\n', "egress.proxy"
    ),
    "proxy-host-not-a-name": Refusal(
        'schema_version = 1\n[egress]\nproxy = "http://pr oxy.example:3128"\n', "egress.proxy"
    ),
    # A key pasted into an endpoint's query is an inline secret (REQ-CFG-004): the
    # credential check that guards queries and fetched URLs judges the URL keys too.
    "endpoint-key-in-query": Refusal(
        "schema_version = 1\n[engines.searxng]\nenabled = true\n"
        'endpoint = "https://searx.example/search?api_key=canary5Qm8v2Lx9Rt"\n',
        "engines.searxng.endpoint",
        secret="canary5Qm8v2Lx9Rt",
    ),
    "endpoint-port-out-of-range": Refusal(
        'schema_version = 1\n[engines.wikipedia]\nendpoint = "https://wiki.example:99999/w/api.php"\n',
        "engines.wikipedia.endpoint",
    ),
    "endpoint-without-host": Refusal(
        'schema_version = 1\n[engines.wikipedia]\nendpoint = "https:///w/api.php"\n',
        "engines.wikipedia.endpoint",
    ),
    "proxy-provider-key-in-host": Refusal(
        'schema_version = 1\n[egress]\nproxy = "http://ghp_'
        + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2"
        + '.proxy.example:3128"\n',
        "egress.proxy",
        secret="Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2",
    ),
    "proxy-port-zero": Refusal(
        'schema_version = 1\n[egress]\nproxy = "http://proxy.example:0"\n', "egress.proxy"
    ),
    "egress-rule-host-bits-set": Refusal(
        'schema_version = 1\n[egress]\nallow = ["127.0.0.0/8", "10.0.0.1/8"]\n',
        "egress.allow",
        bound="entry 1 is not a network",
    ),
    "egress-rule-not-a-name": Refusal(
        'schema_version = 1\n[egress]\ndeny = ["tracker example"]\n',
        "egress.deny",
        bound="entry 0 is neither a network nor a host name",
    ),
    "schema-version-boolean": Refusal("schema_version = true\n", "schema_version"),
    "schema-version-float": Refusal("schema_version = 1.0\n", "schema_version"),
    "preference-duplicate": Refusal(
        'schema_version = 1\n[search]\npreference = ["github", "arxiv", "github"]\n',
        "search.preference",
        bound="github",
    ),
    "min-interval-below-record": Refusal(
        f"schema_version = 1\n[engines.github]\nmin_interval_ms = {GITHUB.min_interval_ms - 1}\n",
        "engines.github.min_interval_ms",
        bound=f"at least {GITHUB.min_interval_ms}",
    ),
    "concurrency-above-record": Refusal(
        "schema_version = 1\n[engines.wikipedia]\n"
        f"max_concurrency = {WIKIPEDIA.max_concurrency + 1}\n",
        "engines.wikipedia.max_concurrency",
        bound=f"at most {WIKIPEDIA.max_concurrency}",
    ),
    "tls-key-of-another-certificate": Refusal(
        'schema_version = 1\n[http]\ntls_cert = { file = "{cert}" }\n'
        'tls_key = { file = "{key}" }\n' + HTTP_KEYS,
        "http.tls_cert, http.tls_key",
        transport="http",
    ),
    "redis-url-not-redis": Refusal(REDIS % "RYPSOK_TEST_REDIS_SCHEME", "cache.redis_url"),
    "redis-url-unreadable": Refusal(REDIS % "RYPSOK_TEST_REDIS_PORT", "cache.redis_url"),
    "scraping-without-switch": Refusal(
        "schema_version = 1\n[engines.duckduckgo]\nenabled = true\n",
        "engines.duckduckgo.enabled",
        bound="[scraping] enabled = true",
    ),
    "tls-file-not-pem": Refusal(
        'schema_version = 1\n[http]\ntls_cert = { file = "{cert}" }\n'
        'tls_key = { file = "{cert}" }\n' + HTTP_KEYS,
        "http.tls_cert, http.tls_key",
        transport="http",
    ),
}


def config_file(tmp_path: pathlib.Path, refusal: Refusal) -> pathlib.Path:
    """The case's file, with a certificate and the key of another certificate where named."""
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    cert = make_test_ca(first).cert_file
    key = make_test_ca(second).key_file  # a valid key, but not the certificate's
    cert.chmod(0o600)  # one case reads the certificate as the key: private, as a key is
    text = refusal.text.replace("{cert}", str(cert)).replace("{key}", str(key))
    return write_config(tmp_path, text)


def run(command: list[str], config: pathlib.Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*command, "--config", str(config)],
        capture_output=True, text=True, env=child_env(**KEY_ENV), stdin=subprocess.DEVNULL,
        timeout=60, check=False,
    )  # fmt: skip


def assert_refused(result: subprocess.CompletedProcess[str], refusal: Refusal) -> None:
    assert result.returncode == 1, result.stderr[-2000:]
    assert '"event":"configuration_refused"' in result.stderr
    assert refusal.key in result.stderr
    assert refusal.bound in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    if refusal.secret:
        assert refusal.secret not in result.stderr


@pytest.mark.req("REQ-CFG-005", "REQ-OPS-001", "REQ-CFG-004")
@pytest.mark.parametrize("case", REFUSALS)
def test_check_refuses_what_serve_cannot_start_with(tmp_path: pathlib.Path, case: str) -> None:
    """REQ-CFG-005, REQ-OPS-001, REQ-CFG-004: `check` exits 1 and names the key (and bound)."""
    refusal = REFUSALS[case]
    assert_refused(run(CHECK, config_file(tmp_path, refusal)), refusal)


@pytest.mark.req("REQ-CFG-005", "REQ-OPS-001", "REQ-CFG-004")
@pytest.mark.parametrize("case", REFUSALS)
def test_serve_refuses_the_same_cleanly(tmp_path: pathlib.Path, case: str) -> None:
    """REQ-CFG-005, REQ-OPS-001: `serve` exits 1 with the same key, never with a traceback."""
    refusal = REFUSALS[case]
    assert_refused(
        run([*SERVE, "--transport", refusal.transport], config_file(tmp_path, refusal)), refusal
    )


@pytest.mark.req("REQ-OPS-001", "REQ-CFG-005")
def test_check_accepts_a_matching_pair_and_gentler_engine_settings(tmp_path: pathlib.Path) -> None:
    """REQ-OPS-001: the same keys with a matching pair and gentler values pass `check`."""
    ca = make_test_ca(tmp_path)
    text = (
        "schema_version = 1\n"
        '[search]\npreference = ["github", "arxiv"]\n'
        f"[engines.github]\nmin_interval_ms = {GITHUB.min_interval_ms}\nmax_concurrency = 1\n"
        '[egress]\nproxy = "http://proxy.example:3128"\n'
        f'[http]\ntls_cert = {{ file = "{ca.cert_file}" }}\n'
        f'tls_key = {{ file = "{ca.key_file}" }}\n' + HTTP_KEYS
    )
    result = run(CHECK, write_config(tmp_path, text))
    assert result.returncode == 0, result.stderr
    assert "configuration OK" in result.stdout
    assert "(tls, 1 caller(s))" in result.stdout
