"""Sessions that survive a client's edits to its own history (issue 41): the facade knows a
conversation by Eonyx's own last answer, not by the questions before it, which clients such
as aider resend changed. Driven by the `openai` package against the app on loopback; the
model is tests/fake_llm.py."""

from __future__ import annotations

from typing import Any

import pytest

from shared.integrations import api_head, bindings
from shared.integrations import facade as facade_module
from tests.api.conftest import SESSION, Facade
from tests.fake_llm import tool_call, tool_calls

AIDER = {"role": "system", "content": "Act as an expert software developer."}
REMINDER = "\n\nReply in English."


def user(content: str) -> dict[str, Any]:
    return {"role": "user", "content": content}


def assistant(content: str) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


def test_an_aider_conversation_keeps_one_session(facade: Facade) -> None:
    """Each request appends a reminder to the current question; the next one resends that
    question without it."""
    facade.llm.script("A1.", "A2.", "A3.")
    questions, history, sessions = ["Q1", "Q2", "Q3"], [AIDER], set()
    for question, answer in zip(questions, ["A1.", "A2.", "A3."], strict=True):
        text, session_id = facade.create([*history, user(question + REMINDER)])
        assert text == answer
        sessions.add(session_id)
        history += [user(question), assistant(answer)]
    [session_id] = sessions
    assert len(facade.sessions()) == 1
    assert facade.transcript(session_id) == [
        ("user", "Q1" + REMINDER),
        ("assistant", "A1."),
        ("user", "Q2" + REMINDER),
        ("assistant", "A2."),
        ("user", "Q3" + REMINDER),
        ("assistant", "A3."),
    ]


def test_two_conversations_with_the_same_first_question_stay_apart(facade: Facade) -> None:
    facade.llm.script("Answer one.", "Answer two.", "More one.", "More two.")
    _, first = facade.create([user("Hi")])
    _, second = facade.create([user("Hi")])
    assert first != second
    assert facade.create([user("Hi"), assistant("Answer one."), user("More")]) == (
        "More one.",
        first,
    )
    assert facade.create([user("Hi"), assistant("Answer two."), user("More")]) == (
        "More two.",
        second,
    )
    assert len(facade.sessions()) == 2


def test_answers_that_read_the_same_keep_their_own_sessions(facade: Facade) -> None:
    facade.llm.script("OK.", "OK.", "X it is.", "Y it is.")
    _, first = facade.create([user("Remember X.")])
    _, second = facade.create([user("Remember Y.")])
    assert facade.create([user("Remember X."), assistant("OK."), user("Which?")])[1] == first
    assert facade.create([user("Remember Y."), assistant("OK."), user("Which?")])[1] == second


def test_an_edited_answer_starts_a_new_session(facade: Facade) -> None:
    facade.llm.script("A1.", "B.")
    _, session_id = facade.create([user("Q1")])
    _, other = facade.create([user("Q1"), assistant("A1, edited."), user("Q2")])
    assert other != session_id
    assert [content for _, content in facade.transcript(other)] == [
        "Q1",
        "A1, edited.",
        "Q2",
        "B.",
    ]
    assert len(facade.transcript(session_id)) == 2  # the first is as it was


def test_a_session_saved_with_the_older_head_goes_on(facade: Facade) -> None:
    """Sessions saved before answers were hashed alone hold the key of the exchange."""
    facade.llm.script("A1.", "A2.")
    _, session_id = facade.create([user("Q1")])
    answer, asked = assistant("A1."), [user("Q1")]
    path = facade.rt.store.path(facade.user.user_id, session_id)
    saved = path.read_text()
    assert facade_module.head_key(answer) in saved
    path.write_text(
        saved.replace(facade_module.head_key(answer), facade_module.exchange_key(asked, answer))
    )
    user_id = facade.user.user_id
    state, _ = facade.rt.store.load(user_id, session_id)
    assert api_head.head(state) == facade_module.exchange_key(asked, answer)
    bindings.unbind(facade.rt, user_id, facade_module.CHANNEL, facade_module.head_key(answer))
    assert facade.create([*asked, answer, user("Q2")]) == ("A2.", session_id)


def test_a_trailing_system_message_is_this_turns_instruction(facade: Facade) -> None:
    """aider puts its reminder in a system message after the question, as OpenAI allows."""
    facade.llm.script("A1.")
    reminder = {"role": "system", "content": "Reply in English."}
    answer, session_id = facade.create([AIDER, user("Q1"), reminder])
    assert answer == "A1."
    prompt = facade.llm.completions[-1].messages[0]["content"]
    assert prompt.endswith(f"{AIDER['content']}\n\nReply in English.")
    assert facade.transcript(session_id) == [("user", "Q1"), ("assistant", "A1.")]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_an_answer_that_spoke_before_a_memory_write_continues_its_session(
    facade: Facade, stream: bool
) -> None:
    """The model says something, writes to memory, then answers: the client is shown both
    rounds' text (a stream has shown the first before the tool ran), and that is what it
    sends back."""
    facade.llm.script(
        tool_calls(
            tool_call("memory", {"action": "add", "content": "Prefers tea"}),
            content="Noting that.",
        ),
        "You prefer tea.",
        "Green, then.",
    )
    question = user("I prefer tea")
    raw = facade.client().chat.completions.with_raw_response.create(
        model="default", messages=[question], stream=stream
    )
    parsed = raw.parse()
    if stream:
        told = "".join(c.choices[0].delta.content or "" for c in parsed if c.choices)
    else:
        told = parsed.choices[0].message.content or ""
    assert told == "Noting that.\n\nYou prefer tea."
    answer, session_id = facade.create([question, assistant(told), user("Which tea?")])
    assert answer == "Green, then."
    assert session_id == raw.headers[SESSION]
    assert len(facade.sessions()) == 1
