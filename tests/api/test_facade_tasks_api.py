"""A front end's own tasks (Open WebUI's title, tags, follow-ups...) are not chats: answered by
the model, counted, and neither saved nor listed. The prompts are Open WebUI 0.12's, as it
sends them to /v1/chat/completions with the chat quoted in <chat_history>."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from tests.api.conftest import SESSION, Facade
from tests.fake_llm import text

HISTORY = """<chat_history>
USER: Plan a weekend in Lisbon with kids
ASSISTANT: Start with the Oceanarium, then a tram ride up to the castle.
</chat_history>"""
TITLE_TASK = f"""### Task:
Generate a concise, 3-5 word title with an emoji summarizing the chat history.
### Guidelines:
- The title should clearly represent the main theme or subject of the conversation.
### Output:
JSON format: {{ "title": "your concise title here" }}
### Chat History:
{HISTORY}"""
TAGS_TASK = f"""### Task:
Generate 1-3 broad tags categorizing the main themes of the chat history.
### Output:
JSON format: {{ "tags": ["tag1", "tag2", "tag3"] }}
### Chat History:
{HISTORY}"""


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_a_front_ends_task_is_answered_without_a_session(facade: Facade, stream: bool) -> None:
    facade.llm.script(text('{ "title": "🇵🇹 Lisbon with kids" }'))
    raw = facade.client().chat.completions.with_raw_response.create(
        model="default",
        messages=[{"role": "user", "content": TITLE_TASK}],
        stream=stream,
    )
    assert SESSION not in raw.headers
    parsed = raw.parse()
    if stream:
        said = "".join(chunk.choices[0].delta.content or "" for chunk in parsed if chunk.choices)
    else:
        said = parsed.choices[0].message.content
    assert said == '{ "title": "🇵🇹 Lisbon with kids" }'
    sent = facade.llm.requests[-1].messages
    assert sent == [{"role": "user", "content": TITLE_TASK}]  # as the front end wrote it
    assert facade.sessions() == []


def test_a_chat_and_its_tasks_list_one_session(facade: Facade) -> None:
    facade.llm.script(text("Start with the Oceanarium."))
    answer, session_id = facade.create(
        [{"role": "user", "content": "Plan a weekend in Lisbon with kids"}]
    )
    calls_before = model_calls(facade)
    facade.llm.script(text('{ "title": "Lisbon" }'), text('{ "tags": ["Travel"] }'))
    for task in (TITLE_TASK, TAGS_TASK):
        facade.client().chat.completions.create(
            model="default", messages=[{"role": "user", "content": task}]
        )
    assert [s["id"] for s in facade.sessions()] == [session_id]
    assert model_calls(facade) == calls_before + 2  # the tasks count against the user's usage


def model_calls(facade: Facade) -> int:
    response = httpx.get(facade.url + "/api/v1/me/usage?fresh=true", headers=facade.user.headers)
    assert response.status_code == 200, response.text
    return int(response.json()["tokens"]["calls"])


def test_the_setting_makes_tasks_sessions_again(make_facade: Callable[..., Facade]) -> None:
    facade = make_facade(FRONT_END_TASKS_AS_CHATS="true")
    facade.llm.script(text('{ "title": "Lisbon" }'))
    _, session_id = facade.create([{"role": "user", "content": TITLE_TASK}])
    assert [s["id"] for s in facade.sessions()] == [session_id]


def test_a_message_that_only_mentions_a_task_is_a_chat(facade: Facade) -> None:
    facade.llm.script(text("Sure."))
    _, session_id = facade.create(
        [{"role": "user", "content": "### Task: write me a poem about the sea"}]
    )
    assert [s["id"] for s in facade.sessions()] == [session_id]
