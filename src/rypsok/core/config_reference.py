"""The reference table of docs/configuration.md, rendered from the configuration models.

Every key with its type, default, bound and meaning comes from the pydantic
models of `rypsok.core.config`, so the table cannot drift from what `check`
accepts; a test fails when docs/configuration.md differs from it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel

from rypsok.core.config import Config, EngineConfig, EngineModels, HttpKey, SecretRef

_Row = tuple[str, str, str, str, str]


def _type_name(annotation: Any) -> str:
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        return " or ".join(f'"{a}"' if isinstance(a, str) else str(a) for a in args)
    if origin is tuple:
        return f"list of {_type_name(args[0])}"
    if args and type(None) in args:
        return " or ".join(_type_name(a) for a in args if a is not type(None)) + " (optional)"
    if annotation is SecretRef:
        return "secret reference"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "table"  # HttpKey, OAuthConfig: tables of their own
    return {bool: "boolean", int: "integer", str: "string"}.get(annotation, str(annotation))


def _toml_value(value: Any) -> str:
    if value is None:
        return "(unset)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return str(value)


def _rows(model: type[BaseModel], prefix: str) -> Iterator[_Row]:
    for name, field in model.model_fields.items():
        key = f"{prefix}{name}"
        annotation = field.annotation
        if (
            isinstance(annotation, type)
            and issubclass(annotation, BaseModel)
            and annotation is not SecretRef
        ):
            yield from _rows(annotation, f"{key}.")
            continue
        bounds = [m for m in field.metadata if hasattr(m, "ge") or hasattr(m, "le")]
        low = next((m.ge for m in bounds if getattr(m, "ge", None) is not None), None)
        high = next((m.le for m in bounds if getattr(m, "le", None) is not None), None)
        bound = f"{low}–{high}" if low is not None else ""
        default = "(required)" if field.is_required() else _toml_value(field.get_default())
        yield key, _type_name(annotation), default, bound, field.description or ""


def reference_rows(engine_models: EngineModels | None = None) -> list[_Row]:
    """Every key with its type, default, bound and meaning; engines as `engines.<id>`.

    With the registry's engine models, each engine's own typed settings follow
    as `engines.<that id>.<key>` rows, at the end.
    """
    rows = [r for r in _rows(Config, "") if r[0] != "engines"]
    rows += list(_rows(EngineConfig, "engines.<id>."))
    rows += [(f"http.keys[].{r[0]}", *r[1:]) for r in _rows(HttpKey, "")]
    rows = [r for r in rows if not r[0].startswith("http.keys.")]
    for engine_id, model in sorted((engine_models or {}).items()):
        own = [r for r in _rows(model, "") if r[0] not in EngineConfig.model_fields]
        rows += [(f"engines.{engine_id}.{r[0]}", *r[1:]) for r in own]
    return rows


def reference_table(engine_models: EngineModels | None = None) -> str:
    lines = ["| key | type | default | bound | meaning |", "|---|---|---|---|---|"]
    for key, type_name, default, bound, meaning in reference_rows(engine_models):
        cells = (key, type_name, default, bound, meaning)
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)
