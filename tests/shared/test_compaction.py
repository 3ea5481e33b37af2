"""Auto-summarization planning: estimates, the 80% trigger, boundaries and summary state."""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from shared.chat.compaction import (
    KEEP_USER_TURNS,
    THRESHOLD,
    SummaryState,
    apply_summary,
    context_usage,
    current_summary,
    estimate_tokens,
    find_boundary,
    plan_compaction,
    summary_request,
    to_model_messages,
)

Record = dict[str, Any]


class History:
    """Builds session message records with predictable ids and sizes."""

    def __init__(self) -> None:
        self.records: list[Record] = [{"type": "meta", "set": {"title": "t"}}]  # ignored
        self._ids: Iterator[int] = itertools.count(1)

    def add(self, role: str, content: Any, **extra: Any) -> Record:
        record: Record = {
            "type": "message",
            "id": f"m{next(self._ids):04d}",
            "role": role,
            "content": content,
            "created_at": "2026-07-05T09:15:00Z",
            **extra,
        }
        self.records.append(record)
        return record

    def turn(self, n: int, *, size: int = 40) -> None:
        self.add("user", f"U{n}".ljust(size, "."))
        self.add("assistant", f"A{n}".ljust(size, "."))

    def tool_turn(self, n: int, *, calls: int = 1, size: int = 40) -> None:
        self.add("user", f"U{n}".ljust(size, "."))
        ids = [f"call_{n}_{i}" for i in range(calls)]
        self.add(
            "assistant",
            None,
            tool_calls=[
                {"id": cid, "type": "function", "function": {"name": "read", "arguments": "{}"}}
                for cid in ids
            ],
        )
        for cid in ids:
            self.add("tool", f"result {cid}".ljust(size, "."), tool_call_id=cid)
        self.add("assistant", f"A{n}".ljust(size, "."))

    @property
    def messages(self) -> list[Record]:
        return [r for r in self.records if r.get("type") == "message"]


def user_turns(records: Sequence[Mapping[str, Any]]) -> int:
    return sum(1 for r in records if r["role"] == "user")


def assert_no_split(
    plan_kept: Sequence[Mapping[str, Any]], summarized: Sequence[Mapping[str, Any]]
) -> None:
    kept_calls = {
        call["id"]
        for r in plan_kept
        if r["role"] == "assistant"
        for call in r.get("tool_calls") or ()
    }
    summarized_calls = {
        call["id"]
        for r in summarized
        if r["role"] == "assistant"
        for call in r.get("tool_calls") or ()
    }
    for record in plan_kept:
        if record["role"] == "tool":
            assert record["tool_call_id"] in kept_calls
    for record in summarized:
        if record["role"] == "tool":
            assert record["tool_call_id"] in summarized_calls


# --- estimates -----------------------------------------------------------------------------


def test_estimate_tokens_counts_four_characters_per_token() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens(None) == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2  # rounded up
    messages: list[Record] = [
        {"role": "user", "content": "x" * 40},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "abcd", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "y" * 10},
        {"role": "user", "content": [{"type": "text", "text": "z" * 8}, {"type": "image_url"}]},
    ]
    assert estimate_tokens(messages) == (40 + 4 + 2 + 10 + 8 + 3) // 4
    flat_call = [{"role": "assistant", "tool_calls": [{"name": "ab", "arguments": {"k": 1}}]}]
    assert estimate_tokens(flat_call) == 3  # "ab" + '{"k":1}' = 9 chars, rounded up


def test_context_usage_includes_the_system_prompt() -> None:
    usage = context_usage("s" * 400, [{"role": "user", "content": "u" * 400}], 1000)
    assert (usage.tokens, usage.window, usage.percent) == (200, 1000, 20.0)
    assert usage.to_dict() == {"tokens": 200, "window": 1000, "percent": 20.0}
    unbounded = context_usage("s" * 400, [], None)
    assert (unbounded.tokens, unbounded.window, unbounded.percent) == (100, None, None)
    assert not unbounded.over_threshold
    with pytest.raises(ValueError, match="positive number of tokens"):
        context_usage("", [], 0)


