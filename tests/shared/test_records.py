"""A session file's records and the rules about messages, as shared/core/messages.py builds
and states them once for every package."""

from __future__ import annotations

from shared.core.messages import (
    calls_tools,
    exchanges,
    in_tool_step,
    is_final_answer,
    job_prompt,
    message_record,
    meta_record,
    supersede_record,
)

CALL = {"id": "c1", "type": "function", "function": {"name": "memory", "arguments": "{}"}}


def test_a_message_record_has_a_fresh_id_and_time_and_leaves_out_none() -> None:
    first = message_record("user", "hello", images=["a.png"], name=None)
    second = message_record("user", "hello")
    assert (first["type"], first["role"], first["content"]) == ("message", "user", "hello")
    assert first["images"] == ["a.png"]
    assert "name" not in first
    assert first["id"] != second["id"]
    assert first["created_at"].endswith("Z")


def test_meta_and_supersede_records_say_what_changed_and_what_they_take_out() -> None:
    assert meta_record({"title": "T"}, "2026-07-05T09:15:00Z") == {
        "type": "meta",
        "at": "2026-07-05T09:15:00Z",
        "set": {"title": "T"},
    }
    taken = [
        {"id": "u", "role": "user", "images": ["a.png", "b.png"]},
        {"id": "a", "role": "assistant", "tool_calls": [CALL]},
        {"id": "t", "role": "tool", "tool_call_id": "c1"},
    ]
    record = supersede_record(taken)
    assert (record["type"], record["ids"]) == ("supersede", ["u", "a", "t"])
    assert (record["messages"], record["images"]) == (2, 2)


def test_a_final_answer_calls_no_tool_and_a_tool_step_is_a_call_or_its_result() -> None:
    user = {"role": "user", "content": "hi"}
    calling = {"role": "assistant", "content": None, "tool_calls": [CALL]}
    result = {"role": "tool", "tool_call_id": "c1", "content": "ok"}
    answer = {"role": "assistant", "content": "done", "tool_calls": []}
    assert [is_final_answer(m) for m in (user, calling, result, answer)] == [0, 0, 0, 1]
    assert [in_tool_step(m) for m in (user, calling, result, answer)] == [0, 1, 1, 0]
    assert [calls_tools(m) for m in (user, calling, result, answer)] == [0, 1, 0, 0]
    (turn,) = exchanges([user, calling, result, answer])
    assert turn.answer is answer


def test_a_background_job_sends_its_instructions_then_its_material() -> None:
    assert job_prompt("Name it.", "User: hi") == [
        {"role": "system", "content": "Name it."},
        {"role": "user", "content": "User: hi"},
    ]
