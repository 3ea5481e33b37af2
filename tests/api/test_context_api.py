"""What the model sees: prompt order, AGENTS.md, overrides, compaction and the context gauge."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from shared.chat.compaction import SUMMARIZER_INSTRUCTIONS, estimate_tokens
from shared.chat.context import precompute_summary
from shared.chat.prompt import SUMMARY_HEADING
from shared.core import job_names
from tests.api.conftest import API, Chat
from tests.fake_llm import FakeLLM, RecordedRequest, Reply, text

WINDOW = 1000


def is_summary_request(request: RecordedRequest) -> bool:
    return request.messages[0]["content"] == SUMMARIZER_INSTRUCTIONS


def answer_briefly(llm: FakeLLM) -> list[RecordedRequest]:
    """Chat turns answer 'ok'; summary requests answer SUMMARY-<n>. Returns the summary log."""
    summaries: list[RecordedRequest] = []

    def reply(request: RecordedRequest) -> Reply:
        if is_summary_request(request):
            summaries.append(request)
            return text(f"SUMMARY-{len(summaries)}")
        return text("ok")

    llm.set_default(reply)
    return summaries


def context_of(chat: Chat, session_id: str) -> dict:
    return chat.client.get(
        f"{API}/sessions/{session_id}/context", headers=chat.user.headers
    ).get_json()


def user_message(n: int) -> str:
    return f"turn {n}: " + "x" * 400


def fill_to(chat: Chat, session_id: str, percent: float) -> int:
    """Short turns until the history takes `percent` of the window; how many were sent."""
    n = 0
    while context_of(chat, session_id)["percent"] < percent:
        n += 1
        chat.turn(session_id, content=user_message(n))
        assert n < 20
    return n


def test_compaction_starts_at_80_percent_keeps_3_turns_and_the_jsonl_keeps_all(
    make_chat: Callable[..., Chat],
) -> None:
    chat = make_chat(EONYX_LLM_CONTEXT_WINDOW=str(WINDOW))
    summaries = answer_briefly(chat.llm)
    session_id = chat.new_session()

    n = 0
    while not summaries:
        n += 1
        before = context_of(chat, session_id)
        expected = before["tokens"] + estimate_tokens(user_message(n))
        response = chat.turn(session_id, content=user_message(n))
        assert response.status_code == 200, response.get_json()
        if summaries:
            assert expected >= 0.8 * WINDOW  # it compacted only once 80% was reached...
        else:
            assert expected < 0.8 * WINDOW  # ...and never before
        assert n < 20
    assert n > 3

    # The summarizer got the oldest turns; the chat model got the summary and 3 user turns.
    assert "turn 1:" in summaries[0].messages[1]["content"]
    chat_request = chat.llm.requests[-1]
    system = chat_request.messages[0]["content"]
    assert system.endswith(f"{SUMMARY_HEADING}\n\nSUMMARY-1")
    users = [m["content"] for m in chat_request.messages if m["role"] == "user"]
    assert users == [user_message(k) for k in (n - 2, n - 1, n)]

    # The file on disk still holds every message.
    transcript = chat.transcript(session_id)
    assert [c for r, c in transcript if r == "user"] == [user_message(k) for k in range(1, n + 1)]
    assert len(transcript) == 2 * n

    # The gauge shows the summary and what the model now sees.
    context = context_of(chat, session_id)
    assert context["summary"]["summary"] == "SUMMARY-1"
    assert context["window"] == WINDOW
    assert context["percent"] < 80
    assert SUMMARY_HEADING in context["system_prompt"]

    # Keep talking: the next compaction folds the previous summary into the new one.
    while len(summaries) < 2:
        n += 1
        chat.turn(session_id, content=user_message(n))
        assert n < 40
    assert "SUMMARY-1" in summaries[1].messages[1]["content"]
    assert "turn 1:" not in summaries[1].messages[1]["content"]
    assert context_of(chat, session_id)["summary"]["summary"] == "SUMMARY-2"


def test_without_a_window_nothing_is_summarized(chat: Chat) -> None:
    summaries = answer_briefly(chat.llm)
    session_id = chat.new_session()
    for n in range(1, 8):
        chat.turn(session_id, content=user_message(n) * 5)
    assert summaries == []
    context = context_of(chat, session_id)
    assert context["window"] is None
    assert context["percent"] is None
    assert context["summary"] is None
    assert sum(m["role"] == "user" for m in chat.llm.requests[-1].messages) == 7


def queued_jobs(chat: Chat, session_id: str) -> list[str]:
    """Names of the jobs for a session waiting in the Redis queue (no worker runs here)."""
    names = []
    for raw in chat.rt.redis.lrange("eonyx", 0, -1):
        message = json.loads(raw)
        args = json.loads(base64.b64decode(message["body"]))[0]
        if session_id in args:
            names.append(message["headers"]["task"])
    return names


def test_a_worker_precomputed_summary_spares_the_next_turn_the_wait(
    make_chat: Callable[..., Chat],
) -> None:
    chat = make_chat(EONYX_LLM_CONTEXT_WINDOW="2000")  # the kept turns fit well under 80%
    summaries = answer_briefly(chat.llm)
    session_id = chat.new_session()
    n = fill_to(chat, session_id, 50)
    assert job_names.PRECOMPUTE_SUMMARY not in queued_jobs(chat, session_id)
    # A long answer ends this turn above 80%: the turn enqueues the summary job.
    chat.llm.script(text("y" * 2800))
    chat.turn(session_id, content=user_message(n + 1))
    assert summaries == []
    assert context_of(chat, session_id)["percent"] >= 80
    assert job_names.PRECOMPUTE_SUMMARY in queued_jobs(chat, session_id)

    # What the job runs in a worker:
    assert precompute_summary(chat.rt, chat.user.user_id, session_id) is True
    assert len(summaries) == 1
    assert precompute_summary(chat.rt, chat.user.user_id, session_id) is False  # idempotent

    chat.turn(session_id, content="short question")
    assert len(summaries) == 1  # no inline summarization for this turn
    assert chat.llm.requests[-1].messages[0]["content"].endswith("SUMMARY-1")


def test_an_answer_past_the_window_is_compacted_before_the_turn_ends(
    make_chat: Callable[..., Chat],
) -> None:
    """Seen before: the web showed {ctx 101%} (GET /context said 101.2 %) until a worker got
    to the summary. The turn that goes past the window compacts before it ends, and reports
    the figure GET /context gives."""
    chat = make_chat(EONYX_LLM_CONTEXT_WINDOW="2000")
    summaries = answer_briefly(chat.llm)
    session_id = chat.new_session()
    n = fill_to(chat, session_id, 60)
    assert summaries == []
    chat.llm.script(text("y" * 3200))  # about 800 tokens: past the 2,000-token window
    body = chat.turn(session_id, content=user_message(n + 1)).get_json()
    assert len(summaries) == 1  # before the turn ended
    assert body["context"]["percent"] < 100
    now = context_of(chat, session_id)
    assert body["context"] == {key: now[key] for key in ("tokens", "window", "percent")}
    assert now["summary"]["summary"] == "SUMMARY-1"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "projects" / "shop"
    (root / "services" / "billing").mkdir(parents=True)
    (root / "eonyx.json").write_text(json.dumps({"name": "shop"}))
    (root / "AGENTS.md").write_text("Use Go 1.26.")
    (root / "services" / "billing" / "AGENTS.md").write_text("Billing uses cents.")
    (root.parent / "AGENTS.md").write_text("Above the project root: never attached.")
    return root


def test_prompt_order_with_server_side_agents_files(
    make_chat: Callable[..., Chat], project: Path
) -> None:
    chat = make_chat(PROJECTS_DIR=str(project.parent))
    session_id = chat.new_session()
    chat.turn(session_id, content="hi", cwd="shop/services/billing")
    system = chat.llm.requests[-1].messages[0]["content"]
    identity_at = system.index("Eonyx")
    outer = system.index("# Project context: AGENTS.md\n\nUse Go 1.26.")
    inner = system.index("# Project context: services/billing/AGENTS.md\n\nBilling uses cents.")
    assert identity_at < outer < inner
    assert "never attached" not in system
    assert context_of(chat, session_id)["system_prompt"] == system


def test_client_sent_project_context_is_attached_in_order(chat: Chat) -> None:
    session_id = chat.new_session()
    files = [
        {"path": "AGENTS.md", "content": "root rules"},
        {"path": "app/AGENTS.md", "content": "app rules"},
    ]
    chat.turn(session_id, content="hi", project_context=files)
    system = chat.llm.requests[-1].messages[0]["content"]
    assert system.index("# Project context: AGENTS.md\n\nroot rules") < system.index(
        "# Project context: app/AGENTS.md\n\napp rules"
    )


def test_override_precedence(make_chat: Callable[..., Chat], project: Path) -> None:
    (project / "eonyx.json").write_text(json.dumps({"system_prompt": "You are the shop bot."}))
    chat = make_chat(PROJECTS_DIR=str(project.parent))
    session_id = chat.new_session()

    chat.turn(session_id, content="a", cwd="shop/services/billing")
    system = chat.llm.requests[-1].messages[0]["content"]
    assert system == "You are the shop bot."  # eonyx.json beats generation; no AGENTS.md

    chat.turn(session_id, content="b", cwd="shop", system_prompt="You are terse.")
    assert chat.llm.requests[-1].messages[0]["content"] == "You are terse."  # request wins

    chat.turn(
        session_id,
        content="c",
        system_prompt="Plain override.",
        project_context=[{"path": "AGENTS.md", "content": "ignored"}],
    )
    assert chat.llm.requests[-1].messages[0]["content"] == "Plain override."


@pytest.mark.parametrize("cwd", ["../outside", "/etc", "shop/missing", "escape"])
def test_cwd_outside_projects_dir_is_refused(
    make_chat: Callable[..., Chat], project: Path, tmp_path: Path, cwd: str
) -> None:
    (project.parent / "escape").symlink_to(tmp_path)
    chat = make_chat(PROJECTS_DIR=str(project.parent))
    session_id = chat.new_session()
    response = chat.turn(session_id, content="hi", cwd=cwd)
    assert response.status_code == 400
    assert response.get_json()["error"]["message"]
    assert chat.llm.requests == []
    assert chat.transcript(session_id) == []