# --- the trigger ---------------------------------------------------------------------------


def six_turns() -> History:
    history = History()
    for n in range(1, 7):
        history.turn(n)  # 20 tokens per turn, 120 in all
    return history


def test_threshold_is_eighty_percent() -> None:
    assert THRESHOLD == 0.8
    assert KEEP_USER_TURNS == 3


def test_no_compaction_without_a_window() -> None:
    history = six_turns()
    assert (
        plan_compaction(
            history.records,
            system_prompt="s" * 10_000,
            window=None,
            previous_summary=None,
            summarized_upto=None,
        )
        is None
    )


def test_no_compaction_below_eighty_percent() -> None:
    history = six_turns()
    assert estimate_tokens(history.messages) == 120
    assert context_usage("", history.messages, 151).percent == 79.5
    plan = plan_compaction(
        history.records, system_prompt="", window=151, previous_summary=None, summarized_upto=None
    )
    assert plan is None


def test_compaction_starts_at_exactly_eighty_percent() -> None:
    history = six_turns()
    plan = plan_compaction(
        history.records, system_prompt="", window=150, previous_summary=None, summarized_upto=None
    )
    assert plan is not None
    assert plan.usage.percent == 80.0


def test_system_prompt_counts_toward_the_trigger() -> None:
    history = six_turns()
    kwargs: dict[str, Any] = {"window": 200, "previous_summary": None, "summarized_upto": None}
    assert plan_compaction(history.records, system_prompt="", **kwargs) is None
    assert plan_compaction(history.records, system_prompt="s" * 160, **kwargs) is not None


def test_keeps_exactly_the_last_three_user_turns() -> None:
    history = six_turns()
    plan = plan_compaction(
        history.records, system_prompt="", window=150, previous_summary=None, summarized_upto=None
    )
    assert plan is not None
    assert user_turns(plan.kept) == 3
    assert plan.kept[0]["role"] == "user"
    assert plan.kept[0]["content"].startswith("U4")
    assert [r["content"][:2] for r in plan.to_summarize] == ["U1", "A1", "U2", "A2", "U3", "A3"]
    assert plan.covered_through == plan.to_summarize[-1]["id"]
    assert list(plan.to_summarize) + list(plan.kept) == history.messages
    assert plan.previous_summary is None


def test_three_or_fewer_user_turns_leave_nothing_to_summarize() -> None:
    history = History()
    for n in range(1, 4):
        history.turn(n, size=400)
    plan = plan_compaction(
        history.records, system_prompt="", window=100, previous_summary=None, summarized_upto=None
    )
    assert plan is None


def test_a_turn_full_of_tool_calls_is_never_split() -> None:
    # Turn 4 has many tool results: a naive "keep the last N messages" cut lands between an
    # assistant tool call and its results.
    history = History()
    history.turn(1)
    history.turn(2)
    history.tool_turn(3, calls=2)
    history.tool_turn(4, calls=5)
    history.turn(5)
    history.tool_turn(6, calls=3)
    messages = history.messages
    naive_kept = messages[-12:]
    assert naive_kept[0]["role"] == "tool"  # the naive cut would orphan a result

    plan = plan_compaction(
        history.records, system_prompt="", window=200, previous_summary=None, summarized_upto=None
    )
    assert plan is not None
    assert plan.kept[0]["role"] == "user"
    assert plan.kept[0]["content"].startswith("U4")
    assert user_turns(plan.kept) == 3
    assert_no_split(plan.kept, plan.to_summarize)
    model = apply_summary(
        history.records,
        SummaryState.from_plan(plan, "summary"),
    )
    assert model[0]["role"] == "user"
    calls = {c["id"] for m in model if m["role"] == "assistant" for c in m.get("tool_calls", [])}
    assert all(m["tool_call_id"] in calls for m in model if m["role"] == "tool")


