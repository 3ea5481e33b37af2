"""The one text rule: what it refuses, and how stored text is shown on a terminal."""

from __future__ import annotations

import re

import pytest

from shared.core import text


@pytest.mark.parametrize(
    ("value", "single_line", "found"),
    [
        ("plain text, accents é and emoji 🎉", True, None),
        ("two\nlines\tand tabs\r\n", False, None),
        ("two\nlines", True, "contains a tab or line break (U+000A) at position 3"),
        ("a\x00b", False, "contains a control character (U+0000) at position 1"),
        ("\x1b[31m", False, "contains a control character (U+001B) at position 0"),
        ("x\x9b", False, "contains a control character (U+009B) at position 1"),
        (
            "abc\u202eexe",
            False,
            "contains a bidirectional control character (U+202E) at position 3",
        ),
        ("\ud800", False, "contains a lone surrogate (U+D800) at position 0"),
    ],
)
def test_problem_names_the_first_refused_character(
    value: str, single_line: bool, found: str | None
) -> None:
    described = text.problem(value, single_line=single_line)
    assert (described if found is None else (described or "")[: len(found)]) == found


def test_the_documented_patterns_agree_with_the_rule() -> None:
    for value in ("ok", "é 🎉", "a\x00", "a\x1b", "a\u2066", "a\x85", "a\nb", "a\tb"):
        for single_line, pattern in (
            (True, text.SINGLE_LINE_PATTERN),
            (False, text.MULTI_LINE_PATTERN),
        ):
            allowed = re.fullmatch(pattern, value) is not None
            assert allowed == (text.problem(value, single_line=single_line) is None), value


def test_printable_escapes_what_a_terminal_would_obey() -> None:
    assert text.printable("\x1b[2Jred\x07 \u202eexe\tx") == "\\x1b[2Jred\\x07 \\u202eexe\\tx"
    assert text.printable("one\r\ntwo\rX\tY", multiline=True) == "one\ntwo\\rX\tY"


def test_derived_text_is_cleaned_and_the_index_copy_drops_nul() -> None:
    assert text.strip_forbidden("a\tb\n\x07c", single_line=True) == "a b c"
    assert text.for_index("a\x00b\ud800") == "ab\ufffd"
