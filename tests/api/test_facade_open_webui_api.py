"""Open WebUI 0.12 as a front end of Eonyx, its requests replayed: the bodies under
tests/api/captured/open_webui/ are what it sends to an OpenAI-compatible connection (its
`metadata` already removed, as Open WebUI does): a streamed chat request with its advanced
params and its own built-in tools, and its background tasks (title, tags, follow-ups, search
queries, image prompt, autocomplete, emoji), each rendered from its default prompt template
(backend/open_webui/config.py) the way Open WebUI renders them: the last n messages as
"ROLE: content" lines inside <chat_history>. conversation.json holds the four turns of the
chat and the answers the model gives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.conftest import SESSION, Facade, RecordingJobs
from tests.conftest import stored
from tests.fake_llm import RecordedRequest, Reply, last_user_text, text

CAPTURED = Path(__file__).parent / "captured" / "open_webui"
TASKS = ("title", "tags", "follow_ups", "queries", "image_prompt", "autocomplete", "emoji")
WINDOW = {"title": 2}  # {{MESSAGES:END:n}} of each template: 6 but for the title's
TASK_ANSWER = '{ "ok": true }'
OPEN, CLOSE = "<chat_history>\n", "\n</chat_history>"


def captured(name: str) -> Any:
    return json.loads((CAPTURED / f"{name}.json").read_text())


TURNS: list[dict[str, str]] = captured("conversation")
ANSWERS = {turn["user"]: turn["assistant"] for turn in TURNS}


def model(request: RecordedRequest) -> Reply:
    """The model behind Eonyx: the conversation's answer to each question, JSON to a task."""
    return text(ANSWERS.get(last_user_text(request.body), TASK_ANSWER))


def history(turns: int, *, answered: bool = True) -> list[dict[str, str]]:
    """The chat's messages up to turn `turns` (its answer left out unless `answered`)."""
    messages = []
    for turn in TURNS[:turns]:
        messages += [{"role": "user", "content": turn["user"]}]
        messages += [{"role": "assistant", "content": turn["assistant"]}]
    return messages if answered else messages[:-1]


def chat_request(turn: int) -> dict[str, Any]:
    """Open WebUI's request for turn `turn`: the captured first one, with the history grown."""
    body = captured("chat")
    system = body["messages"][0]
    return {**body, "messages": [system, *history(turn, answered=False)]}


def task_request(name: str, turn: int, *, answered: bool = True) -> dict[str, Any]:
    """The captured task (after the first turn), or the same quoting the chat up to a later
    turn, as Open WebUI would send it then."""
    body = captured(name)
    if turn == 1:
        return body
    messages = history(turn, answered=answered)
    prompt = body["messages"][0]["content"]
    head, _, rest = prompt.partition(OPEN)
    _, _, tail = rest.partition(CLOSE)
    window = messages[-WINDOW.get(name, 6) :]
    quoted = "\n".join(f"{m['role'].upper()}: {m['content']}" for m in window)
    return {**body, "messages": [{"role": "user", "content": f"{head}{OPEN}{quoted}{CLOSE}{tail}"}]}


def send(facade: Facade, body: dict[str, Any]) -> tuple[str, str | None]:
    """The body posted as Open WebUI posts it: (the answer's text, the session header)."""
    response = httpx.post(
        f"{facade.url}/v1/chat/completions", json=body, headers=facade.user.headers, timeout=30
    )
    assert response.status_code == 200, response.text
    if not body.get("stream"):
        return response.json()["choices"][0]["message"]["content"], response.headers.get(SESSION)
    events = [
        json.loads(line.removeprefix("data: "))
        for line in response.text.splitlines()
        if line.startswith("data: ") and line != "data: [DONE]"
    ]
    said = "".join(c["delta"].get("content") or "" for e in events for c in e["choices"])
    return said, response.headers.get(SESSION)


@pytest.mark.parametrize("task", TASKS)
def test_each_task_is_answered_without_a_session_or_memory_writes(
    facade: Facade, task: str
) -> None:
    facade.llm.set_default(model)
    _, session_id = send(facade, chat_request(1))  # the chat the task is about
    queue = facade.rt.jobs
    assert isinstance(queue, RecordingJobs)
    before, jobs = stored(facade.rt), list(queue.sent)
    body = captured(task)
    assert send(facade, body) == (TASK_ANSWER, None)
    assert facade.llm.completions[-1].messages == body["messages"]  # as Open WebUI wrote it
    assert stored(facade.rt) == before  # no session, message or memory written
    assert queue.sent == jobs  # nor a memory extraction queued
    assert [s["id"] for s in facade.sessions()] == [session_id]


def test_a_four_turn_chat_with_its_tasks_lists_one_session(facade: Facade) -> None:
    """Open WebUI's defaults: search queries before each answer, title and tags after the
    first, follow-ups after each."""
    facade.llm.set_default(model)
    sessions: set[str | None] = set()
    for turn in range(1, len(TURNS) + 1):
        queries = task_request("queries", turn, answered=False)
        assert send(facade, queries) == (TASK_ANSWER, None)
        said, session_id = send(facade, chat_request(turn))
        assert said == TURNS[turn - 1]["assistant"]
        sessions.add(session_id)
        for task in ("title", "tags", "follow_ups") if turn == 1 else ("follow_ups",):
            assert send(facade, task_request(task, turn)) == (TASK_ANSWER, None)
    [session_id] = sessions
    assert session_id is not None
    assert [s["id"] for s in facade.sessions()] == [session_id]
    assert facade.transcript(session_id) == [(m["role"], m["content"]) for m in history(4)]


def test_a_chat_with_open_webuis_own_tools_is_accepted(facade: Facade) -> None:
    """Open WebUI sends its built-in tools (its own memory tools among them) with each
    message; they reach the model beside Eonyx's, with the chat's params and system prompt."""
    facade.llm.set_default(model)
    body = chat_request(1)
    said, session_id = send(facade, body)
    assert said == TURNS[0]["assistant"]
    assert session_id is not None
    sent = facade.llm.completions[-1].body
    offered = {tool["function"]["name"] for tool in sent["tools"]}
    assert {tool["function"]["name"] for tool in body["tools"]} <= offered
    assert {name: sent[name] for name in ("temperature", "top_p", "seed")} == {
        "temperature": 0.7,
        "top_p": 0.9,
        "seed": 42,
    }
    assert sent["messages"][0]["content"].endswith(body["messages"][0]["content"])