def test_boundary_moves_back_when_a_malformed_history_straddles_a_user_message() -> None:
    # An interrupted turn: the tool result arrived after the user had already spoken again.
    history = History()
    history.turn(1)
    history.add("user", "U2".ljust(40, "."))
    history.add(
        "assistant",
        None,
        tool_calls=[{"id": "late", "type": "function", "function": {"name": "f", "arguments": ""}}],
    )
    history.add("user", "U3".ljust(40, "."))
    history.add("tool", "late result".ljust(40, "."), tool_call_id="late")
    history.add("assistant", "A3".ljust(40, "."))
    history.turn(4)
    history.turn(5)
    messages = history.messages
    naive = [i for i, m in enumerate(messages) if m["role"] == "user"][-3]
    assert messages[naive]["content"].startswith("U3")  # would separate "late" from its call
    boundary = find_boundary(messages)
    assert messages[boundary]["content"].startswith("U2")
    plan = plan_compaction(
        history.records, system_prompt="", window=100, previous_summary=None, summarized_upto=None
    )
    assert plan is not None
    assert [r["content"][:2] for r in plan.to_summarize] == ["U1", "A1"]
    assert_no_split(plan.kept, plan.to_summarize)


# --- running summary -------------------------------------------------------------------------


def test_summary_request_asks_for_a_running_summary() -> None:
    history = History()
    history.tool_turn(1)
    for n in range(2, 6):
        history.turn(n)
    plan = plan_compaction(
        history.records, system_prompt="", window=100, previous_summary=None, summarized_upto=None
    )
    assert plan is not None
    request = summary_request(plan)
    assert [m["role"] for m in request] == ["system", "user"]
    system = request[0]["content"]
    for section in ("Decisions", "Facts", "Changed files", "Open tasks", "previous summary"):
        assert section in system
    user = request[1]["content"]
    assert "(none yet)" in user
    assert "U1" in user
    assert "A1" in user
    assert "U2" in user
    assert "[assistant calls tool read]" in user
    assert "[tool result: read]" in user
    assert "U3" not in user  # kept verbatim, not summarized
    json.dumps(request)  # plain JSON, ready for the client


def test_previous_summary_feeds_the_next_compaction() -> None:
    history = six_turns()
    first = plan_compaction(
        history.records, system_prompt="", window=150, previous_summary=None, summarized_upto=None
    )
    assert first is not None
    moment = datetime(2026, 7, 5, 9, 15, tzinfo=UTC)
    state = SummaryState.from_plan(first, "  FIRST SUMMARY  ", now=moment)
    assert state.to_dict() == {
        "summary": "FIRST SUMMARY",
        "covered_through": first.to_summarize[-1]["id"],
        "created_at": "2026-07-05T09:15:00Z",
    }
    assert SummaryState.from_dict(state.to_dict()) == state

    for n in range(7, 10):
        history.turn(n)
    prompt = "# Summary of earlier conversation\n\nFIRST SUMMARY"
    second = plan_compaction(
        history.records,
        system_prompt=prompt,
        window=150,
        previous_summary=state.summary,
        summarized_upto=state.covered_through,
    )
    assert second is not None
    assert second.previous_summary == "FIRST SUMMARY"
    # only what the first summary did not cover, and still the last three user turns kept
    assert [r["content"][:2] for r in second.to_summarize] == ["U4", "A4", "U5", "A5", "U6", "A6"]
    assert [r["content"][:2] for r in second.kept if r["role"] == "user"] == ["U7", "U8", "U9"]
    request = summary_request(second)[1]["content"]
    assert "<previous-summary>\nFIRST SUMMARY\n</previous-summary>" in request
    assert "U1" not in request
    assert "U4" in request


