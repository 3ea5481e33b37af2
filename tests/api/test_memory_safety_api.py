"""The safety filter's disguises through the chat (issue 38): the model calls the memory
tool in a turn, and what the probe saved is refused while ordinary texts are saved as
written."""

from __future__ import annotations

import pytest

from tests.api.conftest import Chat
from tests.fake_llm import text, tool_call, tool_calls
from tests.shared.safety_probes import DISGUISED, ORDINARY, SPLIT


def add(chat: Chat, session_id: str, content: str) -> str:
    """One turn in which the model adds `content` to MEMORY.md; the tool's answer."""
    call = tool_call("manage_memory", {"action": "add", "content": content})
    chat.llm.script(tool_calls(call), text("Done."))
    response = chat.turn(session_id, content="remember that")
    assert response.status_code == 200, response.get_json()
    return chat.llm.requests[-1].messages[-1]["content"]


def memory(chat: Chat) -> str:
    return chat.rt.memory.read("agent", chat.user.user_id).content


@pytest.mark.parametrize(("what", "secret", "rule"), DISGUISED, ids=[d[0] for d in DISGUISED])
def test_a_disguised_secret_is_not_saved(chat: Chat, what: str, secret: str, rule: str) -> None:
    sid = chat.new_session()
    result = add(chat, sid, secret)
    assert result.startswith(f"error: not saved: blocked by the safety filter (rule {rule}): ")
    assert memory(chat) == ""


@pytest.mark.parametrize(("what", "first", "second", "rule"), SPLIT, ids=[s[0] for s in SPLIT])
def test_a_secret_split_over_two_entries_never_reaches_the_file(
    chat: Chat, what: str, first: str, second: str, rule: str
) -> None:
    sid = chat.new_session()
    assert add(chat, sid, first).startswith("Saved: added")
    result = add(chat, sid, second)
    assert result.startswith(
        f"error: not saved: blocked by the safety filter (rule {rule}, across entries): "
    )
    assert second not in result
    assert memory(chat) == f"- {first}\n"


def test_ordinary_entries_are_saved_as_written_and_a_split_token_after_them_is_not(
    chat: Chat,
) -> None:
    """Texts of the same kinds as the disguises (passwords as a topic in four languages, a
    Russian word, a git SHA, a UUID, a PNG data URL, a public key, code) are saved as written,
    one by one and together, and the whole-file check still finds the token split after them."""
    sid = chat.new_session()
    _, first, second, _ = SPLIT[0]
    for entry in [*ORDINARY, first]:
        assert add(chat, sid, entry).startswith("Saved: added"), entry
    result = add(chat, sid, second)
    assert "(rule github_token, across entries)" in result
    assert memory(chat) == "".join(f"- {entry}\n" for entry in [*ORDINARY, first])
