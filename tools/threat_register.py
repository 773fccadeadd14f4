"""Check docs/threat-register.md against the code and the tests (M7).

Each threat is a `### THR-nn title` section with bullet fields. The check
fails when a threat names a control (`module:qualified.name`, or
`tools/script.py:function`) that does not resolve, a test
(`tests/path.py::test_name`) that is not defined, a boundary other than B1-B6;
when an id is malformed or repeated; when a boundary has no threat; or when a
module of CONTROL_MODULES is the control of no threat.

    python tools/threat_register.py [--register PATH] [--root DIR]

Exit status 0 when the register holds, 1 with one line per problem otherwise.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import importlib
import pathlib
import re
import sys
from collections.abc import Iterator

REGISTER = pathlib.Path("docs/threat-register.md")
BOUNDARIES = frozenset({"B1", "B2", "B3", "B4", "B5", "B6"})
# Ids the SRS itself gives (REQ-SEC-022, REQ-SEC-024): kept with their meaning.
FIXED_IDS = {"THR-26": "REQ-SEC-022", "THR-27": "REQ-SEC-024"}
# The modules that enforce a security control: each must answer some threat,
# so a new control cannot land without its entry. Kept here, not in the
# register, so deleting a row cannot silence the check.
CONTROL_MODULES = frozenset(
    {
        "rypsok.core.boundary.instructions",
        "rypsok.core.boundary.invisible",
        "rypsok.core.boundary.text",
        "rypsok.core.config",
        "rypsok.core.contract",
        "rypsok.core.egress.backend",
        "rypsok.core.egress.client",
        "rypsok.core.egress.policy",
        "rypsok.core.egress.ranges",
        "rypsok.core.engines.common",
        "rypsok.core.engines.queue",
        "rypsok.core.fetch.decode",
        "rypsok.core.fetch.extract",
        "rypsok.core.fetch.parse",
        "rypsok.core.fetch.pipeline",
        "rypsok.core.fetch.robots",
        "rypsok.core.headers",
        "rypsok.core.health",
        "rypsok.mcp.http.plan",
        "rypsok.core.invocation",
        "rypsok.core.logs",
        "rypsok.core.privacy.extractors",
        "rypsok.core.privacy.rules",
        "rypsok.core.privacy.scan",
        "rypsok.core.privacy.values",
        "rypsok.core.secret_files",
        "rypsok.core.search.aggregate",
        "rypsok.core.search.urls",
        "rypsok.mcp.http.auth",
        "rypsok.mcp.http.layers",
        "rypsok.mcp.http.oauth",
        "rypsok.core.cache.keys",
        "rypsok.core.fetch.css_visibility",
        "rypsok.mcp.stdio",
    }
)

_HEADING = re.compile(r"^### (\S+)\s+(.*)$")
_FIELD = re.compile(r"^- \*\*(\w[\w ]*)\*\*:\s*(.*)$")
_ID = re.compile(r"THR-\d{2}")
_CODE = re.compile(r"`([^`]+)`")


@dataclasses.dataclass
class Threat:
    id: str
    title: str
    line: int
    fields: dict[str, str] = dataclasses.field(default_factory=dict)

    def codes(self, name: str) -> list[str]:
        return _CODE.findall(self.fields.get(name, ""))


def parse_register(text: str) -> list[Threat]:
    """Every `### THR-nn` section with its `- **Field**: value` lines."""
    threats: list[Threat] = []
    for number, line in enumerate(text.splitlines(), start=1):
        heading = _HEADING.match(line)
        if heading:
            threats.append(Threat(heading.group(1), heading.group(2), number))
            continue
        field = _FIELD.match(line)
        if field and threats:
            threats[-1].fields[field.group(1).lower()] = field.group(2)
    return threats


def _resolves(control: str, root: pathlib.Path) -> bool:
    module_name, _, qualname = control.partition(":")
    if module_name.endswith(".py"):
        return _defined_in_file(root / module_name, qualname)
    try:
        target: object = importlib.import_module(module_name)
    except ImportError:
        return False
    for part in filter(None, qualname.split(".")):
        if not hasattr(target, part):
            return False
        target = getattr(target, part)
    return True


def _defined_in_file(path: pathlib.Path, name: str) -> bool:
    """A script's top-level function or class (tools/ is not an importable package)."""
    if not path.is_file():
        return False
    tree = ast.parse(path.read_text(encoding="utf-8"))
    kinds = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
    return any(isinstance(node, kinds) and node.name == name for node in tree.body)


@functools.cache
def _defined_tests(path: pathlib.Path) -> frozenset[str]:
    """Test function names of a module, top level and inside classes."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
            "test"
        ):
            names.add(node.name)
    return frozenset(names)


def _test_exists(node_id: str, root: pathlib.Path) -> bool:
    path_text, _, name = node_id.partition("::")
    name = name.split("[")[0].split("::")[-1]  # parameters and class prefixes
    path = root / path_text
    return bool(name) and path.is_file() and name in _defined_tests(path)


def _threat_problems(threat: Threat, root: pathlib.Path) -> Iterator[str]:
    where = f"{threat.id} (line {threat.line})"
    if not _ID.fullmatch(threat.id):
        yield f"{where}: the id must be THR- and two digits"
    boundaries = set(re.findall(r"B\d+", threat.fields.get("boundary", "")))
    if not boundaries or not boundaries <= BOUNDARIES:
        yield f"{where}: boundary must name one or more of B1-B6"
    for name in ("flow", "threat"):
        if not threat.fields.get(name, "").strip():
            yield f"{where}: the field '{name}' is missing"
    controls = threat.codes("control")
    if not controls:
        yield f"{where}: no control named"
    for control in controls:
        if ":" not in control or not _resolves(control, root):
            yield f"{where}: control '{control}' does not resolve (module:qualified.name)"
    tests = threat.codes("tests")
    if not tests:
        yield f"{where}: no test named"
    for node_id in tests:
        if not _test_exists(node_id, root):
            yield f"{where}: test '{node_id}' does not exist"


def check(text: str, root: pathlib.Path) -> list[str]:
    """Every problem of the register, one line each; empty when it holds."""
    threats = parse_register(text)
    problems = [p for threat in threats for p in _threat_problems(threat, root)]
    ids = [threat.id for threat in threats]
    problems += [
        f"{i}: the id is used more than once" for i in sorted(set(ids)) if ids.count(i) > 1
    ]
    for fixed, requirement in FIXED_IDS.items():
        entry = next((t for t in threats if t.id == fixed), None)
        if entry is None or requirement not in entry.fields.get("requirements", ""):
            problems.append(f"{fixed}: must stay the SRS's threat of {requirement}")
    covered = {b for t in threats for b in re.findall(r"B\d+", t.fields.get("boundary", ""))}
    problems += [f"boundary {b}: no threat crosses it" for b in sorted(BOUNDARIES - covered)]
    named = {c.partition(":")[0] for t in threats for c in t.codes("control")}
    problems += [f"control module {m}: no threat" for m in sorted(CONTROL_MODULES - named)]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--register", type=pathlib.Path, default=REGISTER)
    parser.add_argument("--root", type=pathlib.Path, default=pathlib.Path("."))
    args = parser.parse_args(argv)
    problems = check(args.register.read_text(encoding="utf-8"), args.root)
    for problem in problems:
        sys.stdout.write(f"threat register: {problem}\n")
    if not problems:
        count = len(parse_register(args.register.read_text(encoding="utf-8")))
        sys.stdout.write(f"threat register: {count} threats hold\n")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
