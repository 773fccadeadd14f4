"""The external contract changes only with a changelog entry (REQ-MAIN-006, REQ-MCP-006)."""

from __future__ import annotations

import importlib.util
import json
import pathlib
from types import ModuleType

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
UPDATE = (
    "The external contract changed. Describe the change in the top section of CHANGELOG.md "
    "(name each added or removed term in backticks), then run `make contract-snapshot`."
)


def _snapshot_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "contract_snapshot", ROOT / "tools" / "contract_snapshot.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SNAPSHOT_TOOL = _snapshot_tool()


def _committed() -> dict[str, object]:
    loaded: dict[str, object] = json.loads(SNAPSHOT_TOOL.SNAPSHOT.read_text(encoding="utf-8"))
    return loaded


@pytest.mark.req("REQ-MAIN-006", "REQ-MCP-006", "REQ-MCP-008")
def test_the_generated_tool_definitions_equal_the_committed_snapshot() -> None:
    """REQ-MAIN-006: names, parameters, fields, outcomes and error kinds match the snapshot."""
    current = SNAPSHOT_TOOL.definitions()
    committed = _committed()
    changed = sorted(SNAPSHOT_TOOL.terms(current) ^ SNAPSHOT_TOOL.terms(committed))
    assert not changed, f"{UPDATE} Changed terms: {changed}"
    assert current == committed, f"{UPDATE} (descriptions, schemas or revisions differ)"


@pytest.mark.req("REQ-MAIN-006")
def test_every_term_of_the_contract_is_named_in_the_changelog() -> None:
    """REQ-MAIN-006: each tool, parameter, field and vocabulary term is in CHANGELOG.md."""
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    terms = SNAPSHOT_TOOL.terms(_committed())
    missing = sorted(t for t in terms if f"`{SNAPSHOT_TOOL.named(t)}`" not in changelog)
    assert not missing, f"CHANGELOG.md does not name: {missing}"


@pytest.mark.req("REQ-MCP-006")
def test_the_release_notes_list_every_protocol_revision_served() -> None:
    """REQ-MCP-006: each revision the SDK serves is listed in the changelog's release notes."""
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    revisions = _committed()["protocol_revisions"]
    assert isinstance(revisions, dict)
    served = [r for group in revisions.values() for r in group]
    assert served
    assert all(f"`{revision}`" in changelog for revision in served), served


@pytest.mark.req("REQ-MAIN-006")
def test_a_changed_term_is_refused_until_the_changelog_names_it() -> None:
    """REQ-MAIN-006: `make contract-snapshot` refuses a new parameter the changelog omits."""
    old = {"tool web_search", "parameter web_search.query"}
    new = old | {"parameter web_search.safe_search"}
    assert SNAPSHOT_TOOL.unannounced(old, new, "Nothing yet.\n") == [
        "parameter web_search.safe_search"
    ]
    assert SNAPSHOT_TOOL.unannounced(old, new, "Added `safe_search` to web_search.\n") == []
    assert SNAPSHOT_TOOL.unannounced(new, old, "Nothing yet.\n") == [
        "parameter web_search.safe_search"
    ]
