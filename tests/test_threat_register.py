"""The threat register is tied to real controls and real tests (M7)."""

from __future__ import annotations

import importlib.util
import pathlib
import subprocess
import sys
from types import ModuleType

ROOT = pathlib.Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "threat_register.py"
REGISTER = ROOT / "docs" / "threat-register.md"


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("threat_register", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["threat_register"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _entry(
    thr: str = "THR-01",
    control: str = "`rypsok.core.egress.ranges:judge_address`",
    tests: str = "`tests/core/egress/test_ranges.py::test_global_unicast_is_allowed`",
    boundary: str = "B3",
    requirements: str = "REQ-SEC-006",
) -> str:
    return (
        f"### {thr} A threat\n- **Boundary**: {boundary}\n- **Flow**: a flow\n"
        f"- **Threat**: a threat\n- **Control**: {control}\n- **Tests**: {tests}\n"
        f"- **Requirements**: {requirements}\n\n"
    )


def _problems(text: str) -> list[str]:
    problems: list[str] = _tool().check(text, ROOT)
    return problems


def test_the_register_holds_against_the_code_and_the_tests() -> None:
    """M7: every threat names controls that resolve and tests that exist; every control
    module and every boundary B1-B6 has a threat; THR-26/27 keep the SRS's meaning."""
    run = subprocess.run(
        [sys.executable, str(TOOL), "--register", str(REGISTER), "--root", str(ROOT)],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stdout
    assert "threats hold" in run.stdout


def test_a_missing_test_name_fails_the_check() -> None:
    """M7: the checker is not a rubber stamp: a register naming a test that does not exist
    fails, naming the threat and the test."""
    register = REGISTER.read_text(encoding="utf-8")
    planted = register + _entry(
        thr="THR-98", tests="`tests/core/egress/test_ranges.py::test_that_was_never_written`"
    )
    [problem] = _problems(planted)
    assert problem.startswith("THR-98 (line ")
    assert problem.endswith(
        "test 'tests/core/egress/test_ranges.py::test_that_was_never_written' does not exist"
    )


def test_a_missing_module_or_function_fails_the_check() -> None:
    """M7: a control that names a module or a function that does not exist fails."""
    register = REGISTER.read_text(encoding="utf-8")
    for control in (
        "`rypsok.core.egress.gone:judge_address`",
        "`rypsok.core.egress.ranges:judge_nothing`",
        "`tools/audit.py:not_there`",
        "`rypsok.core.egress.ranges`",
    ):
        problems = _problems(register + _entry(thr="THR-97", control=control))
        assert len(problems) == 1, (control, problems)
        assert f"control '{control.strip('`')}' does not resolve" in problems[0]


def test_a_control_module_without_a_threat_fails_the_check() -> None:
    """M7: every module that enforces a control must answer a threat."""
    tool = _tool()
    only_one = (
        _entry()
        + _entry(thr="THR-26", boundary="B1 B2 B4 B5 B6", requirements="REQ-SEC-022")
        + _entry(thr="THR-27", requirements="REQ-SEC-024")
    )
    problems = tool.check(only_one, ROOT)
    unanswered = {p.split()[2].rstrip(":") for p in problems if p.startswith("control module")}
    assert unanswered == tool.CONTROL_MODULES - {"rypsok.core.egress.ranges"}
    assert not [p for p in problems if not p.startswith("control module")]


def test_malformed_entries_and_lost_fixed_ids_fail_the_check() -> None:
    """M7: ids are THR-nn and unique, boundaries are B1-B6, THR-26/27 stay the SRS's."""
    register = REGISTER.read_text(encoding="utf-8")
    assert any("id must be" in p for p in _problems(register + _entry(thr="THR-7")))
    assert any("more than once" in p for p in _problems(register + _entry(thr="THR-01")))
    assert any("boundary must" in p for p in _problems(register + _entry(boundary="B9")))
    renamed = register.replace("### THR-27", "### THR-96")
    assert "THR-27: must stay the SRS's threat of REQ-SEC-024" in _problems(renamed)


def test_the_register_covers_the_threats_the_issue_lists() -> None:
    """M7: SSRF, injection, credentials, exhaustion, key theft, poisoning and supply chain
    each have at least one entry."""
    titles = " ".join(t.title.lower() for t in _tool().parse_register(REGISTER.read_text()))
    for topic in (
        "ssrf", "redirect", "rebinding", "tunnelled", "prompt injection", "hidden text",
        "errors, status and logs", "credentials", "compressed", "robots.txt", "call floods",
        "session", "slow", "key theft", "poisoning", "cross-caller", "supply",
    ):  # fmt: skip
        assert topic in titles, topic
