"""The turn loop without HTTP: the runtime's model client is a Protocol, so an in-process fake
stands in for the model (the loopback server tests the real client and the whole path)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest

from shared.accounts.people import Principal
from shared.chat import turns
from shared.llm.client import Messages, ModelClient, Offering
from shared.llm.tools import Tool, ToolContext
from shared.llm.wire import Completion, StreamEvent, ToolCall
from shared.runtime import Runtime
from shared.sessions import service as session_service
from tests.conftest import create_account, make_settings


class ScriptedModel:
    """Answers from a script, one completion per call, and keeps what it was sent."""

    max_wait = 0.0

    def __init__(self, *answers: Completion) -> None:
        self.answers = list(answers)
        self.calls: list[tuple[str, list[dict[str, Any]], bool]] = []

    def complete(
        self,
        offering: Offering,
        messages: Messages,
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        options: Mapping[str, Any] | None = None,
        user_id: str | None = None,
    ) -> Completion:
        sent = json.loads(orjson.dumps(list(messages)))  # some come encoded (orjson.Fragment)
        self.calls.append((offering.id, sent, bool(tools)))
        return self.answers.pop(0)

    def stream(
        self,
        offering: Offering,
        messages: Messages,
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        include_usage: bool = False,
        options: Mapping[str, Any] | None = None,
        user_id: str | None = None,
    ) -> Iterator[StreamEvent]:
        completion = self.complete(offering, messages, tools=tools)
        for word in (completion.content or "").split(" "):
            yield StreamEvent(text=word + " ")
        yield StreamEvent(completion=completion)

    def close(self) -> None:
        pass


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    settings = make_settings(
        tmp_path / "data", EONYX_LLM_BASE_URL="http://model.invalid/v1", EONYX_LLM_MODEL="m"
    )
    with Runtime.build(settings) as runtime:
        runtime.db.migrate()
        yield runtime


def person(rt: Runtime, username: str) -> Principal:
    account = create_account(rt, username)
    return Principal(account.user_id, username, False, "web", "")


def use_model(rt: Runtime, model: ScriptedModel) -> ScriptedModel:
    fake: ModelClient = model  # the Protocol is all the turn loop needs
    rt.llm.close()
    rt.llm = fake
    return model


def test_a_tool_round_then_an_answer_is_saved_in_order(rt: Runtime) -> None:
    seen: list[str] = []
    rt.tools.register(
        Tool(
            name="lookup",
            description="Look a word up.",
            parameters={"type": "object", "properties": {"word": {"type": "string"}}},
            handler=lambda _context, args: seen.append(args["word"]) or "a small bird",
        )
    )
    call = ToolCall("call_1", "lookup", json.dumps({"word": "wren"}))
    model = use_model(
        rt, ScriptedModel(Completion(None, [call]), Completion("A wren is a small bird."))
    )
    principal = person(rt, "ada")
    session_id = session_service.create_session(rt, principal, rt.memory).id

    result = turns.run_turn(rt, principal, session_id, turns.TurnRequest(content="wren?"))

    assert seen == ["wren"]
    assert result.assistant_message["content"] == "A wren is a small bird."
    assert [step["role"] for step in result.steps] == ["assistant", "tool"]
    state, _ = rt.store.load(principal.user_id, session_id)
    assert [(m["role"], m["content"]) for m in state.messages] == [
        ("user", "wren?"),
        ("assistant", None),
        ("tool", "a small bird"),
        ("assistant", "A wren is a small bird."),
    ]
    # The second round was sent the tool's result after the call that asked for it.
    _, second, _ = model.calls[1]
    assert [m["role"] for m in second[-2:]] == ["assistant", "tool"]


def test_a_streamed_turn_yields_text_then_the_result(rt: Runtime) -> None:
    use_model(rt, ScriptedModel(Completion("one two three")))
    principal = person(rt, "bo")
    session_id = session_service.create_session(rt, principal, rt.memory).id

    items = list(
        turns.iter_turn(rt, principal, session_id, turns.TurnRequest(content="count"), stream=True)
    )

    *deltas, result = items
    assert "".join(d.text for d in deltas).split() == ["one", "two", "three"]
    assert isinstance(result, turns.TurnResult)
    assert result.assistant_message["content"] == "one two three"


def test_tools_are_offered_with_the_turns_context(rt: Runtime) -> None:
    contexts: list[ToolContext] = []
    rt.tools.register(
        Tool(
            name="whoami",
            description="Who is asking.",
            parameters={"type": "object", "properties": {}},
            handler=lambda context, _args: contexts.append(context) or context.principal.username,
        )
    )
    use_model(
        rt,
        ScriptedModel(Completion(None, [ToolCall("c", "whoami", "{}")]), Completion("You are cy.")),
    )
    principal = person(rt, "cy")
    session_id = session_service.create_session(rt, principal, rt.memory).id

    turns.run_turn(rt, principal, session_id, turns.TurnRequest(content="who am I?"))

    (context,) = contexts
    assert (context.principal.user_id, context.session_id) == (principal.user_id, session_id)
