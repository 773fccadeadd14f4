"""Examples in the documentation are checked: they parse and pass `rypsok check`."""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys
import tomllib

import pytest

from rypsok.core import contract
from rypsok.core.config import parse_config
from rypsok.core.engines.registry import known_ids
from tests.mcp.http_support import make_test_ca
from tests.support import child_env

ROOT = pathlib.Path(__file__).resolve().parents[1]


def fenced(path: pathlib.Path, language: str) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return re.findall(rf"```{language}\n(.*?)```", text, re.DOTALL)


def with_secret_files(block: str, directory: pathlib.Path) -> str:
    """The example with each `{ file = "..." }` pointing at a real file, as on a host."""
    directory.mkdir()
    # `check` loads the TLS pair, so TLS references get a real, matching pair.
    # Its names cover the examples' allowed_hosts, as the operator's certificate would.
    tls = make_test_ca(directory, extra_names=("search.example.org",))
    tls_files = {"tls_cert": tls.cert_file, "tls_key": tls.key_file}
    for key, name in re.findall(r'(\w+)\s*=\s*\{ file = "([^"]+)"', block):
        if key in tls_files:
            block = block.replace(f'file = "{name}"', f'file = "{tls_files[key]}"')
    for index, name in enumerate(dict.fromkeys(re.findall(r'file = "([^"]+)"', block))):
        if pathlib.Path(name).is_relative_to(directory):
            continue
        secret = directory / f"secret-{index}"
        secret.write_text(f"example-secret-{index}\n", encoding="utf-8")
        secret.chmod(0o600)  # as the operator keeps it
        block = block.replace(f'file = "{name}"', f'file = "{secret}"')
    return block


@pytest.mark.req("REQ-DOC-002", "REQ-CFG-001")
def test_configuration_examples_validate_and_pass_check(tmp_path: pathlib.Path) -> None:
    """REQ-DOC-002: every TOML example in docs/ and the README validates and passes check."""
    examples = [
        (path, block)
        for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
        for block in fenced(path, "toml")
    ]
    assert examples
    for number, (path, block) in enumerate(examples):
        parse_config(tomllib.loads(block), known_ids())
        runnable = with_secret_files(block, tmp_path / f"secrets-{number}")
        config = tmp_path / f"example-{number}.toml"
        config.write_text(runnable, encoding="utf-8")
        # Secrets the example references by name are given, as an operator would
        # (a URL-valued one in the form its key requires).
        secrets = {
            name: "redis://127.0.0.1:6379/0" if name.endswith("_URL") else f"example-{name}"
            for name in re.findall(r'env = "(\w+)"', block)
        }
        run = subprocess.run(
            [sys.executable, "-m", "rypsok", "check", "--config", str(config)],
            capture_output=True, text=True, timeout=60, check=False, env=child_env(**secrets),
        )  # fmt: skip
        assert run.returncode == 0, (path.name, run.stderr[-500:])


@pytest.mark.req("REQ-DOC-002", "REQ-DEP-001")
def test_host_entries_have_the_shape_a_host_reads() -> None:
    """REQ-DOC-002: the README's MCP host entry parses and starts rypsok serve."""
    entries = [json.loads(block) for block in fenced(ROOT / "README.md", "json")]
    servers = [e["mcpServers"]["rypsok"] for e in entries if "mcpServers" in e]
    assert servers
    for server in servers:
        assert server["command"].endswith("rypsok") and server["args"][0] == "serve"
        assert all(isinstance(v, str) for v in server.get("env", {}).values())


@pytest.mark.req("REQ-ERR-002", "REQ-SEC-016", "REQ-CTX-002")
def test_vocabulary_page_names_every_term_of_the_contract() -> None:
    """REQ-ERR-002: docs/vocabulary.md explains every outcome, error kind, notice and reason."""
    page = (ROOT / "docs" / "vocabulary.md").read_text(encoding="utf-8")
    vocabularies = (contract.Outcome, contract.ErrorKind, contract.NoticeCode,
                    contract.DeniedReason, contract.UnavailableReason)  # fmt: skip
    missing = [term.value for vocabulary in vocabularies for term in vocabulary
               if f"`{term.value}`" not in page]  # fmt: skip
    assert not missing, missing
