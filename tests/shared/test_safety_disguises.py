"""The filter sees through the easy disguises (issue 38): look-alike and invisible characters,
a secret split over a memory file's entries, a private key's body without its armour, and
passwords told in French, German and Spanish; ordinary texts of the same kinds still pass."""

from __future__ import annotations

import pytest

from shared.safety.checks import (
    SafetyError,
    Verdict,
    check_entries,
    check_text,
    ensure_safe_entries,
)
from shared.safety.engine import normalize
from tests.shared.safety_probes import DISGUISED, ORDINARY, SPLIT


@pytest.mark.parametrize(("what", "text", "rule"), DISGUISED, ids=[d[0] for d in DISGUISED])
def test_a_disguised_secret_is_refused_by_its_rule(what: str, text: str, rule: str) -> None:
    assert check_text(text).rule == rule
    assert check_entries(["Prefers short answers", text], ["Prefers short answers"]).rule == rule


@pytest.mark.parametrize(("what", "first", "second", "rule"), SPLIT, ids=[s[0] for s in SPLIT])
def test_a_secret_split_over_two_entries_is_refused_at_the_second(
    what: str, first: str, second: str, rule: str
) -> None:
    before = ["Prefers short answers", first]
    assert check_text(first).allowed
    assert check_text(second).allowed
    assert check_entries(before, ["Prefers short answers"]).allowed
    verdict = check_entries([*before, second], before)
    assert (verdict.allowed, verdict.rule, verdict.across_entries) == (False, rule, True)
    with pytest.raises(SafetyError) as raised:
        ensure_safe_entries([*before, second], before)
    message = raised.value.message
    assert message.startswith(f"blocked by the safety filter (rule {rule}, across entries): ")
    assert second not in message
    assert first not in message


def test_a_split_secret_is_found_whatever_separates_the_entries() -> None:
    """The check reads the entries, not the file: bullets, blank lines and the order of other
    entries around the two parts do not matter."""
    what, first, second, rule = SPLIT[0]
    assert check_entries(["Uses pnpm", first, second, "Node 22"], ["Uses pnpm"]).rule == rule
    assert check_entries([first, second], []).rule == rule


def test_a_split_the_file_already_held_does_not_block_later_writes() -> None:
    """What the operator typed into the file (the panel skips the filter) is theirs: the
    next assistant write is judged on what it adds."""
    _, first, second, _ = SPLIT[0]
    assert check_entries([first, second, "Node 22"], [first, second]) == Verdict(True)


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_of_the_same_kinds_passes(text: str) -> None:
    assert check_text(text) == Verdict(True)
    assert check_entries(["Prefers short answers", text], ["Prefers short answers"]).allowed


def test_ordinary_entries_pass_together_in_one_file() -> None:
    assert check_entries(ORDINARY, []) == Verdict(True)
    assert check_entries(list(reversed(ORDINARY)), []) == Verdict(True)


def test_folding_uses_the_unicode_confusables_data() -> None:
    # Cyrillic, Greek and Cherokee letters, a mathematical digit, a fullwidth colon, a
    # soft hyphen, a word joiner and a right-to-left mark
    assert normalize("\u0440\u0430ss\u03bf\u13b3\U0001d7d1\uff1a a\u00adb\u2060c\u200f") == (
        "passoW3: abc"
    )
    ascii_text = "nothing to fold here: ghp_ is only a prefix"
    assert normalize(ascii_text) is ascii_text
    assert normalize("caf\u00e9 contrase\u00f1a f\u00fcr") == "caf\u00e9 contrase\u00f1a f\u00fcr"
