"""Search through the API: paged and filtered like the list, and kept current by turns."""

from __future__ import annotations

from flask.testing import FlaskClient

from shared.runtime import Runtime
from shared.sessions import lifecycle
from shared.sessions import service as session_service
from tests.api.conftest import API, Chat
from tests.conftest import Account
from tests.fake_llm import text, tool_call, tool_calls
from tests.shared.test_search import chat_in, me


def test_search_pages_and_filters_like_the_list(
    rt: Runtime, alice: Account, client: FlaskClient
) -> None:
    ids = [chat_in(rt, alice, f"koala {n}", "eucalyptus " * (n + 1)) for n in range(5)]
    session_service.update_session(rt, me(alice), ids[0], {"archived": True})
    lifecycle.delete_session(rt, me(alice), ids[1])
    seen, cursor = [], None
    while True:
        query = "?q=eucalyptus&limit=2" + (f"&cursor={cursor}" if cursor else "")
        body = client.get(f"{API}/sessions{query}", headers=alice.headers).get_json()
        seen += [item["id"] for item in body["items"]]
        assert all(item["snippet"]["highlights"] for item in body["items"])
        cursor = body["next_cursor"]
        if not cursor:
            break
    assert sorted(seen) == sorted(ids[2:])
    assert len(seen) == 3
    archived = client.get(f"{API}/sessions?q=koala&archived=true", headers=alice.headers)
    assert [item["id"] for item in archived.get_json()["items"]] == [ids[0]]


def test_a_turns_tool_results_are_found_and_its_system_prompt_is_not(chat: Chat) -> None:
    from shared.llm.tools import Tool

    chat.rt.tools.register(
        Tool("weather", "Weather", {"type": "object"}, lambda c, a: "drizzle over Reykjavik")
    )
    session_id = chat.new_session()
    chat.llm.script(tool_calls(tool_call("weather", {})), text("Bring a coat."))
    context = [{"path": "AGENTS.md", "content": "Always mention the quokka."}]
    response = chat.turn(session_id, content="Weather?", project_context=context)
    assert response.status_code == 200, response.get_json()
    assert "quokka" in chat.llm.requests[0].messages[0]["content"]  # it was in the prompt

    def hits(query: str) -> list[str]:
        url = f"{API}/sessions?q={query}"
        body = chat.client.get(url, headers=chat.user.headers).get_json()
        return [(item["id"], item["match"]["role"]) for item in body["items"]]

    assert hits("reykjavik") == [(session_id, "tool")]
    assert hits("coat") == [(session_id, "assistant")]
    assert hits("quokka") == []
    assert hits("eonyx") == []  # the identity, first block of every system prompt
