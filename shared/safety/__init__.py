"""The memory safety filter: whether a text may be written to memory by the assistant.

Every automated memory write (the inline memory tools, background extraction, curation) runs
its text through `check_text` or `ensure_safe` first; the operator's own edits do not. The
filter is deterministic and pure: the verdict depends on the text alone, and a refusal names
a rule id and the kind of thing found, never the text.

docs/safety.md lists the rules in the order they are tried, what passes on purpose, the
known limits and how the rules stay fast; `RULES` maps each rule id to its description. The
package: `engine` (the scanned text, the rule table, the token-rule builder), then one module
per area, in check order: `credentials`, `providers`, `labelled`, `configs`, `assignments`,
`prose`, `personal` and `facts`.

Imports only shared.core.
"""

from __future__ import annotations

from dataclasses import dataclass

from shared.core.errors import InvalidInput
from shared.safety import (
    assignments,
    configs,
    credentials,
    facts,
    labelled,
    personal,
    prose,
    providers,
)
from shared.safety.engine import Check, Rule, Scan, normalize

__all__ = ["RULES", "SafetyError", "Verdict", "check_text", "ensure_safe"]

_AREAS = (credentials, providers, labelled, configs, assignments, prose, personal, facts)
_CHECKS: tuple[Check, ...] = tuple(check for area in _AREAS for check in area.TABLE.checks)
RULES: dict[str, str] = {}  # rule id -> what it finds, in check order
for _area in _AREAS:
    for _rule in _area.TABLE.rules:
        RULES.setdefault(_rule.id, _rule.reason)


@dataclass(frozen=True)
class Verdict:
    """The filter's answer. `rule` and `reason` are None when the text is allowed."""

    allowed: bool
    rule: str | None = None
    reason: str | None = None


ALLOWED = Verdict(True)


class SafetyError(InvalidInput):
    """A write refused by the filter. The message names the rule, never the text."""

    code = "blocked_by_filter"

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(
            f"blocked by the safety filter (rule {verdict.rule}): the text contains "
            f"{verdict.reason}; leave it out"
        )
        self.rule = verdict.rule
        self.reason = verdict.reason


def check_text(text: str) -> Verdict:
    """The verdict for `text`: allowed, or the first rule (in table order) that blocks it."""
    if not isinstance(text, str):
        raise TypeError("check_text takes a str")
    if not text:
        return ALLOWED
    scan = Scan(normalize(text))
    for rule, check in _CHECKS:
        found = check(scan)
        if found:
            hit = rule if rule is not None else found
            assert isinstance(hit, Rule)
            return Verdict(False, hit.id, hit.reason)
    return ALLOWED


def ensure_safe(text: str) -> None:
    """Raise SafetyError if `text` may not be written to memory."""
    verdict = check_text(text)
    if not verdict.allowed:
        raise SafetyError(verdict)
