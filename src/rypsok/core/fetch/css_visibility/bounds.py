"""The per-page budgets LIM-V1..V5 of the hidden-text check (docs/limits.md).

Read when a page is checked, not at import, so that a test may lower them.
When one is spent the check stops reading or matching and is reported as
partial (`HiddenStats.sheets_truncated`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rypsok.core import limits

# -- bounds -------------------------------------------------------------------------------


@dataclass(slots=True)
class _Budget:
    """LIM-V1..V5: what one page may make the engine read and match."""

    # Read when a page is checked, not at import, so that a test may lower them.
    sheet_bytes: int = field(default_factory=lambda: limits.STYLE_SHEET_MAX_BYTES)
    attribute_bytes: int = field(default_factory=lambda: limits.STYLE_ATTRIBUTE_MAX_BYTES)
    rules: int = field(default_factory=lambda: limits.STYLE_RULES)
    matches: int = field(default_factory=lambda: limits.SELECTOR_MATCHES)
    visits: int = field(default_factory=lambda: limits.SELECTOR_VISITS)
    truncated: bool = False

    def take(self, name: str, amount: int) -> bool:
        """Spend `amount` of one budget; False (and truncated) when it is not there."""
        left: int = getattr(self, name)
        if amount > left:
            self.truncated = True
            setattr(self, name, 0)
            return False
        setattr(self, name, left - amount)
        return True
