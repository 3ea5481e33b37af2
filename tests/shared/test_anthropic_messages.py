"""Reading an Anthropic Messages request into the facade's chat form: what a client such as
Claude Code sends (tool results with images and errors, thinking blocks, server tools) keeps
its meaning, and a resent answer is known by the key Eonyx saved it under."""

from __future__ import annotations

import pytest

from shared.core.errors import InvalidInput
from shared.integrations import facade
from shared.integrations.anthropic_messages import read_messages_request, tool_use

PDF = {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}
PNG = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}
CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "read_file", "arguments": '{"path": "a.png", "lines": [1, 2]}'},
}


def body(*messages: dict, **fields: object) -> dict:
    return {"model": "default", "max_tokens": 100, "messages": list(messages), **fields}


def test_a_resent_answer_hashes_as_the_answer_eonyx_gave() -> None:
    answer = {"role": "assistant", "content": "Let me look.", "tool_calls": [CALL]}
    blocks = [
        {"type": "thinking", "thinking": "...", "signature": "x"},
        {"type": "text", "text": "Let me look.", "cache_control": {"type": "ephemeral"}},
        tool_use(CALL),
    ]
    result = {"type": "tool_result", "tool_use_id": "call_1", "content": "ok"}
    chat = read_messages_request(
        body(
            {"role": "user", "content": "Open a.png"},
            {"role": "assistant", "content": blocks},
            {"role": "user", "content": [result]},
        )
    )
    resent = chat.messages[1]
    assert facade.head_key(resent) == facade.head_key(answer)


def test_tool_results_come_first_and_their_images_go_with_the_user() -> None:
    results = [
        {
            "type": "tool_result",
            "tool_use_id": "call_1",
            "content": [{"type": "text", "text": "a red square"}, {"type": "image", "source": PNG}],
        },
        {"type": "text", "text": "What is it?"},
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "A"}},
        {
            "type": "tool_result",
            "tool_use_id": "call_2",
            "content": "no such file",
            "is_error": True,
        },
    ]
    chat = read_messages_request(
        body(
            {"role": "user", "content": "Open both"},
            {"role": "assistant", "content": [tool_use(CALL), tool_use({**CALL, "id": "call_2"})]},
            {"role": "user", "content": results},
        )
    )
    tool, failed, user = chat.messages[2:]
    assert tool == {"role": "tool", "tool_call_id": "call_1", "content": "a red square"}
    assert failed == {"role": "tool", "tool_call_id": "call_2", "content": "Error: no such file"}
    assert [part["type"] for part in user["content"]] == ["text", "text", "image_url"]
    assert user["content"][1]["text"] == "A"  # a plain-text document
    assert user["content"][2]["image_url"]["url"] == "data:image/png;base64,iVBORw0KGgo="


def test_system_blocks_tools_and_choice_take_their_chat_forms() -> None:
    tools = [
        {"name": "Bash", "description": "Run", "input_schema": {"type": "object"}},
        {"type": "web_search_20250305", "name": "web_search"},
        {"type": "text_editor_20250728", "name": "str_replace_based_edit_tool"},
    ]
    chat = read_messages_request(
        body(
            {"role": "user", "content": "hi"},
            {"role": "system", "content": [{"type": "text", "text": "Three."}]},  # Claude Code's
            system=[{"type": "text", "text": "One."}, {"type": "text", "text": "Two."}],
            tools=tools,
            tool_choice={"type": "any", "disable_parallel_tool_use": True},
            stop_sequences=["END"],
            top_k=3,
        )
    )
    assert chat.instructions == "One.\n\nTwo.\n\nThree."
    assert [message["role"] for message in chat.messages] == ["user"]
    assert [tool["function"]["name"] for tool in chat.tools] == ["Bash"]
    assert chat.options["tool_choice"] == "required"
    assert chat.options["parallel_tool_calls"] is False
    assert chat.options["stop"] == ["END"]
    assert set(chat.ignored) == {
        "top_k",
        "tools[web_search_20250305]",
        "tools[text_editor_20250728]",
    }


@pytest.mark.parametrize(
    ("message", "param"),
    [
        ({"role": "tool", "content": "hi"}, "messages[0]"),
        (
            {"role": "user", "content": [{"type": "document", "source": {}}]},
            "messages[0].content[0]",
        ),
        (
            {"role": "user", "content": [{"type": "image", "source": {"type": "file"}}]},
            "messages[0].content[0]",
        ),
    ],
)
def test_what_would_change_the_meaning_is_refused(message: dict, param: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        read_messages_request(body(message))
    assert refused.value.param == param
