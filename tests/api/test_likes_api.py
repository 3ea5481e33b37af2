"""Remember this turn: liking a message curates its turn into MEMORY.md once, the status is
saved with the chat, failures show, unlike keeps the memory, and temporary chats and demo
mode are refused."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta

import pytest

from api.app import create_app
from api.context import runtime_of
from shared.core import job_names
from shared.index import sync
from shared.llm.tools import Tool
from shared.memory import curation
from shared.memory.curation import curate_exchange, sweep_likes
from shared.sessions import transcript
from tests.api.conftest import API, Chat, RecordingJobs, live_events
from tests.conftest import MovedClock, create_account
from tests.fake_llm import RecordedRequest, Reply, error, text, tool_call, tool_calls

SECRET = "postgres://admin:Xk29dLq7@db.internal:5432/app"  # the safety filter refuses it


class Model:
    """Chat turns answer 'Use pnpm here.'; curation requests get `answers` in order."""

    def __init__(self, chat: Chat, *answers: Reply) -> None:
        self.answers = list(answers)
        self.curations: list[RecordedRequest] = []
        chat.llm.set_default(self.reply)

    def reply(self, request: RecordedRequest) -> Reply:
        if not request.messages[0]["content"].startswith("You curate an assistant's notes"):
            return text("Use pnpm here.")
        self.curations.append(request)
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def operations(*ops: dict[str, str]) -> Reply:
    return text(json.dumps({"operations": list(ops)}))


ADD_PNPM = operations({"action": "add", "content": "This project uses pnpm"})


@pytest.fixture
def chat(make_chat: Callable[..., Chat]) -> Chat:
    chat = make_chat()
    chat.rt.jobs = RecordingJobs()
    return chat


def jobs(chat: Chat) -> RecordingJobs:
    assert isinstance(chat.rt.jobs, RecordingJobs)
    return chat.rt.jobs


def one_turn(chat: Chat, session_id: str, content: str = "Which package manager?") -> tuple:
    body = chat.turn(session_id, content=content).get_json()
    return body["user_message"]["id"], body["assistant_message"]["id"]


def like(chat: Chat, session_id: str, message_id: str, method: str = "post"):  # type: ignore[no-untyped-def]
    call = getattr(chat.client, method)
    return call(
        f"{API}/sessions/{session_id}/messages/{message_id}/like", headers=chat.user.headers
    )


def messages(chat: Chat, session_id: str) -> list[dict]:
    return chat.client.get(
        f"{API}/sessions/{session_id}/messages", headers=chat.user.headers
    ).get_json()["items"]


def run_job(chat: Chat, session_id: str, pair_id: str):  # type: ignore[no-untyped-def]
    """What the worker runs for the job the like sent."""
    return curate_exchange(chat.rt, chat.user.user_id, session_id, pair_id)


def memory_bytes(chat: Chat, kind: str) -> bytes | None:
    path = chat.rt.memory.path(kind, chat.user.user_id)
    return path.read_bytes() if path.exists() else None


def test_liking_both_messages_of_a_turn_curates_it_once(chat: Chat) -> None:
    model = Model(chat, ADD_PNPM)
    user_md_before = memory_bytes(chat, "user")
    session_id = chat.new_session()
    user_id, answer_id = one_turn(chat, session_id)

    first = like(chat, session_id, answer_id)
    assert first.status_code == 202, first.get_json()
    assert first.get_json() | {"detail": None, "changes": None} == {
        "pair_id": user_id,
        "message_ids": [user_id, answer_id],
        "status": "saving",
        "detail": None,
        "changes": None,
    }
    second = like(chat, session_id, user_id)  # the other message of the same pair
    again = like(chat, session_id, answer_id)  # and the same one again
    assert second.status_code == again.status_code == 200
    assert second.get_json()["status"] == again.get_json()["status"] == "saving"
    assert jobs(chat).of(job_names.CURATE_MEMORY) == [(chat.user.user_id, session_id, user_id)]

    with live_events(chat) as seen:
        outcome = run_job(chat, session_id, user_id)
    assert outcome.status == "saved"
    assert outcome.changes == 1
    assert chat.rt.memory.read("agent", chat.user.user_id).content == "- This project uses pnpm\n"
    assert run_job(chat, session_id, user_id).status == "skipped"  # a retried job does nothing
    assert len(model.curations) == 1
    assert memory_bytes(chat, "user") == user_md_before  # curation never writes USER.md

    assert {"type": "memory.updated", "file": "MEMORY.md", "action": "added",
            "entry": "This project uses pnpm"} in seen  # fmt: skip
    (pushed,) = [e for e in seen if e["type"] == "like.updated"]
    assert pushed["status"] == "saved"
    assert pushed["pair_id"] == user_id
    assert pushed["session_id"] == session_id

    # The curation request held the pair and the (empty) notes.
    prompt = model.curations[0].messages[1]["content"]
    assert "User: Which package manager?\n\nAssistant: Use pnpm here." in prompt
    assert "<notes>\n(empty)\n</notes>" in prompt

    # Liking a saved turn again starts nothing.
    assert like(chat, session_id, user_id).get_json()["status"] == "saved"
    assert len(jobs(chat).of(job_names.CURATE_MEMORY)) == 1


def test_the_like_is_published_when_made(chat: Chat) -> None:
    Model(chat, ADD_PNPM)
    session_id = chat.new_session()
    user_id, answer_id = one_turn(chat, session_id)
    with live_events(chat) as seen:
        like(chat, session_id, user_id)
    assert [(e["type"], e["status"], e["message_ids"]) for e in seen] == [
        ("like.updated", "saving", [user_id, answer_id])
    ]


def test_the_like_status_is_listed_with_the_messages_after_a_reload(chat: Chat) -> None:
    Model(chat, ADD_PNPM)
    session_id = chat.new_session()
    first_user, first_answer = one_turn(chat, session_id, "hello")
    user_id, answer_id = one_turn(chat, session_id)
    like(chat, session_id, answer_id)
    listed = {m["id"]: m.get("like") for m in messages(chat, session_id)}
    assert listed[user_id] == listed[answer_id] == {"status": "saving", "pair_id": user_id}
    assert listed[first_user] is None
    assert listed[first_answer] is None

    run_job(chat, session_id, user_id)
    # A reload, by another API process, with the index dropped: the status is in the file.
    with chat.rt.db.session() as db:
        sync.drop(db)
    other = create_app(chat.rt.settings, jobs_queue=RecordingJobs())
    try:
        items = (
            other.test_client()
            .get(f"{API}/sessions/{session_id}/messages", headers=chat.user.headers)
            .get_json()["items"]
        )
    finally:
        runtime_of(other).close()
    listed = {m["id"]: m.get("like") for m in items}
    assert listed[user_id] == listed[answer_id] == {"status": "saved", "pair_id": user_id}
    assert listed[first_user] is None
    assert listed[first_answer] is None
    item = chat.client.get(f"{API}/sessions/{session_id}", headers=chat.user.headers).get_json()
    assert item["message_count"] == 4


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        # what the like shows its user: the kind of failure, not the provider's words
        (error(500, "down at 10.0.3.7"), "model failed: model offering 'default' is unavailable"),
        (text("Sure, I will remember pnpm."), "not a JSON list"),
        (operations({"action": "remove", "old_text": "yarn"}), "no entry contains"),
        (operations({"action": "add", "content": f"Deploys to {SECRET}"}), "safety filter"),
        (operations({"action": "add", "content": "x" * 2300}), "over its limit"),
    ],
    ids=["model-error", "prose", "bad-operation", "secret", "over-cap"],
)
def test_a_failing_curation_shows_failed_and_changes_nothing(
    chat: Chat, answer: Reply, why: str
) -> None:
    chat.rt.memory.save("agent", chat.user.user_id, "- Run tests with make test\n")
    before = memory_bytes(chat, "agent")
    Model(chat, answer, answer, ADD_PNPM)
    session_id = chat.new_session()
    user_id, answer_id = one_turn(chat, session_id)
    like(chat, session_id, user_id)

    with live_events(chat) as seen:
        outcome = run_job(chat, session_id, user_id)

    assert outcome.status == "failed", outcome
    assert why in outcome.detail, outcome
    assert memory_bytes(chat, "agent") == before
    listed = {m["id"]: m.get("like") for m in messages(chat, session_id)}
    assert listed[answer_id]["status"] == "failed"
    assert why in listed[answer_id]["detail"]
    assert "10.0.3.7" not in listed[answer_id]["detail"]
    assert [e["status"] for e in seen if e["type"] == "like.updated"] == ["failed"]
    assert not [e for e in seen if e["type"] == "memory.updated"]
    assert run_job(chat, session_id, user_id).status == "skipped"  # retried job: nothing

    # Liking a failed turn again tries again.
    retry = like(chat, session_id, answer_id)
    assert retry.status_code == 202
    assert retry.get_json()["status"] == "saving"
    assert len(jobs(chat).of(job_names.CURATE_MEMORY)) == 2


def test_nothing_worth_keeping_is_saved_without_a_change(chat: Chat) -> None:
    Model(chat, operations())
    session_id = chat.new_session()
    user_id, _ = one_turn(chat, session_id)
    like(chat, session_id, user_id)
    outcome = run_job(chat, session_id, user_id)
    assert outcome.status == "unchanged"
    assert messages(chat, session_id)[0]["like"]["status"] == "saved"
    assert memory_bytes(chat, "agent") is None


def test_an_add_already_in_memory_is_not_a_failure(chat: Chat) -> None:
    chat.rt.memory.save("agent", chat.user.user_id, "- This project uses pnpm\n")
    before = memory_bytes(chat, "agent")
    Model(chat, ADD_PNPM)
    session_id = chat.new_session()
    user_id, _ = one_turn(chat, session_id)
    like(chat, session_id, user_id)
    assert run_job(chat, session_id, user_id).status == "unchanged"
    assert memory_bytes(chat, "agent") == before


def test_modify_and_remove_apply_all_or_nothing(chat: Chat) -> None:
    chat.rt.memory.save("agent", chat.user.user_id, "- Uses yarn\n- Node 18\n")
    Model(
        chat,
        operations(
            {"action": "modify", "old_text": "yarn", "content": "This project uses pnpm"},
            {"action": "remove", "old_text": "Node 18"},
            {"action": "add", "content": "Node 22 is required"},
        ),
    )
    session_id = chat.new_session()
    user_id, _ = one_turn(chat, session_id)
    like(chat, session_id, user_id)
    assert run_job(chat, session_id, user_id).changes == 3
    assert chat.rt.memory.read("agent", chat.user.user_id).content == (
        "- This project uses pnpm\n- Node 22 is required\n"
    )


def test_unlike_removes_the_like_and_keeps_the_memory(chat: Chat) -> None:
    Model(chat, ADD_PNPM)
    session_id = chat.new_session()
    user_id, answer_id = one_turn(chat, session_id)
    like(chat, session_id, user_id)
    run_job(chat, session_id, user_id)
    saved = memory_bytes(chat, "agent")

    with live_events(chat) as seen:
        response = like(chat, session_id, answer_id, "delete")
    assert response.status_code == 204
    assert all("like" not in m for m in messages(chat, session_id))
    assert memory_bytes(chat, "agent") == saved
    assert [(e["type"], e["status"]) for e in seen] == [("like.updated", None)]
    assert like(chat, session_id, answer_id, "delete").status_code == 204  # idempotent


def test_unliking_before_the_job_runs_cancels_the_curation(chat: Chat) -> None:
    model = Model(chat, ADD_PNPM)
    session_id = chat.new_session()
    user_id, _ = one_turn(chat, session_id)
    like(chat, session_id, user_id)
    like(chat, session_id, user_id, "delete")
    assert run_job(chat, session_id, user_id).status == "skipped"
    assert model.curations == []
    assert memory_bytes(chat, "agent") is None


def test_the_sweep_resends_a_lost_curation(chat: Chat) -> None:
    Model(chat, ADD_PNPM)
    session_id = chat.new_session()
    user_id, _ = one_turn(chat, session_id)
    like(chat, session_id, user_id)
    sweeper = RecordingJobs()
    assert sweep_likes(chat.rt, sweeper) == 0  # just liked: its job is on its way
    chat.rt.clock = MovedClock(curation.LOST_AFTER + timedelta(seconds=1))
    assert sweep_likes(chat.rt, sweeper) == 1
    assert sweeper.of(job_names.CURATE_MEMORY) == [(chat.user.user_id, session_id, user_id)]
    run_job(chat, session_id, user_id)
    sweeper.sent.clear()
    assert sweep_likes(chat.rt, sweeper) == 0


def test_the_sweep_resends_a_curation_lost_with_its_worker_once(chat: Chat) -> None:
    """A worker killed mid-job leaves its lock behind: it lapses in seconds, not minutes, and
    the sweep then sends the job again (once, however often it runs meanwhile)."""
    Model(chat, ADD_PNPM)
    session_id = chat.new_session()
    user_id, _ = one_turn(chat, session_id)
    like(chat, session_id, user_id)
    chat.rt.clock = MovedClock(curation.LOST_AFTER + timedelta(seconds=1))
    sweeper = RecordingJobs()
    lock = f"curate:{session_id}:{user_id}"
    assert curation.JOB_LOCK_TTL <= 30
    with chat.rt.locks.hold(lock, ttl=curation.JOB_LOCK_TTL, keepalive=True):
        assert sweep_likes(chat.rt, sweeper) == 0  # running
    assert sweep_likes(chat.rt, sweeper) == 1
    assert sweep_likes(chat.rt, sweeper) == 0
    assert sweeper.of(job_names.CURATE_MEMORY) == [(chat.user.user_id, session_id, user_id)]
    run_job(chat, session_id, user_id)


@pytest.mark.parametrize(
    ("env", "temporary", "status", "code"),
    [
        ({}, True, 409, "temporary_chat"),
        ({"DEMO_MODE": "true"}, False, 403, "demo_mode"),
        ({"AGENT_MEMORY_ENABLED": "false"}, False, 409, "agent_memory_disabled"),
    ],
    ids=["temporary", "demo", "memory-off"],
)
def test_likes_are_refused_where_nothing_is_remembered(
    make_chat: Callable[..., Chat], env: dict, temporary: bool, status: int, code: str
) -> None:
    chat = make_chat(**env)
    chat.rt.jobs = RecordingJobs()
    model = Model(chat, ADD_PNPM)
    chat.rt.memory.save("agent", chat.user.user_id, "- Run tests with make test\n")
    before = memory_bytes(chat, "agent"), memory_bytes(chat, "user")
    session_id = chat.client.post(
        f"{API}/sessions", json={"temporary": temporary}, headers=chat.user.headers
    ).get_json()["id"]
    user_id, answer_id = one_turn(chat, session_id)

    for message_id in (user_id, answer_id):
        response = like(chat, session_id, message_id)
        assert response.status_code == status
        assert response.get_json()["error"]["code"] == code
    assert jobs(chat).sent == []
    assert model.curations == []
    assert all("like" not in m for m in messages(chat, session_id))
    assert (memory_bytes(chat, "agent"), memory_bytes(chat, "user")) == before


def test_unknown_messages_tool_messages_and_other_users_sessions(chat: Chat) -> None:
    chat.rt.tools.register(Tool("clock", "Tell the time", {"type": "object"}, lambda c, a: "12:00"))
    chat.llm.script(tool_calls(tool_call("clock", {})), text("It is noon."))
    session_id = chat.new_session()
    chat.turn(session_id, content="What time is it?")
    items = messages(chat, session_id)
    call, result = items[1], items[2]
    assert (call["role"], result["role"]) == ("assistant", "tool")

    assert like(chat, session_id, "0123456789abcdef").status_code == 404
    assert like(chat, session_id, result["id"]).status_code == 400
    assert like(chat, session_id, call["id"]).status_code == 400
    assert like(chat, session_id, "0123456789abcdef", "delete").status_code == 404

    mallory = create_account(chat.rt, "mallory")
    response = chat.client.post(
        f"{API}/sessions/{session_id}/messages/{items[0]['id']}/like", headers=mallory.headers
    )
    assert response.status_code == 404
    assert jobs(chat).sent == []


def test_a_turn_still_waiting_for_its_answer_cannot_be_liked(chat: Chat) -> None:
    chat.llm.script(error(500, "down"), error(500, "down"))
    session_id = chat.new_session()
    assert chat.turn(session_id, content="hello").status_code == 502
    (pending,) = messages(chat, session_id)
    response = like(chat, session_id, pending["id"])
    assert response.status_code == 409
    assert response.get_json()["error"]["code"] == "turn_unanswered"


def test_a_regenerated_answers_like_stays_in_the_file_but_leaves_the_conversation(
    chat: Chat,
) -> None:
    Model(chat, ADD_PNPM)
    session_id = chat.new_session()
    user_id, answer_id = one_turn(chat, session_id)
    assert like(chat, session_id, answer_id).status_code == 202
    assert run_job(chat, session_id, user_id).status == "saved"
    regenerated = chat.turn(session_id, regenerate=True)
    assert regenerated.status_code == 200, regenerated.get_json()
    new_answer = regenerated.get_json()["assistant_message"]["id"]

    listed = messages(chat, session_id)
    assert [m["id"] for m in listed] == [user_id, new_answer]
    assert [m.get("like") for m in listed] == [None, None]  # no star on the question either
    state, _ = chat.rt.store.load(chat.user.user_id, session_id)
    kept = transcript.likes_of(state)[user_id]  # the file is lossless
    assert (kept["status"], kept["message_ids"]) == ("saved", [user_id, answer_id])
    assert like(chat, session_id, new_answer, "delete").status_code == 204  # nothing to take back
    state, _ = chat.rt.store.load(chat.user.user_id, session_id)
    assert transcript.likes_of(state)[user_id]["message_ids"] == [user_id, answer_id]

    # The new answer is liked afresh (it was "already liked" by the old one's like).
    again = like(chat, session_id, new_answer)
    assert again.status_code == 202, again.get_json()
    assert again.get_json()["message_ids"] == [user_id, new_answer]
    assert [m.get("like", {}).get("status") for m in messages(chat, session_id)] == [
        "saving",
        "saving",
    ]


@pytest.mark.parametrize("how", ["regenerate", "edit"])
def test_a_like_replaced_before_its_job_runs_is_not_remembered_nor_shown(
    chat: Chat, how: str
) -> None:
    model = Model(chat, ADD_PNPM)
    session_id = chat.new_session()
    user_id, answer_id = one_turn(chat, session_id)
    assert like(chat, session_id, answer_id).status_code == 202
    body = {"regenerate": True} if how == "regenerate" else {"content": "npm?", "edit": user_id}
    assert chat.turn(session_id, **body).status_code == 200

    with live_events(chat) as seen:
        outcome = run_job(chat, session_id, user_id)

    assert outcome.status == "failed"
    assert "replaced" in outcome.detail
    assert model.curations == []  # the model was not asked to remember an answer now gone
    assert chat.rt.memory.read("agent", chat.user.user_id).content == ""
    assert [m.get("like") for m in messages(chat, session_id)] == [None, None]
    assert not [event for event in seen if event.get("type") == "like.updated"]
    chat.rt.clock = MovedClock(curation.LOST_AFTER + timedelta(seconds=1))
    assert sweep_likes(chat.rt, RecordingJobs()) == 0  # ended: not sent again as lost
