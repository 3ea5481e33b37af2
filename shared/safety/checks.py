"""The memory safety filter: whether a text may be written to memory by the assistant.

Every automated memory write (the inline memory tools, background extraction, curation) runs
its text through `check_text` or `ensure_safe` first, and the file it would make through
`ensure_safe_entries` (a secret split over entries); the operator's own edits do not. The
filter is deterministic and pure: the verdict depends on the text alone, and a refusal names
a rule id and the kind of thing found, never the text. Rules match the folded text
(`engine.normalize`: NFKC, look-alike characters as ASCII, no invisible characters); what is
stored is the text as written.

docs/safety.md lists the rules in the order they are tried, what passes on purpose, the
known limits and how the rules stay fast; `RULES` maps each rule id to its description. The
package: `engine` (the scanned text, the rule table, the token-rule builder), then one module
per area, in check order: `credentials`, `providers`, `labelled`, `configs`, `assignments`,
`prose`, `personal` and `facts`; `spread` joins a file's entries for the whole-file check.

Imports only shared.core.
"""

from __future__ import annotations

from collections.abc import Sequence
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
    spread,
)
from shared.safety.engine import Check, Rule, Scan, normalize

__all__ = [
    "RULES",
    "SafetyError",
    "Verdict",
    "check_entries",
    "check_text",
    "ensure_safe",
    "ensure_safe_entries",
]

_AREAS = (credentials, providers, labelled, configs, assignments, prose, personal, facts)
_CHECKS: tuple[Check, ...] = tuple(check for area in _AREAS for check in area.TABLE.checks)
# What the whole-file check tries on the entries glued together: the rules for a token or a
# number of a known shape (on their token-like parts, the token rules only), less those that
# read a key's armour and the text after it (a header mentioned in one entry and a public key
# in the next are not a private key). On an entry left open ("... password is") and the next,
# every rule but the health and financial facts (their words in one entry and a person in the
# next are no fact about that person).
_NOT_GLUED = frozenset({"private_key_block", "gcp_service_account_key"})
_PARTS_CHECKS: tuple[Check, ...] = tuple(
    (rule, check)
    for area in (credentials, providers, labelled)
    for rule, check in area.TABLE.checks
    if rule is None or rule.id not in _NOT_GLUED
)
_GLUED_CHECKS = _PARTS_CHECKS + tuple(personal.TABLE.checks)
_OPEN_CHECKS: tuple[Check, ...] = tuple(
    check
    for area in (credentials, providers, labelled, configs, assignments, prose, personal)
    for check in area.TABLE.checks
)
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
    across_entries: bool = False  # found only in the file's entries taken together


ALLOWED = Verdict(True)


class SafetyError(InvalidInput):
    """A write refused by the filter. The message names the rule, never the text."""

    code = "blocked_by_filter"

    def __init__(self, verdict: Verdict) -> None:
        if verdict.across_entries:
            message = (
                f"blocked by the safety filter (rule {verdict.rule}, across entries): with the "
                f"entries already saved, the text makes {verdict.reason}; leave it out"
            )
        else:
            message = (
                f"blocked by the safety filter (rule {verdict.rule}): the text contains "
                f"{verdict.reason}; leave it out"
            )
        super().__init__(message)
        self.rule = verdict.rule
        self.reason = verdict.reason


def check_text(text: str) -> Verdict:
    """The verdict for `text`: allowed, or the first rule (in table order) that blocks it."""
    if not isinstance(text, str):
        raise TypeError("check_text takes a str")
    if not text:
        return ALLOWED
    return _verdict(text, _CHECKS)


def _verdict(text: str, checks: tuple[Check, ...]) -> Verdict:
    scan = Scan(normalize(text))
    for rule, check in checks:
        found = check(scan)
        if found:
            hit = rule if rule is not None else found
            assert isinstance(hit, Rule)
            return Verdict(False, hit.id, hit.reason)
    return ALLOWED


def _joined_verdict(entries: Sequence[str]) -> Verdict:
    texts = [(spread.glued(entries), _GLUED_CHECKS), (spread.parts(entries), _PARTS_CHECKS)]
    texts += [(text, _OPEN_CHECKS) for text in spread.continued(entries)]
    for text, checks in texts:
        verdict = _verdict(text, checks)
        if not verdict.allowed:
            return Verdict(False, verdict.rule, verdict.reason, across_entries=True)
    return ALLOWED


def check_entries(entries: Sequence[str], before: Sequence[str] = ()) -> Verdict:
    """The verdict for a memory file that would hold `entries`, written over one that held
    `before`: each new entry on its own (`check_text`), then the entries taken together
    (`spread`), so a secret split over two entries is refused as a whole. What the file
    already held together before the write (an operator's own edit) is not held against it."""
    known = set(before)
    for entry in entries:
        if entry not in known:
            verdict = check_text(entry)
            if not verdict.allowed:
                return verdict
    if len(entries) < 2 or all(entry in known for entry in entries):
        return ALLOWED
    verdict = _joined_verdict(entries)
    if verdict.allowed or not _joined_verdict(before).allowed:
        return ALLOWED
    return verdict


def ensure_safe(text: str) -> None:
    """Raise SafetyError if `text` may not be written to memory."""
    verdict = check_text(text)
    if not verdict.allowed:
        raise SafetyError(verdict)


def ensure_safe_entries(entries: Sequence[str], before: Sequence[str] = ()) -> None:
    """Raise SafetyError if a memory file may not go from `before` to `entries`."""
    verdict = check_entries(entries, before)
    if not verdict.allowed:
        raise SafetyError(verdict)
