"""Teams' message size limit: long answers are cut where a reader would cut them."""

from __future__ import annotations

import httpx

from shared.integrations.teams.activities import split_text
from shared.integrations.teams.connector import MAX_RETRY_AFTER, retry_after


def test_a_short_answer_is_one_part() -> None:
    assert split_text("Hello.", limit=100) == ["Hello."]
    assert split_text("", limit=100) == [""]


def test_parts_fit_the_limit_in_bytes_and_keep_every_word() -> None:
    answer = " ".join(f"naïve-{i}-€" for i in range(2000))  # multi-byte characters
    parts = split_text(answer, limit=1000)
    assert all(len(part.encode()) <= 1000 for part in parts)
    assert " ".join(parts) == answer


def test_a_paragraph_break_is_preferred_to_a_space() -> None:
    first, second = "a" * 60 + " " + "b" * 30, "c" * 50
    assert split_text(f"{first}\n\n{second}", limit=120) == [first, second]


def test_a_text_without_spaces_is_cut_anyway() -> None:
    parts = split_text("x" * 250, limit=100)
    assert [len(p) for p in parts] == [100, 100, 50]


def test_retry_after_in_seconds_or_as_a_date() -> None:
    def wait(value: str) -> float | None:
        return retry_after(httpx.Response(429, headers={"Retry-After": value}))

    assert wait("2") == 2.0
    assert wait("100000") == MAX_RETRY_AFTER
    assert wait("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # already past
    assert wait("soon") is None
    assert retry_after(httpx.Response(429)) is None
