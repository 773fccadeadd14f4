"""Configuration: defaults, references, refusals that name the key."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import pytest

from rypsok.core import limits
from rypsok.core.config import (
    Config,
    ConfigError,
    Secret,
    SecretRef,
    load_config,
    parse_config,
)
from rypsok.core.config_reference import reference_table
from rypsok.core.engines.registry import known_ids
from tests.support import child_env, config_from, write_config

ROOT = pathlib.Path(__file__).resolve().parents[2]


def refusal(data: dict[str, object]) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(data, known_ids())
    return str(caught.value)


@pytest.mark.req("REQ-CFG-003", "REQ-CFG-001")
def test_no_file_means_every_default_of_the_limits_table() -> None:
    """REQ-CFG-003, REQ-CFG-001: without a file every value is the limits-table default."""
    config = load_config(None, known_ids())
    assert config == Config()
    assert config.search.deadline_ms == limits.SEARCH_DEADLINE_MS == 6_000
    assert config.search.engine_timeout_ms == limits.ENGINE_TIMEOUT_MS == 5_000
    assert config.search.ceiling_ms == 10_000
    assert config.fetch.max_chars_ceiling == 100_000
    assert config.privacy.credential_check == "deny"
    assert config.limits.web_search_per_minute == 60
    assert config.limits.engine_status_per_minute == 120
    assert config.breaker.failures == 3


@pytest.mark.req("REQ-CFG-003")
def test_each_default_section_is_its_model_with_that_models_defaults() -> None:
    """REQ-CFG-003: the sections' defaults are validated by `Config` itself (no instance is
    built at import, issue 14 item 3), yet each is its section's model, equal to one built
    on its own, and a document that names a section with no key gives the same config."""
    config = Config()
    for name, field in Config.model_fields.items():
        model = field.annotation
        if name == "engines" or not isinstance(model, type):
            continue
        section = getattr(config, name)
        assert type(section) is model, name
        assert section == model(), name
    named = {name: {} for name in Config.model_fields if name not in ("engines", "schema_version")}
    assert parse_config({"schema_version": 1, **named}, known_ids()) == config


@pytest.mark.req("REQ-CFG-001")
def test_file_is_found_by_argument_before_environment(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """REQ-CFG-001: --config wins over RYPSOK_CONFIG, which wins over defaults."""
    by_env = write_config(tmp_path, "schema_version = 1\n[search]\nmax_engines = 3\n")
    by_arg = tmp_path / "other.toml"
    by_arg.write_text("schema_version = 1\n[search]\nmax_engines = 4\n")
    monkeypatch.setenv("RYPSOK_CONFIG", str(by_env))
    assert load_config(None, known_ids()).search.max_engines == 3
    assert load_config(str(by_arg), known_ids()).search.max_engines == 4


@pytest.mark.req("REQ-MAIN-003")
@pytest.mark.parametrize(
    ("data", "expected"),
    [({}, "schema_version"), ({"schema_version": 2}, "version 2 is not supported")],
)
def test_schema_version_must_be_one(data: dict[str, object], expected: str) -> None:
    """REQ-MAIN-003: a file without schema_version or with an unknown version is refused."""
    assert expected in refusal(data)


@pytest.mark.req("REQ-CFG-005")
@pytest.mark.parametrize(
    ("section", "expected"),
    [
        ({"search": {"deadline_ms": "6000"}}, "key 'search.deadline_ms'"),
        ({"search": {"deadline_ms": 500}}, "key 'search.deadline_ms': must be at least 1000"),
        ({"search": {"max_engines": 17}}, "key 'search.max_engines': must be at most 16"),
        ({"search": {"colour": "red"}}, "unknown key 'search.colour'"),
        ({"privacy": {"credential_check": "loud"}}, "key 'privacy.credential_check'"),
        ({"fetch": {"ports": [0]}}, "key 'fetch.ports'"),
        ({"output": {"structured_content": "yes"}}, "key 'output.structured_content'"),
        ({"search": {"languages": ["english"]}}, "key 'search.languages'"),
        ({"engines": {"wikipedia": {"endpoint": "ftp://x"}}}, "engines.wikipedia.endpoint"),
    ],
)
def test_invalid_values_stop_startup_naming_the_key(
    section: dict[str, object], expected: str
) -> None:
    """REQ-CFG-005: a wrong type, a value out of bound or an unknown key names the key."""
    assert expected in refusal({"schema_version": 1, **section})


@pytest.mark.req("REQ-AGG-003", "REQ-CFG-005")
@pytest.mark.parametrize(
    ("section", "expected"),
    [
        ({"search": {"engine_timeout_ms": 5_600}}, "search.engine_timeout_ms + search.reserve_ms"),
        ({"search": {"ceiling_ms": 5_000}}, "search.ceiling_ms must be at least"),
        ({"search": {"connect_timeout_ms": 5_001}}, "search.connect_timeout_ms"),
        ({"fetch": {"connect_timeout_ms": 16_000}}, "fetch.connect_timeout_ms <="),
        ({"fetch": {"timeout_ms": 21_000}}, "fetch.timeout_ms <= fetch.ceiling_ms"),
        ({"fetch": {"max_chars_default": 200_000}}, "fetch.max_chars_default"),
    ],
)
def test_cross_checks_refuse_inconsistent_limits(section: dict[str, object], expected: str) -> None:
    """REQ-AGG-003: S5 + S6 <= S4, S7 >= S4, S12 <= S5, F6 <= F4 <= F5, F1 <= F2."""
    assert expected in refusal({"schema_version": 1, **section})


@pytest.mark.req("REQ-CFG-004", "REQ-SEC-020")
def test_inline_secrets_are_refused_naming_the_key() -> None:
    """REQ-CFG-004: a secret given inline is refused and its value is not echoed."""
    message = refusal(
        {"schema_version": 1, "engines": {"wikipedia": {"api_key": "canary-inline-4711"}}}
    )
    assert "engines.wikipedia.api_key" in message
    assert "inline secrets are refused" in message
    assert "canary-inline-4711" not in message
    message = refusal(
        {"schema_version": 1, "http": {"keys": [{"caller": "a", "key": "canary-4712"}]}}
    )
    assert "http.keys.0.key" in message
    assert "canary-4712" not in message


@pytest.mark.req("REQ-CFG-004", "REQ-SEC-020")
def test_secret_references_resolve_and_never_show(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """REQ-CFG-004, REQ-SEC-020: env and file references resolve; repr and str redact."""
    monkeypatch.setenv("RYPSOK_TEST_KEY", "canary-env-1234")
    secret_file = tmp_path / "key"
    secret_file.write_text("canary-file-5678\n")
    from_env = SecretRef(env="RYPSOK_TEST_KEY").resolve()
    from_file = SecretRef(file=str(secret_file)).resolve()
    assert isinstance(from_env, Secret) and from_env.reveal() == "canary-env-1234"
    assert isinstance(from_file, Secret) and from_file.reveal() == "canary-file-5678"
    for secret in (from_env, from_file):
        assert "canary" not in repr(secret) + str(secret) + f"{secret!r}"
    assert SecretRef(env="RYPSOK_TEST_UNSET_VARIABLE").resolve() is None
    assert "give exactly one" in refusal(
        {"schema_version": 1, "engines": {"wikipedia": {"api_key": {"env": "A", "file": "b"}}}}
    )


@pytest.mark.req("REQ-ENG-004")
def test_unknown_engine_id_is_refused_at_startup() -> None:
    """REQ-ENG-004: an engine id with no driver stops start-up, listing the known ids."""
    message = refusal({"schema_version": 1, "engines": {"altavista": {"enabled": True}}})
    assert "engines.altavista" in message and "no such engine" in message
    message = refusal({"schema_version": 1, "search": {"preference": ["altavista"]}})
    assert "search.preference" in message


@pytest.mark.req("REQ-CFG-001")
def test_configuration_reference_page_matches_the_schema() -> None:
    """REQ-CFG-001: docs/configuration.md documents every key with its default and bound."""
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    table = reference_table()
    assert table in page, "docs/configuration.md is stale: run `make docs`"
    for key in ("engines.<id>.endpoint", "egress.allow", "privacy.credential_check",
                "output.structured_content", "tools.engine_status", "fetch.strict",
                "operator.contact", "http.keys[].key", "search.deadline_ms"):  # fmt: skip
        assert f"| {key} |" in table


@pytest.mark.req("REQ-OPS-001", "REQ-CFG-005")
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("schema_version = 7\n", "schema_version"),
        ("schema_version = 1\n[search]\ndeadline_ms = 99\n", "search.deadline_ms"),
        ("schema_version = 1\n[nonsense]\nx = 1\n", "nonsense"),
        ("schema_version = 1\n[engines.github]\napi_key = 'ghp_inline'\n", "engines.github"),
        ("schema_version = [\n", "not valid TOML"),
    ],
)
def test_check_exits_1_and_names_the_key(tmp_path: pathlib.Path, text: str, expected: str) -> None:
    """REQ-OPS-001, REQ-CFG-005: `rypsok check` exits 1 on a configuration error."""
    path = write_config(tmp_path, text)
    run = subprocess.run(
        [sys.executable, "-m", "rypsok", "check", "--config", str(path)],
        capture_output=True, text=True, env=child_env(), timeout=30, check=False,
    )  # fmt: skip
    assert run.returncode == 1
    assert expected in run.stderr
    assert "ghp_inline" not in run.stderr + run.stdout


@pytest.mark.req("REQ-OPS-001")
def test_command_line_exit_codes() -> None:
    """REQ-OPS-001: success 0, usage error 2, --version prints the version."""

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "rypsok", *args],
            capture_output=True, text=True, env=child_env(), timeout=30, check=False,
        )  # fmt: skip

    version = run("--version")
    assert version.returncode == 0 and re.fullmatch(r"rypsok \d+\.\d+\.\d+\n", version.stdout)
    assert run("check").returncode == 0
    assert run("frobnicate").returncode == 2
    assert run("serve", "--transport", "carrier-pigeon").returncode == 2
    http = run("serve", "--transport", "http")  # no keys configured: a configuration error
    assert http.returncode == 1 and "http.keys" in http.stderr


@pytest.mark.req("REQ-CFG-003")
def test_defaults_builder_matches_parse_of_minimal_file() -> None:
    """REQ-CFG-003: a file with only schema_version is the same as no file."""
    assert config_from({}) == Config()
