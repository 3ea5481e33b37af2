"""The memory safety filter: the corpus both ways, refusals that never echo, determinism."""

from __future__ import annotations

import dataclasses
import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from shared.core.errors import InvalidInput
from shared.safety.checks import RULES, SafetyError, Verdict, check_text, ensure_safe
from tests.shared.safety_corpus import BLOCK, PASS, Case

ROOT = Path(__file__).resolve().parents[2]

FILLER = (
    "Thanks, that worked. For the next step I'd like to keep the answers short and use pnpm "
    "in the web folder. The CI runs on Python 3.11.7 and the deploy happens at 2025-03-14 "
    "10:30 CET from commit 3f2a9c1. Alice asked whether the listing endpoint can return 50 "
    "sessions in under 10 ms; the index is rebuilt nightly. The Pro plan costs $20/month. "
)


def pieces(secret: str, size: int = 6) -> list[str]:
    return [secret[i : i + size] for i in range(len(secret) - size + 1)]


def test_the_corpus_is_big_enough_and_covers_every_rule() -> None:
    assert len(BLOCK) >= 100
    assert len(PASS) >= 100
    assert {case.rule for case in BLOCK} == set(RULES)
    assert len({case.text for case in BLOCK}) == len(BLOCK)
    assert len(set(PASS)) == len(PASS)


def test_no_miss_among_the_strings_that_must_be_blocked() -> None:
    misses = [case.text for case in BLOCK if check_text(case.text).allowed]
    assert misses == []


def test_no_false_positive_among_the_strings_that_must_pass() -> None:
    blocked = [(text, check_text(text).rule) for text in PASS if not check_text(text).allowed]
    assert blocked == []


@pytest.mark.parametrize("case", BLOCK, ids=[f"{c.rule}-{i}" for i, c in enumerate(BLOCK)])
def test_each_blocked_string_reports_its_rule_and_never_echoes_the_secret(case: Case) -> None:
    verdict = check_text(case.text)
    assert verdict == Verdict(False, case.rule, RULES[case.rule]) or (
        not verdict.allowed and verdict.rule == case.rule
    )
    assert verdict.reason
    with pytest.raises(SafetyError) as raised:
        ensure_safe(case.text)
    error = raised.value
    assert isinstance(error, InvalidInput)
    assert error.code == "blocked_by_filter"
    assert error.rule == case.rule
    assert case.rule in error.message
    for told in (verdict.reason, error.message, str(error)):
        assert case.secret not in told
        assert [p for p in pieces(case.secret) if p in told] == []


@pytest.mark.parametrize("text", PASS)
def test_each_ordinary_string_passes(text: str) -> None:
    assert check_text(text) == Verdict(True, None, None)
    ensure_safe(text)  # does not raise


@pytest.mark.parametrize("case", BLOCK, ids=[f"{c.rule}-{i}" for i, c in enumerate(BLOCK)])
def test_a_secret_inside_chat_sized_text_is_still_found(case: Case) -> None:
    where = len(case.text) % 3  # start, middle or end of the message
    before = FILLER * (where + 1)
    after = FILLER * (3 - where)
    text = f"{before}\n{case.text}\n{after}"
    assert len(text.encode()) >= 1000 or len(case.text) > 1000
    assert check_text(text).rule == case.rule


def test_ordinary_strings_stay_allowed_in_chat_sized_text() -> None:
    chunk: list[str] = []
    texts: list[str] = []
    for text in PASS:
        chunk.append(text)
        if sum(len(t) + 2 for t in chunk) > 1200:
            texts.append(".\n".join(chunk))
            chunk = []
    texts.append(".\n".join(chunk))
    assert [t for t in texts if not check_text(t).allowed] == []


def test_same_verdict_every_time_and_in_any_order() -> None:
    texts = [case.text for case in BLOCK] + PASS
    first = [check_text(t) for t in texts]
    again = [check_text(t) for t in reversed(texts)][::-1]
    assert first == again


@pytest.mark.slow
def test_same_verdicts_in_a_fresh_interpreter() -> None:
    sample = [case.text for case in BLOCK[::4]] + PASS[::4]
    script = (
        "import json, sys\n"
        "from shared.safety.checks import check_text\n"
        "texts = json.load(sys.stdin)\n"
        "print(json.dumps([[v.allowed, v.rule, v.reason] for v in map(check_text, texts)]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps(sample),
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
        timeout=60,
    ).stdout
    here = [[v.allowed, v.rule, v.reason] for v in map(check_text, sample)]
    assert json.loads(out) == here


def test_look_alike_characters_do_not_hide_a_secret() -> None:
    case = next(c for c in BLOCK if c.rule == "github_token")
    secret = case.secret
    hidden = case.text.replace(secret, secret[:6] + "\u200b" + secret[6:])  # zero-width space
    assert check_text(hidden).rule == "github_token"
    card = next(c.secret for c in BLOCK if c.rule == "payment_card" and " " in c.secret)
    wide = card.translate({ord(d): 0xFF10 + int(d) for d in "0123456789"})  # full-width
    assert check_text(f"card {wide}").rule == "payment_card"
    assert check_text("\u201cpassword\u201d: \u201cZq8vN3xK1pR7tW2y\u201d").rule == (
        "password_assignment"
    )


def test_placeholders_and_partial_tokens_pass() -> None:
    for text in (
        "OPENAI_API_KEY=sk-...",
        "ANTHROPIC_API_KEY=<your-api-key>",
        "GITHUB_TOKEN=${GITHUB_TOKEN}",
        "password: ********",
        "postgres://app:${DB_PASSWORD}@db/eonyx",
        "gh" + "p_" + "0" * 36,
        "AKIA" + "X" * 16,
    ):
        assert check_text(text).allowed, text


def test_the_verdict_is_a_frozen_value() -> None:
    verdict = check_text("I prefer concise answers")
    with pytest.raises(dataclasses.FrozenInstanceError):
        verdict.allowed = False  # type: ignore[misc]


def test_empty_text_passes_and_other_types_are_refused() -> None:
    assert check_text("") == Verdict(True)
    with pytest.raises(TypeError):
        check_text(b"password=hunter22")  # type: ignore[arg-type]


def test_nothing_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    for case in BLOCK[:20]:
        check_text(case.text)
        with pytest.raises(SafetyError):
            ensure_safe(case.text)
    assert caplog.records == []


def test_every_rule_has_a_fixed_description_without_digits() -> None:
    for rule, reason in RULES.items():
        assert rule.isidentifier()
        assert rule.islower()
        assert reason
        assert not any(c.isdigit() for c in reason)