def test_usage_counts_only_messages_after_the_summary() -> None:
    history = six_turns()
    state = {"summary": "S", "covered_through": history.messages[5]["id"], "created_at": ""}
    # 3 live turns = 60 tokens: well under 80% of 150 although the whole history is 120
    plan = plan_compaction(
        history.records,
        system_prompt="",
        window=150,
        previous_summary=state["summary"],
        summarized_upto=state["covered_through"],
    )
    assert plan is None


def test_a_stale_summary_is_ignored() -> None:
    history = six_turns()
    plan = plan_compaction(
        history.records,
        system_prompt="",
        window=150,
        previous_summary="OLD",
        summarized_upto="not-in-this-session",
    )
    assert plan is not None
    assert plan.previous_summary is None
    assert plan.to_summarize[0]["content"].startswith("U1")
    stale = {"summary": "OLD", "covered_through": "gone", "created_at": ""}
    assert current_summary(history.records, stale) is None
    assert len(apply_summary(history.records, stale)) == len(history.messages)
    live = {"summary": "NEW", "covered_through": history.messages[1]["id"], "created_at": ""}
    assert current_summary(history.records, live) == SummaryState.from_dict(live)


# --- model messages ------------------------------------------------------------------------


def test_apply_summary_returns_model_messages_after_the_boundary() -> None:
    history = History()
    history.turn(1)
    history.turn(2)
    history.tool_turn(3)
    history.turn(4)
    history.turn(5)
    plan = plan_compaction(
        history.records, system_prompt="", window=100, previous_summary=None, summarized_upto=None
    )
    assert plan is not None
    state = SummaryState.from_plan(plan, "S")
    model = apply_summary(history.records, state)
    assert model == to_model_messages(plan.kept)
    assert model[0] == {"role": "user", "content": "U3".ljust(40, ".")}
    assert model[1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_3_0", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        ],
    }
    assert model[2] == {
        "role": "tool",
        "content": "result call_3_0".ljust(40, "."),
        "tool_call_id": "call_3_0",
    }
    assert all(set(m) <= {"role", "content", "tool_calls", "tool_call_id"} for m in model)
    assert apply_summary(history.records, None) == to_model_messages(history.messages)


def test_to_model_messages_normalizes_flat_tool_calls() -> None:
    records: list[Record] = [
        {"type": "meta", "set": {"pinned": True}},
        {"type": "message", "id": "a", "role": "assistant", "content": "",
         "tool_calls": [{"id": "c", "name": "grep", "arguments": {"q": "x"}}]},
        {"type": "message", "id": "b", "role": "tool", "tool_call_id": "c", "content": None},
        {"type": "message", "id": "s", "role": "system", "content": "not history"},
    ]  # fmt: skip
    assert to_model_messages(records) == [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c",
                    "type": "function",
                    "function": {"name": "grep", "arguments": '{"q":"x"}'},
                }
            ],
        },
        {"role": "tool", "content": "", "tool_call_id": "c"},
    ]


def test_the_callers_records_are_never_modified() -> None:
    history = History()
    history.turn(1)
    history.tool_turn(2, calls=2)
    history.add("user", [{"type": "text", "text": "U3 with parts"}])
    history.add("assistant", "A3")
    history.turn(4)
    history.turn(5)
    records = history.records
    before = copy.deepcopy(records)
    plan = plan_compaction(
        records, system_prompt="", window=60, previous_summary="P", summarized_upto=None
    )
    assert plan is not None
    summary_request(plan)
    state = SummaryState.from_plan(plan, "S")
    model = apply_summary(records, state)
    for message in model:  # mutating the output must not reach the records either
        message["role"] = "changed"
        if isinstance(message["content"], list):
            message["content"].append("x")
        for call in message.get("tool_calls", []):
            call["function"]["name"] = "changed"
    to_model_messages(records)
    assert records == before
    assert len(records) == len(before)
